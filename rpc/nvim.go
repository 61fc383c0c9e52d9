package rpc

import (
	"github.com/neovim/go-client/nvim"

	"github.com/flemma-dev/flemma/cycle"
	edtools "github.com/flemma-dev/flemma/tools/editor"
)

// editor is cycle.Editor over msgpack-RPC: each method is one nvim_exec_lua
// into lua/flemma/buf.lua or lua/flemma/trust.lua.
type editor struct{ nv *nvim.Nvim }

func (e editor) Snapshot(bufnr, have int) (cycle.Snapshot, error) {
	var s cycle.Snapshot
	err := e.nv.ExecLua(`return require("flemma.buf").snapshot(...)`, &s, bufnr, have)
	return s, err
}

func (e editor) Apply(bufnr, tick int, edits []cycle.LineEdit, opts cycle.ApplyOpts) (cycle.ApplyResult, error) {
	var res cycle.ApplyResult
	err := e.nv.ExecLua(`return require("flemma.buf").apply(...)`, &res, bufnr, tick, edits, opts)
	return res, err
}

func (e editor) SetDiagnostics(bufnr int, diags []cycle.Diag) error {
	return e.nv.ExecLua(`require("flemma.buf").set_diagnostics(...)`, nil, bufnr, diags)
}

func (e editor) SetModifiable(bufnr int, on bool) error {
	return e.nv.ExecLua(`require("flemma.buf").set_modifiable(...)`, nil, bufnr, on)
}

func (e editor) Notify(msg string, level int) error {
	return e.nv.ExecLua(`require("flemma.buf").notify(...)`, nil, msg, level)
}

func (e editor) Event(pattern string, data any) error {
	return e.nv.ExecLua(`require("flemma.buf").event(...)`, nil, pattern, data)
}

func (e editor) Progress(bufnr int, p cycle.Progress) error {
	return e.nv.ExecLua(`require("flemma.buf").progress(...)`, nil, bufnr, p)
}

func (e editor) TrustPull(bufnr int) (cycle.TrustPull, error) {
	var p cycle.TrustPull
	err := e.nv.ExecLua(`return require("flemma.trust").pull(...)`, &p, bufnr)
	return p, err
}

func (e editor) TrustSetDigest(bufnr, gen int, d cycle.Digest) error {
	return e.nv.ExecLua(`require("flemma.trust").set_digest(...)`, nil, bufnr, gen, d)
}

func (e editor) TrustGrant(bufnr int, g cycle.WireGrants) error {
	return e.nv.ExecLua(`require("flemma.trust").grant(...)`, nil, bufnr, g)
}

func (e editor) TrustRecord(bufnr int, recs []cycle.WireRecord) error {
	return e.nv.ExecLua(`require("flemma.trust").record(...)`, nil, bufnr, recs)
}

func (e editor) TrustSetVouched(bufnr, gen, vouch int, calls []cycle.DigestCall) error {
	return e.nv.ExecLua(`require("flemma.trust").set_vouched(...)`, nil, bufnr, gen, vouch, calls)
}

func (e editor) TrustPrune(bufnr int, ids []string, tombs string) error {
	return e.nv.ExecLua(`require("flemma.trust").prune(...)`, nil, bufnr, ids, tombs)
}

func (e editor) TrustAncestry(bufnr, tick int, seqs []int) (cycle.Ancestry, error) {
	var a cycle.Ancestry
	err := e.nv.ExecLua(`return require("flemma.trust").ancestry(...)`, &a, bufnr, tick, seqs)
	return a, err
}

// luaCalls is cycle.Lua over msgpack-RPC: lua/flemma/tools.lua and
// lua/flemma/tools/approval.lua.
type luaCalls struct{ nv *nvim.Nvim }

func (l luaCalls) Resolve(kind, name, tool string, input map[string]any, ctx cycle.ResolveContext) (cycle.ResolveAnswer, error) {
	var res cycle.ResolveAnswer
	err := l.nv.ExecLua(`return require("flemma.tools.approval")._resolve(...)`, &res, kind, name, tool, input, ctx)
	return res, err
}

func (l luaCalls) ExecuteTool(name, token string, input any, info cycle.ToolInfo) (cycle.LuaResponse, error) {
	var resp cycle.LuaResponse
	err := l.nv.ExecLua(`return require("flemma.tools")._execute(...)`, &resp, name, token, input, info)
	return resp, err
}

func (l luaCalls) CancelTool(token string) error {
	return l.nv.ExecLua(`require("flemma.tools")._cancel(...)`, nil, token)
}

func (l luaCalls) Diff(name string, input map[string]any, info cycle.ToolInfo) (*cycle.LuaDiff, error) {
	var out *cycle.LuaDiff
	err := l.nv.ExecLua(`return require("flemma.tools")._diff(...)`, &out, name, input, info)
	return out, err
}

func (l luaCalls) ReviewInput(name string, input map[string]any, content string) (cycle.LuaReview, error) {
	var out cycle.LuaReview
	err := l.nv.ExecLua(`return require("flemma.tools")._review(...)`, &out, name, input, content)
	return out, err
}

func (l luaCalls) Preview(name string, input map[string]any, maxLen int) (*string, error) {
	var out *string
	err := l.nv.ExecLua(`return require("flemma.tools")._preview(...)`, &out, name, input, maxLen)
	return out, err
}

// EditorQuery, EditorCancel and EditorCaps make luaCalls a cycle.EditorLua:
// lua/flemma/editor.lua answers the editor's tools.
func (l luaCalls) EditorQuery(token string, q edtools.Query) (cycle.EditorStart, error) {
	var out cycle.EditorStart
	err := l.nv.ExecLua(`return require("flemma.editor").query(...)`, &out, token, q)
	return out, err
}

func (l luaCalls) EditorCancel(token string) error {
	return l.nv.ExecLua(`require("flemma.editor").cancel(...)`, nil, token)
}

func (l luaCalls) EditorCaps() (cycle.EditorCaps, error) {
	var out cycle.EditorCaps
	err := l.nv.ExecLua(`return require("flemma.editor").caps()`, &out)
	return out, err
}
