package cycle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/tools"
)

// luaTool is a tool registered from Lua: its definition lives in the host
// registry, its execute function stays in Neovim and is called back.
type luaTool struct {
	h          *Engine
	spec       tools.Spec
	hasPreview bool
	hasDiff    bool // the "diff" capability: a diff function (flemma.tools._diff)
	hasReview  bool // a review function takes the user's version (flemma.tools._review)
}

func (t *luaTool) Spec() tools.Spec { return t.spec }

// LuaResponse is what flemma.tools._execute returns.
type LuaResponse struct {
	Status string     `msgpack:"status"` // "done" | "started" | "internal"
	Result *LuaResult `msgpack:"result"`
	Error  string     `msgpack:"error"`
}

type LuaResult struct {
	Success bool   `msgpack:"success"`
	Output  any    `msgpack:"output"`
	Error   string `msgpack:"error"`
}

// waiters deliver the answers of async Lua tools (flemma.tool_done).
type waiters struct {
	mu sync.Mutex
	m  map[string]chan LuaResult
}

func (w *waiters) add(token string) chan LuaResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]chan LuaResult{}
	}
	ch := make(chan LuaResult, 1)
	w.m[token] = ch
	return ch
}

func (w *waiters) remove(token string) {
	w.mu.Lock()
	delete(w.m, token)
	w.mu.Unlock()
}

func (w *waiters) deliver(token string, r LuaResult) bool {
	w.mu.Lock()
	ch := w.m[token]
	delete(w.m, token)
	w.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- r
	return true
}

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (t *luaTool) Run(ctx context.Context, call tools.Call, raw json.RawMessage) (tools.Output, error) {
	if why := buffer.InputTooLarge(string(raw)); why != "" {
		// The executor refuses it first; this keeps Neovim's channel safe
		// from any other way in.
		return tools.Output{}, tools.Failf("Invalid input for tool '%s': %s.", t.spec.Name, why)
	}
	var input any
	if err := json.Unmarshal(raw, &input); err != nil {
		return tools.Output{}, &tools.Internal{Err: err}
	}
	input = stripNulls(input)
	if m, ok := input.(map[string]any); ok && len(m) == 0 {
		input = map[string]any{} // msgpack sends an empty map, Lua gets {}
	}
	info := ToolInfo{Bufnr: call.Bufnr, Cwd: call.Cwd, Buffer: call.Buffer, Timeout: call.Timeout.Seconds(), ToolID: call.ID}
	token := newToken()
	ch := t.h.luaWait.add(token)
	defer t.h.luaWait.remove(token)
	resp, err := t.h.lua.ExecuteTool(t.spec.Name, token, input, info)
	if err != nil {
		return tools.Output{}, &tools.Internal{Err: fmt.Errorf("call Lua tool: %w", err)}
	}
	var res LuaResult
	switch resp.Status {
	case "done":
		if resp.Result == nil {
			return tools.Output{}, &tools.Internal{Err: tools.Failf("Lua tool returned no result")}
		}
		res = *resp.Result
	case "started":
		select {
		case res = <-ch:
		case <-ctx.Done():
			if err := t.h.lua.CancelTool(token); err != nil {
				t.h.logf("cancel Lua tool %s: %v", t.spec.Name, err)
			}
			return tools.Output{}, ctx.Err()
		}
	case "internal":
		return tools.Output{}, &tools.Internal{Err: errors.New(resp.Error)}
	default:
		return tools.Output{}, &tools.Internal{Err: fmt.Errorf("unexpected answer %q from Lua tool", resp.Status)}
	}
	out, err := luaOutput(res)
	if err == nil {
		out.Text = t.afterWrite(ctx, call, input, info, out)
	}
	return out, err
}

// afterWrite adds to a text result of a tool with the diff capability what
// the editor says of the file it wrote (tools.Env.AfterWrite), the file
// being the one its diff function names for the same input.
func (t *luaTool) afterWrite(ctx context.Context, call tools.Call, input any, info ToolInfo, out tools.Output) string {
	m, ok := input.(map[string]any)
	if !t.hasDiff || !ok || out.JSON != nil || call.Env == nil || call.Env.AfterWrite == nil {
		return out.Text
	}
	d, err := t.h.lua.Diff(t.spec.Name, m, info)
	if err != nil || d == nil || d.Error != "" || d.Path == "" {
		return out.Text
	}
	if note := call.Env.AfterWrite(ctx, call, d.Path); note != "" {
		if out.Text == "" {
			return note
		}
		return out.Text + "\n\n" + note
	}
	return out.Text
}

// luaOutput turns a Lua ExecutionResult into an Output or a model-facing
// error (the tool's own error text, which its author chose to show).
func luaOutput(res LuaResult) (tools.Output, error) {
	if !res.Success {
		msg := res.Error
		if msg == "" {
			msg = "Unknown error"
		}
		if s := outputText(res.Output); s != "" {
			msg += "\n\nPartial output:\n" + s
		}
		return tools.Output{}, errors.New(msg)
	}
	switch out := options.NormalizeLua(res.Output, true).(type) {
	case nil:
		return tools.Output{Text: ""}, nil
	case string:
		return tools.Output{Text: out}, nil
	case map[string]any, []any:
		return tools.Output{JSON: out}, nil
	default:
		return tools.Output{Text: fmt.Sprint(out)}, nil
	}
}

func outputText(v any) string {
	switch x := options.NormalizeLua(v, true).(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

// stripNulls drops JSON nulls from objects: a Lua tool sees an absent key,
// as it would for a missing one.
func stripNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e != nil {
				out[k] = stripNulls(e)
			}
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = stripNulls(e)
		}
		return x
	}
	return v
}

