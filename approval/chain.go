package approval

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Call is one tool call as the resolvers see it.
type Call struct {
	Tool  string         // tool name, e.g. "bash"
	ID    string         // tool-use id, e.g. "toolu_01"
	Input map[string]any // the call's input as decoded from the buffer
	Bufnr int            // buffer the call lives in
	// Capabilities are the tool definition's capabilities
	// (e.g. "can_auto_approve_if_sandboxed").
	Capabilities []string
	// Tags are the tags the tool's definer declared (e.g. "readonly"):
	// the built-in presets approve by them (PresetDef.Tags).
	Tags []string
	Env  Env
}

// Env holds the per-buffer facts the built-in resolvers need. The caller
// (cycle) fills it from the buffer's evaluated frontmatter and the sandbox state.
type Env struct {
	// FrontmatterSet reports that the buffer's frontmatter set
	// tools.auto_approve (list or function, including any ListOption
	// operation). It never makes the user's resolvers stand down: the
	// frontmatter can only narrow what they approve (see Chain.Decide).
	FrontmatterSet bool
	// FrontmatterReplaces reports that the frontmatter assigned
	// tools.auto_approve (a list or a function) rather than only modifying
	// the setup's list with :append/:remove/…: then the buffer's policy
	// replaces the setup's list, and an approval the buffer's policy does
	// not give is narrowed to require_approval (this also keeps the sandbox
	// resolver from approving, as in the Lua plugin).
	FrontmatterReplaces bool
	// FrontmatterTrusted reports that the user trusts the buffer (a buffer
	// written in this session, :Flemma trust): only then may its
	// frontmatter approve a call. An untrusted frontmatter may only deny or
	// require approval.
	FrontmatterTrusted bool
	// FrontmatterPolicy is the buffer's auto_approve list, expanded with
	// Presets.Expand; nil when the frontmatter set a function or nothing.
	FrontmatterPolicy *Policy
	// FrontmatterFunc evaluates the buffer's auto_approve function (in the
	// frontmatter VM); nil when the frontmatter set a list or nothing. It
	// returns FromAutoApprove of the function's value.
	FrontmatterFunc func(ctx context.Context, c Call) (Decision, string, error)
	// SandboxEnabled: the sandbox is enabled for this buffer (runtime
	// override > frontmatter > setup).
	SandboxEnabled bool
	// SandboxAvailable: a sandbox backend validated as working.
	SandboxAvailable bool
	// Exclusions are the names the buffer's frontmatter removed from
	// auto_approve although they were not entries of the list (e.g.
	// :remove("write") from { "$default" }). They remove approvals only,
	// never a deny, and they stop the sandbox resolver for that tool.
	Exclusions []string
}

// Resolver is one link of the approval chain. Resolve returns Pass to let the
// next resolver decide. An error (or a decision that is not valid) is logged
// by the chain and the resolver is skipped, unless it is FailClosed.
type Resolver interface {
	Name() string
	Priority() int
	Resolve(ctx context.Context, c Call) (Decision, string, error)
}

// FailClosed is an optional interface: a resolver whose FailClosed returns
// true turns its own error into a final require_approval instead of being
// skipped. The config function uses it (an auto_approve function that throws
// must not let a lower resolver such as the catch-all approve the call).
type FailClosed interface {
	FailClosed() bool
}

// Describer is an optional interface for resolvers that carry a
// human-readable description (Lua's register(name, { description = ... })).
type Describer interface {
	Description() string
}

// DefaultPriority is the priority of resolvers registered from Lua without
// one.
const DefaultPriority = 50

// FuncResolver adapts a function to Resolver. The caller uses it for the
// config function form, module-path resolvers and resolvers registered from
// Lua.
type FuncResolver struct {
	N  string // name
	P  int    // priority
	Fn func(ctx context.Context, c Call) (Decision, string, error)
	// Desc is an optional description, returned by Description.
	Desc string
	// Fail makes an error a final require_approval (see FailClosed).
	Fail bool
}

// Name returns f.N.
func (f *FuncResolver) Name() string { return f.N }

// Priority returns f.P.
func (f *FuncResolver) Priority() int { return f.P }

// Description returns f.Desc.
func (f *FuncResolver) Description() string { return f.Desc }

// FailClosed returns f.Fail.
func (f *FuncResolver) FailClosed() bool { return f.Fail }

// Resolve calls f.Fn, passing when Fn is nil.
func (f *FuncResolver) Resolve(ctx context.Context, c Call) (Decision, string, error) {
	if f.Fn == nil {
		return Pass, "", nil
	}
	return f.Fn(ctx, c)
}

// ValidateLuaName checks the name of a resolver registered from Lua: module
// paths own dotted names, so a Lua-registered name must not contain a dot.
func ValidateLuaName(name string) error {
	if name == "" {
		return fmt.Errorf("approval resolver name must not be empty")
	}
	if strings.Contains(name, ".") {
		return fmt.Errorf("approval resolver name '%s' must not contain dots (dots indicate module paths)", name)
	}
	return nil
}

type entry struct {
	r    Resolver
	name string
	prio int
}

// Chain is an ordered set of named resolvers. It is safe for concurrent use;
// Decide works on a snapshot, so resolvers may be (un)registered while
// decisions run. A resolver's Name and Priority are read once, when it is
// registered.
type Chain struct {
	logf func(string, ...any)

	mu     sync.RWMutex
	sorted []entry // immutable once published; replaced on every change
}

// NewChain returns an empty chain that reports skipped resolvers through
// logf (nil discards them).
func NewChain(logf func(format string, args ...any)) *Chain {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Chain{logf: logf}
}

