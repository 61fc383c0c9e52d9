package approval

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func names(rs []Resolver) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name())
	}
	return out
}

func TestChainOrder(t *testing.T) {
	ch := NewChain(nil)
	for _, r := range []Resolver{
		fnResolver("b", 50, Pass),
		fnResolver("z", 100, Pass),
		fnResolver("a", 50, Pass),
		fnResolver("low", -5, Pass),
		fnResolver("high", 200, Pass),
		fnResolver("a.module.path", 100, Pass),
	} {
		ch.Register(r)
	}
	want := []string{"high", "a.module.path", "z", "a", "b", "low"}
	if got := names(ch.All()); !reflect.DeepEqual(got, want) {
		t.Errorf("All() = %v, want %v", got, want)
	}
	if ch.Count() != 6 {
		t.Errorf("Count() = %d, want 6", ch.Count())
	}
}

func TestChainFirstDecisionWins(t *testing.T) {
	var order []string
	rec := func(name string, prio int, d Decision) Resolver {
		return &FuncResolver{N: name, P: prio, Fn: func(context.Context, Call) (Decision, string, error) {
			order = append(order, name)
			return d, "rule-" + name, nil
		}}
	}
	ch := NewChain(nil)
	ch.Register(rec("c", 10, Approve))
	ch.Register(rec("a", 50, Pass))
	ch.Register(rec("b", 50, Deny))
	ch.Register(rec("d", 0, Approve))
	got := ch.Decide(context.Background(), call("x", Env{}))
	if want := (Outcome{Decision: Deny, Resolver: "b", Rule: "rule-b"}); got != want {
		t.Errorf("Decide = %v, want %v", got, want)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(order, want) {
		t.Errorf("evaluated %v, want %v (ties by name, stop at first decision)", order, want)
	}
}

func TestChainTiesByName(t *testing.T) {
	ch := NewChain(nil)
	ch.Register(fnResolver("zeta", 50, Deny))
	ch.Register(fnResolver("alpha", 50, Approve))
	if got := ch.Decide(context.Background(), call("x", Env{})); got.Resolver != "alpha" || got.Decision != Approve {
		t.Errorf("Decide = %v, want approve by alpha", got)
	}
}

func TestChainDefault(t *testing.T) {
	ch := NewChain(nil)
	got := ch.Decide(context.Background(), call("x", Env{}))
	if want := (Outcome{Decision: RequireApproval, Rule: RuleDefault}); got != want {
		t.Errorf("empty chain: Decide = %v, want %v", got, want)
	}
	ch.Register(fnResolver("p", 1, Pass))
	if got := ch.Decide(context.Background(), call("x", Env{})); got.String() != "require_approval by default" {
		t.Errorf("all pass: Decide = %q", got)
	}
}

func TestChainSkipsBrokenResolvers(t *testing.T) {
	tests := []struct {
		name    string
		fn      func(context.Context, Call) (Decision, string, error)
		wantLog string
	}{
		{"error", func(context.Context, Call) (Decision, string, error) { return Deny, "", errors.New("boom") },
			"approval: resolver 'broken' error: boom"},
		{"invalid", func(context.Context, Call) (Decision, string, error) { return Decision("maybe"), "", nil },
			`approval: resolver 'broken' error: returned invalid result "maybe"`},
		{"panic", func(context.Context, Call) (Decision, string, error) { panic("kaboom") },
			"approval: resolver 'broken' error: panic: kaboom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &logRecorder{}
			ch := NewChain(log.logf)
			ch.Register(&FuncResolver{N: "broken", P: 100, Fn: tt.fn})
			ch.Register(fnResolver("next", 50, Approve))
			if got := ch.Decide(context.Background(), call("x", Env{})); got.Resolver != "next" || got.Decision != Approve {
				t.Errorf("Decide = %v, want approve by next", got)
			}
			if log.String() != tt.wantLog {
				t.Errorf("log = %q, want %q", log.String(), tt.wantLog)
			}
		})
	}
}

func TestChainFailClosed(t *testing.T) {
	log := &logRecorder{}
	ch := NewChain(log.logf)
	ch.Register(&FuncResolver{N: "policy", P: 100, Fail: true, Fn: func(context.Context, Call) (Decision, string, error) {
		return Pass, "", errors.New("boom")
	}})
	ch.Register(NewCatchAll())
	got := ch.Decide(context.Background(), call("x", Env{}))
	if want := (Outcome{Decision: RequireApproval, Resolver: "policy", Rule: RuleError}); got != want {
		t.Errorf("Decide = %v, want %v", got, want)
	}
	if !strings.Contains(log.String(), "boom") {
		t.Errorf("error not logged: %q", log.String())
	}
}

func TestChainCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := NewChain(nil)
	ch.Register(&FuncResolver{N: "slow", P: 100, Fn: func(ctx context.Context, _ Call) (Decision, string, error) {
		cancel()
		return Pass, "", ctx.Err()
	}})
	ch.Register(NewCatchAll())
	got := ch.Decide(ctx, call("x", Env{}))
	if got.Decision != RequireApproval || got.Rule != RuleCanceled {
		t.Errorf("Decide = %v, want require_approval (canceled)", got)
	}
	if got := ch.Decide(ctx, call("x", Env{})); got.Decision != RequireApproval || got.Rule != RuleCanceled {
		t.Errorf("Decide with an ended context = %v, want require_approval (canceled)", got)
	}
}

