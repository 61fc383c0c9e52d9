package approval

import (
	"context"
	"errors"
	"testing"
)

// Issue 11, class 5: a buffer's frontmatter may only narrow the user's
// policy. Config deny rules, config functions and module resolvers always
// apply; an untrusted frontmatter cannot approve anything the user's
// resolvers do not approve.
func TestFrontmatterOnlyNarrows(t *testing.T) {
	denyRm, errs := NewPresets(map[string]PresetDef{"$safe": {Approve: []string{"read", "grep"}, Deny: []string{"bash(rm *)", "curl"}}}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	always := func(d Decision) func(context.Context, Call) (Decision, string, error) {
		return func(context.Context, Call) (Decision, string, error) { return d, RuleFunction, nil }
	}
	failing := func(context.Context, Call) (Decision, string, error) { return Pass, "", errors.New("boom") }
	untrusted := func(list []string, excl ...string) Env {
		return Env{FrontmatterSet: true, FrontmatterReplaces: true, FrontmatterPolicy: denyRm.Expand(list, excl), Exclusions: excl}
	}
	untrustedFn := func(fn func(context.Context, Call) (Decision, string, error)) Env {
		return Env{FrontmatterSet: true, FrontmatterReplaces: true, FrontmatterFunc: fn}
	}
	trusted := func(e Env) Env { e.FrontmatterTrusted = true; return e }
	modify := func(e Env) Env { e.FrontmatterReplaces = false; return e }
	sandbox := func(e Env) Env { e.SandboxEnabled, e.SandboxAvailable = true, true; return e }
	bash := func(cmd string, e Env) Call {
		c := call(BashTool, e)
		c.Input["command"] = cmd
		return c
	}
	configDenyFn := func(_ context.Context, c Call) (Decision, string, error) {
		if c.Tool == "write" {
			return Deny, RuleFunction, nil
		}
		if c.Tool == "edit" {
			return RequireApproval, RuleFunction, nil
		}
		return Pass, "", nil
	}
	module := &FuncResolver{N: "my.policy", P: ConfigPriority, Fn: func(_ context.Context, c Call) (Decision, string, error) {
		if c.Tool == "ls" {
			return Deny, "my.policy", nil
		}
		return Pass, "", nil
	}}

	list, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{"$safe"}, Presets: denyRm, AutoApproveSandboxed: true, Modules: []Resolver{module}})
	fn, _ := setupChain(t, Setup{RequireApproval: true, AutoApproveFunc: configDenyFn, AutoApproveSandboxed: true})

	tests := []struct {
		name  string
		chain *Chain
		call  Call
		want  Decision
		by    string // resolver that must decide ("" = any)
	}{
		// Untrusted: approvals only from the user's resolvers.
		{"untrusted list cannot approve bash", list, call("bash", untrusted([]string{"bash", "$safe"})), RequireApproval, ""},
		{"untrusted list cannot approve a tool", list, call("calculator", untrusted([]string{"calculator"})), RequireApproval, ""},
		{"untrusted function cannot approve", list, call("write", untrustedFn(always(Approve))), RequireApproval, ""},
		{"untrusted list agreeing with the config", list, call("read", untrusted([]string{"read"})), Approve, ConfigName},
		{"untrusted list and the sandbox: both approve", list, call("bash", sandbox(untrusted([]string{"bash"}))), Approve, SandboxName},
		// The user's deny always stands.
		{"config deny rule beats an untrusted approval", list, bash("rm -rf ~", untrusted([]string{"bash"})), Deny, ConfigName},
		{"config deny rule beats a trusted approval", list, bash("rm -rf ~", trusted(untrusted([]string{"bash"}))), Deny, ConfigName},
		{"config deny of a tool beats a trusted approval", list, call("curl", trusted(untrusted([]string{"curl"}))), Deny, ConfigName},
		{"config function deny beats a trusted approval", fn, call("write", trusted(untrustedFn(always(Approve)))), Deny, ConfigName},
		{"config function require beats a trusted approval", fn, call("edit", trusted(untrustedFn(always(Approve)))), RequireApproval, ConfigName},
		{"module deny beats a trusted approval", list, call("ls", trusted(untrusted([]string{"ls"}))), Deny, "my.policy"},
		// Narrowing works, trusted or not.
		{"untrusted list narrows the config", list, call("grep", untrusted([]string{"read"})), RequireApproval, FrontmatterName},
		{"untrusted removal narrows the config", list, call("read", modify(untrusted([]string{"$safe"}, "read"))), RequireApproval, ""},
		{"untrusted function deny", list, call("read", untrustedFn(always(Deny))), Deny, FrontmatterName},
		{"untrusted function require", list, call("read", untrustedFn(always(RequireApproval))), RequireApproval, FrontmatterName},
		{"a failing frontmatter function narrows", list, call("read", untrustedFn(failing)), RequireApproval, FrontmatterName},
		{"an assigned list blocks the sandbox", list, call("bash", sandbox(trusted(untrusted([]string{"read"})))), RequireApproval, FrontmatterName},
		{"a modified list does not block the sandbox", list, call("bash", sandbox(modify(untrusted([]string{"$safe", "calculator"})))), Approve, SandboxName},
		// Trusted: the frontmatter approves what the user's resolvers leave open.
		{"trusted list approves", list, call("calculator", trusted(untrusted([]string{"calculator"}))), Approve, FrontmatterName},
		{"trusted function approves", fn, call("read", trusted(untrustedFn(always(Approve)))), Approve, FrontmatterName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.chain.Decide(context.Background(), tt.call)
			if o.Decision != tt.want || tt.by != "" && o.Resolver != tt.by {
				t.Errorf("Decide(%s) = %v, want %s by %q", tt.call.Tool, o, tt.want, tt.by)
			}
		})
	}
}
