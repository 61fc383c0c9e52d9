package approval

import (
	"context"
	"slices"
)

// Names and priorities of the built-in resolvers (seed 004).
const (
	ConfigName      = "urn:flemma:approval:config"
	FrontmatterName = "urn:flemma:approval:frontmatter"
	SandboxName     = "urn:flemma:approval:sandbox"
	CatchAllName    = "urn:flemma:approval:catch-all"

	ConfigPriority      = 100 // also module-path resolvers
	FrontmatterPriority = 90
	SandboxPriority     = 25
	CatchAllPriority    = 0
)

// CapSandboxed is the capability that lets the sandbox resolver approve a
// tool.
const CapSandboxed = "can_auto_approve_if_sandboxed"

type listResolver struct {
	name string
	prio int
	p    *Policy
}

// NewListResolver returns a resolver that decides with a fixed policy (see
// Policy.Decide). The config list resolver is one; a buffer's frontmatter
// narrows what it approves (Chain.Decide), it never makes it stand down.
func NewListResolver(name string, priority int, p *Policy) Resolver {
	return &listResolver{name: name, prio: priority, p: p}
}

func (r *listResolver) Name() string  { return r.name }
func (r *listResolver) Priority() int { return r.prio }
func (r *listResolver) Resolve(_ context.Context, c Call) (Decision, string, error) {
	d, rule := r.p.Decide(c)
	return d, rule, nil
}

type frontmatterResolver struct{}

// NewFrontmatterResolver returns urn:flemma:approval:frontmatter (priority
// 90): it passes unless Call.Env.FrontmatterSet; then it decides with
// Env.FrontmatterFunc when set, else with Env.FrontmatterPolicy. Its deny
// and require_approval stand; its approval counts only in a buffer the
// user trusts (Env.FrontmatterTrusted) — elsewhere it passes, and the
// approval has to come from the user's own resolvers. A function that
// errors is logged and skipped by the chain (and narrows, see
// Chain.Decide).
func NewFrontmatterResolver() Resolver { return frontmatterResolver{} }

func (frontmatterResolver) Name() string  { return FrontmatterName }
func (frontmatterResolver) Priority() int { return FrontmatterPriority }
func (frontmatterResolver) Resolve(ctx context.Context, c Call) (Decision, string, error) {
	if !c.Env.FrontmatterSet {
		return Pass, "", nil
	}
	d, rule, err := frontmatterDecision(ctx, c)
	if err == nil && d == Approve && !c.Env.FrontmatterTrusted {
		return Pass, "", nil
	}
	return d, rule, err
}

// frontmatterDecision is what the buffer's frontmatter says of c (Pass
// when it set nothing).
func frontmatterDecision(ctx context.Context, c Call) (Decision, string, error) {
	if !c.Env.FrontmatterSet {
		return Pass, "", nil
	}
	if fn := c.Env.FrontmatterFunc; fn != nil {
		return fn(ctx, c)
	}
	d, rule := c.Env.FrontmatterPolicy.Decide(c)
	return d, rule, nil
}

type sandboxResolver struct{ enabled bool }

// NewSandboxResolver returns urn:flemma:approval:sandbox (priority 25). With
// enabled false (tools.auto_approve_sandboxed = false, or no auto_approve
// configured) it always passes. Otherwise it approves a call when the tool's
// capabilities include CapSandboxed, the tool is not in
// Call.Env.Exclusions (frontmatter auto_approve:remove("bash")), and
// Env.SandboxEnabled and Env.SandboxAvailable both hold.
func NewSandboxResolver(enabled bool) Resolver { return sandboxResolver{enabled: enabled} }

func (sandboxResolver) Name() string  { return SandboxName }
func (sandboxResolver) Priority() int { return SandboxPriority }
func (r sandboxResolver) Resolve(_ context.Context, c Call) (Decision, string, error) {
	if !r.enabled || !c.Env.SandboxEnabled || !c.Env.SandboxAvailable ||
		!slices.Contains(c.Capabilities, CapSandboxed) || slices.Contains(c.Env.Exclusions, c.Tool) {
		return Pass, "", nil
	}
	return Approve, RuleSandbox, nil
}

type catchAll struct{}

// NewCatchAll returns urn:flemma:approval:catch-all (priority 0), which
// approves every call that reaches it. Register it only when
// tools.require_approval = false.
func NewCatchAll() Resolver { return catchAll{} }

func (catchAll) Name() string  { return CatchAllName }
func (catchAll) Priority() int { return CatchAllPriority }
func (catchAll) Resolve(context.Context, Call) (Decision, string, error) {
	return Approve, RuleCatchAll, nil
}

// Setup is the approval part of setup(), decoded by the caller.
type Setup struct {
	// RequireApproval is tools.require_approval; false registers the
	// catch-all.
	RequireApproval bool
	// AutoApprove is tools.auto_approve in list form, module-path entries
	// left out (pass those as Modules). nil means "not a list"; an empty
	// non-nil list is a configured but empty policy.
	AutoApprove []string
	// AutoApproveFunc is the function form (nil otherwise); it returns
	// FromAutoApprove of the Lua value. An error from it is a final
	// require_approval, as in the Lua plugin.
	AutoApproveFunc func(ctx context.Context, c Call) (Decision, string, error)
	// Modules are the module-path resolvers (name = the module path,
	// priority 100); Builtins registers them as given.
	Modules []Resolver
	// AutoApproveSandboxed is tools.auto_approve_sandboxed.
	AutoApproveSandboxed bool
	// Presets expands the list (nil: the built-ins only).
	Presets *Presets
}

// Builtins returns the built-in resolvers for s, to be registered on a chain:
//
//   - urn:flemma:approval:config (100): a list resolver when AutoApprove is
//     non-empty, or a fail-closed FuncResolver when AutoApproveFunc is set;
//     none for an empty list (the result is then require_approval, as in the
//     Lua plugin);
//   - the Modules, as given;
//   - urn:flemma:approval:frontmatter (90), always;
//   - urn:flemma:approval:sandbox (25), always; enabled when
//     AutoApproveSandboxed and some auto_approve is configured (a non-nil
//     list, a function or a module);
//   - urn:flemma:approval:catch-all (0) when !RequireApproval.
func Builtins(s Setup) []Resolver {
	var out []Resolver
	switch {
	case s.AutoApproveFunc != nil:
		out = append(out, &FuncResolver{N: ConfigName, P: ConfigPriority, Fn: s.AutoApproveFunc,
			Desc: "tools.auto_approve (function)", Fail: true})
	case len(s.AutoApprove) > 0:
		out = append(out, NewListResolver(ConfigName, ConfigPriority, s.Presets.Expand(s.AutoApprove, nil)))
	}
	out = append(out, s.Modules...)
	out = append(out, NewFrontmatterResolver())
	configured := s.AutoApprove != nil || s.AutoApproveFunc != nil || len(s.Modules) > 0
	out = append(out, NewSandboxResolver(s.AutoApproveSandboxed && configured))
	if !s.RequireApproval {
		out = append(out, NewCatchAll())
	}
	return out
}