// Register adds r, replacing any resolver with the same name. A nil resolver
// or an empty name is a programmer error and panics.
func (c *Chain) Register(r Resolver) {
	if r == nil {
		panic("approval: Register(nil)")
	}
	e := entry{r: r, name: r.Name(), prio: r.Priority()}
	if e.name == "" {
		panic("approval: Register: resolver without a name")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make([]entry, 0, len(c.sorted)+1)
	for _, old := range c.sorted {
		if old.name != e.name {
			next = append(next, old)
		}
	}
	next = append(next, e)
	slices.SortFunc(next, func(a, b entry) int {
		if a.prio != b.prio {
			return cmp.Compare(b.prio, a.prio) // highest first
		}
		return strings.Compare(a.name, b.name)
	})
	c.sorted = next
}

// Unregister removes the resolver called name and reports whether it existed.
func (c *Chain) Unregister(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.sorted, func(e entry) bool { return e.name == name })
	if i < 0 {
		return false
	}
	c.sorted = slices.Concat(c.sorted[:i], c.sorted[i+1:])
	return true
}

// Clear removes every resolver.
func (c *Chain) Clear() {
	c.mu.Lock()
	c.sorted = nil
	c.mu.Unlock()
}

// Get returns the resolver called name.
func (c *Chain) Get(name string) (Resolver, bool) {
	for _, e := range c.snapshot() {
		if e.name == name {
			return e.r, true
		}
	}
	return nil, false
}

// All returns the resolvers in evaluation order (priority descending, then
// name ascending). The slice is a copy.
func (c *Chain) All() []Resolver {
	s := c.snapshot()
	out := make([]Resolver, len(s))
	for i, e := range s {
		out[i] = e.r
	}
	return out
}

// Count returns the number of registered resolvers.
func (c *Chain) Count() int { return len(c.snapshot()) }

func (c *Chain) snapshot() []entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.sorted
}

// Decide runs the chain for call: resolvers in order, the first valid
// non-Pass decision wins. A resolver that errors, panics or returns an
// invalid decision is logged and skipped (a FailClosed one ends the chain
// with require_approval instead). When nobody decides the outcome is
// require_approval with rule RuleDefault. When ctx ends before a decision
// the outcome is require_approval with rule RuleCanceled: a call whose
// evaluation was cut short is never approved by a lower resolver.
//
// The buffer's frontmatter may only narrow: an approval by any other
// resolver is turned into require_approval or deny when the frontmatter's
// policy denies the call, requires approval for it, removed the tool, or
// replaced the setup's list without approving it (see narrow).
func (c *Chain) Decide(ctx context.Context, call Call) Outcome {
	out := c.decide(ctx, call)
	if out.Decision == Approve && out.Resolver != FrontmatterName && call.Env.FrontmatterSet {
		out = c.narrow(ctx, call, out)
	}
	return out
}

func (c *Chain) decide(ctx context.Context, call Call) Outcome {
	for _, e := range c.snapshot() {
		if ctx.Err() != nil {
			return Outcome{Decision: RequireApproval, Rule: RuleCanceled}
		}
		d, rule, err := c.run(ctx, e, call)
		if err == nil && d != Pass && !d.Valid() {
			err = fmt.Errorf("returned invalid result %q", string(d))
		}
		if err != nil {
			if ctx.Err() != nil {
				return Outcome{Decision: RequireApproval, Resolver: e.name, Rule: RuleCanceled}
			}
			c.logf("approval: resolver '%s' error: %v", e.name, err)
			if fc, ok := e.r.(FailClosed); ok && fc.FailClosed() {
				return Outcome{Decision: RequireApproval, Resolver: e.name, Rule: RuleError}
			}
			continue
		}
		if d != Pass {
			return Outcome{Decision: d, Resolver: e.name, Rule: rule}
		}
	}
	return Outcome{Decision: RequireApproval, Rule: RuleDefault}
}

// RuleNarrowed is the rule of a require_approval the frontmatter's policy
// imposed on another resolver's approval.
const RuleNarrowed = "narrowed by this buffer's auto_approve"

// narrow applies the buffer's frontmatter to out, an approval made by
// another resolver. The frontmatter's decision is taken as a restriction
// only: deny and require_approval win, a tool the frontmatter removed
// (Env.Exclusions) requires approval, and when the frontmatter replaced
// the setup's list an approval it does not give itself requires approval.
// A frontmatter function that fails counts as require_approval.
func (c *Chain) narrow(ctx context.Context, call Call, out Outcome) Outcome {
	d, rule, err := frontmatterDecision(ctx, call)
	if err != nil {
		c.logf("approval: frontmatter policy error: %v", err)
		return Outcome{Decision: RequireApproval, Resolver: FrontmatterName, Rule: RuleError}
	}
	switch {
	case d == Deny || d == RequireApproval:
		return Outcome{Decision: d, Resolver: FrontmatterName, Rule: rule}
	case slices.Contains(call.Env.Exclusions, call.Tool):
		return Outcome{Decision: RequireApproval, Resolver: FrontmatterName, Rule: "removed " + call.Tool}
	case call.Env.FrontmatterReplaces && d != Approve:
		return Outcome{Decision: RequireApproval, Resolver: FrontmatterName, Rule: RuleNarrowed}
	}
	return out
}

// run calls one resolver, turning a panic into an error so that a broken
// resolver cannot take the host down.
func (c *Chain) run(ctx context.Context, e entry, call Call) (d Decision, rule string, err error) {
	defer func() {
		if p := recover(); p != nil {
			d, rule, err = Pass, "", fmt.Errorf("panic: %v", p)
		}
	}()
	return e.r.Resolve(ctx, call)
}