func TestChainPriority200OverridesConfig(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{"$default"}},
		fnResolver("my_plugin:security_policy", 200, Deny))
	if got := ch.Decide(context.Background(), call("read", Env{})); got.Decision != Deny || got.Resolver != "my_plugin:security_policy" {
		t.Errorf("Decide = %v, want deny by my_plugin:security_policy", got)
	}
}

func TestChainRegisterReplaces(t *testing.T) {
	ch := NewChain(nil)
	ch.Register(fnResolver("p", 100, Deny))
	ch.Register(fnResolver("q", 60, Pass))
	ch.Register(fnResolver("p", 10, Approve))
	if ch.Count() != 2 {
		t.Fatalf("Count() = %d, want 2", ch.Count())
	}
	if got := names(ch.All()); !reflect.DeepEqual(got, []string{"q", "p"}) {
		t.Errorf("All() = %v, want [q p] (the replacement's priority counts)", got)
	}
	if got := ch.Decide(context.Background(), call("x", Env{})); got.Decision != Approve {
		t.Errorf("Decide = %v, want the replacement's approve", got)
	}
}

func TestChainUnregisterGetClear(t *testing.T) {
	ch := NewChain(nil)
	r := fnResolver("p", 1, Approve)
	ch.Register(r)
	if got, ok := ch.Get("p"); !ok || got != Resolver(r) {
		t.Errorf("Get(p) = %v, %v", got, ok)
	}
	if _, ok := ch.Get("nope"); ok {
		t.Error("Get(nope) found something")
	}
	if !ch.Unregister("p") {
		t.Error("Unregister(p) = false, want true")
	}
	if ch.Unregister("p") {
		t.Error("second Unregister(p) = true, want false")
	}
	if ch.Count() != 0 {
		t.Errorf("Count() = %d after Unregister", ch.Count())
	}
	ch.Register(r)
	ch.Clear()
	if ch.Count() != 0 {
		t.Errorf("Count() = %d after Clear", ch.Count())
	}
}

func TestChainAllIsACopy(t *testing.T) {
	ch := NewChain(nil)
	ch.Register(fnResolver("a", 1, Pass))
	all := ch.All()
	all[0] = fnResolver("evil", 999, Approve)
	if got := names(ch.All()); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("All() after mutating a copy = %v", got)
	}
}

func TestChainRegisterPanics(t *testing.T) {
	for name, r := range map[string]Resolver{"nil": nil, "no name": fnResolver("", 1, Pass)} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			NewChain(nil).Register(r)
		})
	}
}

func TestChainConcurrent(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{"$default"}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 200 {
				name := fmt.Sprintf("r%d-%d", i, j%5)
				ch.Register(fnResolver(name, j%100, Pass))
				ch.Unregister(name)
				_, _ = ch.Get(name)
				_ = ch.All()
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				if got := ch.Decide(context.Background(), call("read", Env{})); got.Decision != Approve {
					t.Errorf("Decide(read) = %v", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestFuncResolver(t *testing.T) {
	r := &FuncResolver{N: "m.path", P: 100, Desc: "module",
		Fn: func(context.Context, Call) (Decision, string, error) { return Approve, "module", nil }}
	// A frontmatter never makes the user's resolvers stand down.
	if d, _, _ := r.Resolve(context.Background(), call("x", Env{FrontmatterSet: true})); d != Approve {
		t.Errorf("resolver with frontmatter set = %q, want approve", d)
	}
	if r.Description() != "module" || r.FailClosed() {
		t.Errorf("Description/FailClosed = %q/%v", r.Description(), r.FailClosed())
	}
	if d, _, err := (&FuncResolver{N: "nil"}).Resolve(context.Background(), call("x", Env{})); d != Pass || err != nil {
		t.Errorf("nil Fn = %q, %v; want pass", d, err)
	}
}

func TestValidateLuaName(t *testing.T) {
	if err := ValidateLuaName("my_plugin:policy"); err != nil {
		t.Errorf("ValidateLuaName(ok) = %v", err)
	}
	err := ValidateLuaName("my.plugin")
	if err == nil || err.Error() != "approval resolver name 'my.plugin' must not contain dots (dots indicate module paths)" {
		t.Errorf("ValidateLuaName(dotted) = %v", err)
	}
	if ValidateLuaName("") == nil {
		t.Error("ValidateLuaName(\"\") = nil")
	}
}

func TestBuiltinsModules(t *testing.T) {
	mod := &FuncResolver{N: "my.policy", P: ConfigPriority,
		Fn: func(_ context.Context, c Call) (Decision, string, error) {
			if c.Tool == "bash" {
				return Deny, "", nil
			}
			return Pass, "", nil
		}}
	ch, _ := setupChain(t, Setup{RequireApproval: true, Modules: []Resolver{mod}, AutoApproveSandboxed: true})
	if got := names(ch.All()); !reflect.DeepEqual(got, []string{"my.policy", FrontmatterName, SandboxName}) {
		t.Errorf("All() = %v", got)
	}
	expect(t, ch, call("bash", sandboxOn), Deny)
	// The module's deny stands, whatever the buffer's frontmatter says
	// (issue 11, class 5).
	expect(t, ch, call("bash", Env{FrontmatterSet: true, FrontmatterTrusted: true, FrontmatterPolicy: (*Presets)(nil).Expand([]string{"bash"}, nil),
		SandboxEnabled: true, SandboxAvailable: true}), Deny)
}