// luaCapabilities are the capabilities a Lua tool may declare (issue 28
// item 11): a misspelt one is refused at registration rather than
// silently meaning nothing. side_effects: its calls found in a file never
// run by policy; can_auto_approve_if_sandboxed: the sandbox resolver may
// approve it where bubblewrap works (the tool confines its commands with
// ctx.sandbox.wrap_command); reads_path: its "path" input is confined to
// the readable roots like read's; diff: its pending calls show a diff
// (flemma.tools, |flemma-diff-lua|); template_tool_result: Lua Flemma's
// marker, accepted and without effect here.
var luaCapabilities = []string{tools.CapSideEffects, tools.CapSandboxed, tools.CapReadsPath, "diff", "template_tool_result"}

// wireDef is a definition as flemma.tools sends it.
type wireDef struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"input_schema"`
	OutputSchema map[string]any `json:"output_schema"`
	Strict       bool           `json:"strict"`
	Async        bool           `json:"async"`
	Capabilities []string       `json:"capabilities"`
	Tags         []string       `json:"tags"`
	Requires     []string       `json:"requires"`
	Enabled      bool           `json:"enabled"`
	Supersedes   string         `json:"supersedes"`
	Timeout      float64        `json:"timeout"`
	Source       string         `json:"source"`
	HasPreview   bool           `json:"has_preview"`
	HasDiff      bool           `json:"has_diff"`
	HasReview    bool           `json:"has_review"`
	// OpenSchema keeps the input schema as written (closeSchema).
	OpenSchema bool `json:"open_schema"`
}

// fixSchema repairs what msgpack does to Lua tables in a JSON Schema: an
// empty `properties` arrives as an array and must be an object.
func fixSchema(s map[string]any) map[string]any {
	if s == nil {
		return map[string]any{"type": "object"}
	}
	for k, v := range s {
		switch k {
		case "properties", "patternProperties", "$defs", "definitions":
			if _, isList := v.([]any); isList || v == nil {
				s[k] = map[string]any{}
			}
			if m, ok := s[k].(map[string]any); ok {
				for pk, pv := range m {
					if sub, ok := pv.(map[string]any); ok {
						m[pk] = fixSchema(sub)
					}
				}
			}
		case "items", "additionalProperties", "not":
			if sub, ok := v.(map[string]any); ok {
				s[k] = fixSchema(sub)
			}
		case "anyOf", "oneOf", "allOf":
			if list, ok := v.([]any); ok {
				for i, e := range list {
					if sub, ok := e.(map[string]any); ok {
						list[i] = fixSchema(sub)
					}
				}
			}
		}
	}
	return s
}

// defineFromLua decodes a JSON list of definitions sent from Lua (each a
// Lua table: NormalizeLua, then into a T) and registers each with add;
// what fails is reported per definition, the others are registered.
func defineFromLua[T any](method, what, defsJSON string, add func(T) error) (DefineReply, error) {
	var raw []any
	if err := json.Unmarshal([]byte(defsJSON), &raw); err != nil {
		return DefineReply{}, fmt.Errorf("%s: %w", method, err)
	}
	var errs []string
	for _, item := range raw {
		b, err := json.Marshal(options.NormalizeLua(item, false))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		var d T
		if err := json.Unmarshal(b, &d); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", what, err))
			continue
		}
		if err := add(d); err != nil {
			errs = append(errs, err.Error())
		}
	}
	return DefineReply{Errors: errs}, nil
}

// onDefineTools registers (or re-registers) tools defined in Lua, sent as a
// JSON list of definitions (flemma.tools _wire_all).
func (h *Engine) onDefineTools(defsJSON string) (DefineReply, error) {
	return defineFromLua("define_tools", "tool definition", defsJSON, func(d wireDef) error {
		spec := tools.Spec{
			Name: d.Name, Description: d.Description, InputSchema: fixSchema(d.InputSchema),
			Strict: d.Strict, Async: d.Async, Capabilities: d.Capabilities, Tags: d.Tags,
			Requires: d.Requires, Enabled: d.Enabled, Supersedes: d.Supersedes,
			Source: d.Source, Timeout: secs(d.Timeout),
		}
		if !d.OpenSchema {
			closeSchema(spec.InputSchema)
		}
		for _, c := range d.Capabilities {
			if !slices.Contains(luaCapabilities, c) {
				return fmt.Errorf("register %s: unknown capability %q (known: %s)", d.Name, c, strings.Join(luaCapabilities, ", "))
			}
		}
		if d.OutputSchema != nil {
			spec.OutputSchema = fixSchema(d.OutputSchema)
		}
		if spec.Source == "" {
			spec.Source = "lua"
		}
		// Compiled before it is registered (self-contained, bounded, under a
		// time limit; tools.CompileSchema): a schema the executor could not
		// use is refused here, with the reason, not at the first call.
		if err := tools.CheckSchemas(spec); err != nil {
			return fmt.Errorf("register %s: %v", spec.Name, err)
		}
		if existing, ok := h.Registry.Get(spec.Name); ok {
			if _, isLua := existing.(*luaTool); isLua {
				h.Registry.Remove(spec.Name)
			}
		}
		if err := h.Registry.Add(&luaTool{h: h, spec: spec, hasPreview: d.HasPreview, hasDiff: d.HasDiff, hasReview: d.HasReview}); err != nil {
			return fmt.Errorf("register %s: %v", spec.Name, err)
		}
		h.logf("registered Lua tool %s (%s)", spec.Name, spec.Source)
		return nil
	})
}

// onToolDone receives an async Lua tool's answer (a notification).
func (h *Engine) onToolDone(token string, res LuaResult) {
	if !h.luaWait.deliver(token, res) {
		h.logf("late answer for Lua tool call %s ignored", token)
	}
}
