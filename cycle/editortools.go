package cycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/editor"
)

// EditorLua is what an editor that answers questions about its buffers and
// language servers implements besides Lua (rpc's adapter over
// lua/flemma/editor.lua does; headless runs have no editor, and so neither
// these tools nor diagnostics after an edit).
type EditorLua interface {
	// EditorQuery asks a question; an answer that needs a language server
	// comes later through Engine.onEditorDone with the same token.
	EditorQuery(token string, q editor.Query) (EditorStart, error)
	// EditorCancel ends a question the host no longer waits for.
	EditorCancel(token string) error
	// EditorCaps says what the editor can answer now.
	EditorCaps() (EditorCaps, error)
}

// EditorStart is flemma.editor.query's answer: "done" with the Answer, or
// "started" (the answer follows as flemma.editor_done).
type EditorStart struct {
	Status string         `msgpack:"status"`
	Answer *editor.Answer `msgpack:"answer"`
}

// EditorCaps is flemma.editor.caps: LSP is true while a language server
// runs in the editor.
type EditorCaps struct {
	LSP bool `msgpack:"lsp"`
}

// editorState is the engine's side of the questions: the answers awaited
// and the capabilities last seen.
type editorState struct {
	lua  EditorLua
	mu   sync.Mutex
	wait map[string]chan editor.Answer
	lsp  atomic.Bool
	seen atomic.Int64 // when the capabilities were last asked (unix ns)
}

// capsTTL is how long the editor's capabilities are taken as known: one
// press asks for the buffer's tools several times.
const capsTTL = 200 * time.Millisecond

// connectEditor registers the editor's tools when the editor can answer
// them, and makes the registry answer their requirement ("editor:lsp")
// from what the editor last said.
func (h *Engine) connectEditor(lua Lua) {
	el, ok := lua.(EditorLua)
	if !ok {
		return
	}
	h.editor = &editorState{lua: el, wait: map[string]chan editor.Answer{}}
	prev := h.Registry.Have
	h.Registry.Have = func(req string) bool {
		if req == editor.Requirement {
			return h.editor.lsp.Load()
		}
		return prev == nil || prev(req)
	}
	for _, t := range editor.All(asker{h}, h.editorOptions) {
		h.Registry.MustAdd(t)
	}
}

// refreshEditorCaps asks the editor what it can answer now (a language
// server started or stopped) whenever the buffer's tools are resolved: for
// a press, a request's tool list, a listing.
func (h *Engine) refreshEditorCaps() {
	if h.editor == nil {
		return
	}
	now := time.Now().UnixNano()
	if now-h.editor.seen.Load() < int64(capsTTL) {
		return
	}
	h.editor.seen.Store(now)
	caps, err := h.editor.lua.EditorCaps()
	if err != nil {
		h.logf("editor capabilities: %v", err)
		return
	}
	h.editor.lsp.Store(caps.LSP)
}

// editorOptions are setup's tools.editor.
func (h *Engine) editorOptions() editor.Options {
	h.mu.Lock()
	e := h.cfg.Tools.Editor
	h.mu.Unlock()
	o := editor.DefaultOptions()
	if e.Timeout != nil && *e.Timeout > 0 {
		o.Timeout = secs(*e.Timeout)
	}
	if e.MaxResults > 0 {
		o.MaxResults = e.MaxResults
	}
	if e.DiagnosticsAfterEdit != nil {
		o.AfterEdit = *e.DiagnosticsAfterEdit
	}
	if e.DiagnosticsWait != nil && *e.DiagnosticsWait > 0 {
		o.AfterEditWait = secs(*e.DiagnosticsWait)
	}
	return o
}

// asker is the engine as editor.Asker (the editor's tools ask through it).
type asker struct{ h *Engine }

func (a asker) Ask(ctx context.Context, q editor.Query) (editor.Answer, error) {
	return a.h.ask(ctx, q)
}

// ask is one question to Neovim, answered at once or later (EditorDone);
// when ctx ends first, Neovim is told to stop.
func (h *Engine) ask(ctx context.Context, q editor.Query) (editor.Answer, error) {
	if h.editor == nil {
		return editor.Answer{}, errors.New("no editor")
	}
	token := newToken()
	ch := make(chan editor.Answer, 1)
	h.editor.mu.Lock()
	h.editor.wait[token] = ch
	h.editor.mu.Unlock()
	defer func() {
		h.editor.mu.Lock()
		delete(h.editor.wait, token)
		h.editor.mu.Unlock()
	}()
	start, err := h.editor.lua.EditorQuery(token, q)
	if err != nil {
		return editor.Answer{}, fmt.Errorf("flemma.editor.query: %w", err)
	}
	switch start.Status {
	case "done":
		if start.Answer == nil {
			return editor.Answer{}, nil
		}
		return *start.Answer, nil
	case "started":
	default:
		return editor.Answer{}, fmt.Errorf("flemma.editor.query answered %q", start.Status)
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		if err := h.editor.lua.EditorCancel(token); err != nil {
			h.logf("cancel editor question: %v", err)
		}
		return editor.Answer{}, ctx.Err()
	}
}

// onEditorDone receives a question's late answer (a notification).
func (h *Engine) onEditorDone(token string, a editor.Answer) {
	if h.editor == nil {
		return
	}
	h.editor.mu.Lock()
	ch := h.editor.wait[token]
	delete(h.editor.wait, token)
	h.editor.mu.Unlock()
	if ch == nil {
		h.logf("late editor answer %s ignored", token)
		return
	}
	ch <- a
}

// afterWrite is tools.Env.AfterWrite: the editor's diagnostics of a file a
// write or an edit changed (nil without an editor).
func (h *Engine) afterWrite() func(ctx context.Context, call tools.Call, path string) string {
	if h.editor == nil {
		return nil
	}
	return func(ctx context.Context, call tools.Call, path string) string {
		return editor.AfterEdit(ctx, asker{h}, h.editorOptions(), call, path)
	}
}
