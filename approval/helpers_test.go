package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// logRecorder collects what the chain logs.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// setupChain registers Builtins(s) and extra resolvers on a new chain.
func setupChain(t *testing.T, s Setup, extra ...Resolver) (*Chain, *logRecorder) {
	t.Helper()
	log := &logRecorder{}
	ch := NewChain(log.logf)
	for _, r := range Builtins(s) {
		ch.Register(r)
	}
	for _, r := range extra {
		ch.Register(r)
	}
	return ch, log
}

// builtinTags are the tags the built-in tools declare (tools/builtin,
// tools/editor); cycle's TestBuiltinPresetsByTag checks the registered
// built-ins declare the same privilege tags.
var builtinTags = map[string][]string{
	"read": {"filesystem", TagReadonly}, "grep": {"filesystem", TagReadonly, "search"},
	"find": {"filesystem", TagReadonly, "search"}, "ls": {"filesystem", TagReadonly},
	"diagnostics": {"editor", TagReadonly}, "lsp": {"editor", TagReadonly, "lsp"},
	"buffers": {"editor", TagReadonly}, "write": {"filesystem", TagWrites},
	"edit": {"filesystem", TagWrites}, "bash": {"shell", "command", TagExec},
	"calculator": {"math"}, "calculator_async": {"math", "test"}, "fetch": {"web"},
}

// taggedBuiltins names the built-ins in builtinTags that declare tag, in
// the order the host registers them (as the registry lists them).
func taggedBuiltins(tag string) []string {
	var out []string
	for _, name := range []string{"bash", "read", "write", "edit", "grep", "find", "ls", "calculator", "calculator_async", "fetch", "diagnostics", "lsp", "buffers"} {
		if slices.Contains(builtinTags[name], tag) {
			out = append(out, name)
		}
	}
	return out
}

// call builds a Call for tool, with the tags of the built-in of that name;
// bash gets the sandbox capability like the built-in.
func call(tool string, env Env) Call {
	c := Call{Tool: tool, ID: "toolu_01", Bufnr: 1, Input: map[string]any{}, Env: env, Tags: builtinTags[tool]}
	if tool == BashTool {
		c.Capabilities = []string{CapSandboxed}
		c.Input["command"] = "make test"
	}
	return c
}

func bashCall(command string) Call {
	c := call(BashTool, Env{})
	c.Input["command"] = command
	return c
}

// fmList is the Env of a trusted buffer whose frontmatter assigned the list
// form (the case of the Lua plugin's tests).
func fmList(p *Presets, list []string, exclusions ...string) Env {
	return Env{FrontmatterSet: true, FrontmatterReplaces: true, FrontmatterTrusted: true,
		FrontmatterPolicy: p.Expand(list, exclusions), Exclusions: exclusions}
}

// fnResolver is a FuncResolver returning a fixed decision.
func fnResolver(name string, prio int, d Decision) *FuncResolver {
	return &FuncResolver{N: name, P: prio, Fn: func(context.Context, Call) (Decision, string, error) {
		return d, "", nil
	}}
}

// luaFunc mimics an auto_approve function as the caller wraps it: the Lua
// value goes through FromAutoApprove.
func luaFunc(f func(tool string, input map[string]any) (any, error)) func(context.Context, Call) (Decision, string, error) {
	return func(_ context.Context, c Call) (Decision, string, error) {
		v, err := f(c.Tool, c.Input)
		if err != nil {
			return Pass, "", err
		}
		return FromAutoApprove(v), RuleFunction, nil
	}
}

func expect(t *testing.T, ch *Chain, c Call, want Decision) Outcome {
	t.Helper()
	got := ch.Decide(context.Background(), c)
	if got.Decision != want {
		t.Errorf("Decide(%s %v) = %v, want %s", c.Tool, c.Input, got, want)
	}
	return got
}

// nest wraps "rm x" in n levels of eval.
func nest(n int) string {
	s := "rm x"
	for range n {
		s = "eval " + s
	}
	return s
}
