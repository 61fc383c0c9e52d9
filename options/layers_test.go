package options

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/flemma-dev/flemma/frontmatter"
)

// Resolve's layers are the schema's options a frontmatter may set: every
// narrow or free option the host reads has one entry (but
// tools.auto_approve, which the approval layer merges with setup's), no
// entry is of another scope, and a narrow one says which value is the
// stricter.
func TestLayersMatchSchema(t *testing.T) {
	approvalMerges := map[string]bool{"tools.auto_approve": true}
	seen := map[string]bool{}
	for _, l := range layers {
		o := l.option()
		if seen[o.Path] {
			t.Errorf("%s: two layers", o.Path)
		}
		seen[o.Path] = true
		switch {
		case o.Scope != Narrow && o.Scope != Free:
			t.Errorf("%s: scope %s, but Resolve lets a frontmatter set it", o.Path, o.Scope)
		case o.Scope == Narrow && !l.narrows():
			t.Errorf("%s: narrow, but its layer does not say which value is the stricter", o.Path)
		case o.Scope == Free && l.narrows():
			t.Errorf("%s: free, but its layer has a stricter choice (never used)", o.Path)
		}
	}
	for _, o := range Schema {
		if (o.Scope == Narrow || o.Scope == Free) && !o.LuaOnly && !seen[o.Path] && !approvalMerges[o.Path] {
			t.Errorf("%s: a frontmatter may set it (scope %s), but Resolve has no layer for it", o.Path, o.Scope)
		}
	}
}

// The rule of each scope, on layers of its own: a free option takes the
// file's value (an open table merged); a narrow one only a stricter value,
// unless the buffer is trusted and the session did not choose it; an
// evenTrusted one never a looser value.
func TestFileRuleByScope(t *testing.T) {
	limit := func(scope Scope) *layered[int] {
		return &layered[int]{path: "test.limit", scope: scope,
			field:     func(r *resolving) *int { return &r.MaxTurns },
			inSession: func(rt Runtime) *int { return rt.MaxTokens },
			inFile:    func(o *frontmatter.Options) *int { return o.MaxTurns },
			stricter:  lowerLimit}
	}
	free, narrow := limit(Free), limit(Narrow)
	free.stricter = nil
	always := limit(Narrow).evenIfTrusted()
	for _, tc := range []struct {
		name           string
		l              *layered[int]
		setup, file    int
		trusted, chose bool
		want           int
	}{
		{"free: the file's", free, 10, 50, false, false, 50},
		{"free: the file's, lower", free, 10, 5, false, false, 5},
		{"free: the file's, though the session chose", free, 10, 50, false, true, 50},
		{"narrow: a higher limit is refused", narrow, 10, 50, false, false, 10},
		{"narrow: none (0) is refused", narrow, 10, 0, false, false, 10},
		{"narrow: a lower limit is taken", narrow, 10, 5, false, false, 5},
		{"narrow: a limit where setup has none", narrow, 0, 5, false, false, 5},
		{"narrow, trusted: a higher limit", narrow, 10, 50, true, false, 50},
		{"narrow, trusted: none", narrow, 10, 0, true, false, 0},
		{"narrow, trusted, the session chose: only lower", narrow, 10, 50, true, true, 10},
		{"narrow, trusted, the session chose: lower", narrow, 10, 5, true, true, 5},
		{"evenTrusted, trusted: a higher limit is refused", always, 10, 50, true, false, 10},
		{"evenTrusted, trusted: lower", always, 10, 5, true, false, 5},
	} {
		r := &resolving{}
		r.MaxTurns = tc.setup
		rt := Runtime{}
		if tc.chose {
			rt.MaxTokens = ptr(tc.setup)
		}
		tc.l.fromSession(r, rt)
		tc.l.fromFile(r, rt, Buffer{FM: &frontmatter.Options{MaxTurns: ptr(tc.file)}, Trusted: tc.trusted})
		if r.MaxTurns != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, r.MaxTurns, tc.want)
		}
		// a file that does not set it changes nothing
		r.MaxTurns = tc.setup
		tc.l.fromFile(r, rt, Buffer{FM: &frontmatter.Options{}, Trusted: tc.trusted})
		if r.MaxTurns != tc.setup {
			t.Errorf("%s: unset in the file: %d, want %d", tc.name, r.MaxTurns, tc.setup)
		}
	}

	// an open table is merged key by key; a nil one from setup too
	sec := field("parameters.openai", func(r *resolving) *map[string]any { return &r.openai }).
		file(func(o *frontmatter.Options) *map[string]any { return set(&o.OpenAI) })
	for _, base := range []map[string]any{nil, {"a": 1, "b": 1}} {
		r := &resolving{openai: base}
		sec.fromFile(r, Runtime{}, Buffer{FM: &frontmatter.Options{OpenAI: map[string]any{"b": 2}}})
		want := map[string]any{"b": 2}
		if base != nil {
			want["a"] = 1
		}
		if !reflect.DeepEqual(r.openai, want) || base != nil && base["b"] != 1 {
			t.Errorf("merged over %v: %v (setup's now %v)", base, r.openai, base)
		}
	}
}

// The stricter of two values of each kind of narrow option.
func TestStricter(t *testing.T) {
	for _, tc := range []struct{ a, b, want int }{{10, 5, 5}, {5, 10, 5}, {0, 5, 5}, {5, 0, 5}, {0, 0, 0}, {-1, 3, 3}, {3, -1, 3}} {
		if got := lowerLimit(tc.a, tc.b); got != tc.want {
			t.Errorf("lowerLimit(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	for _, a := range []bool{false, true} {
		for _, b := range []bool{false, true} {
			if stricterOff(a, b) != (a && b) || stricterOn(a, b) != (a || b) {
				t.Errorf("%v %v: off %v on %v", a, b, stricterOff(a, b), stricterOn(a, b))
			}
		}
	}
}

// The section of parameters each provider takes.
func TestParamsSection(t *testing.T) {
	cfg := setup(t, `{"providers":{"myresp":{"wire":"responses"},"gem":{"wire":"gemini"},"local":{},"claude2":{"wire":"anthropic"}}}`)
	for p, want := range map[string]string{"anthropic": "anthropic", "openai": "openai", "vertex": "vertex", "gemini": "vertex",
		"myresp": "openai", "gem": "vertex", "local": "chat_completions", "claude2": "anthropic", "copilot": "copilot"} {
		if got := paramsSection(cfg, p); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
}

// Resolve is called from several goroutines (the engine's buffers) and
// reuses its work struct: each call's answer is its own.
func TestResolveConcurrent(t *testing.T) {
	cfg := setup(t, `{"tools":{"max_concurrent":4},"parameters":{"openai":{"a":1}}}`)
	bufs := []Buffer{
		{FM: &frontmatter.Options{Provider: ptr("openai"), OpenAI: map[string]any{"b": 2}, MaxConcurrent: ptr(1)}, Usable: []string{"read"}},
		{FM: &frontmatter.Options{Autopilot: ptr(false), Tools: []string{"bash"}}, Trusted: true, Usable: []string{"bash", "read"}},
		{Usable: []string{"ls"}},
	}
	want := make([]Effective, len(bufs))
	for i, b := range bufs {
		want[i] = Resolve(cfg, Runtime{}, b)
	}
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for n := 0; n < 200; n++ {
				i := (g + n) % len(bufs)
				if got := Resolve(cfg, Runtime{}, bufs[i]); !reflect.DeepEqual(got, want[i]) {
					done <- fmt.Errorf("buffer %d: %+v, want %+v", i, got, want[i])
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// Resolve's cases of the rules above that TestResolve did not pin.
func TestResolveScopes(t *testing.T) {
	usable := []string{"bash", "read"}
	tests := []struct {
		name  string
		setup string
		rt    Runtime
		fm    *frontmatter.Options
		trust bool
		check func(t *testing.T, e Effective)
	}{
		{"sandbox: not even a trusted file turns it off", `{}`, Runtime{}, &frontmatter.Options{SandboxEnabled: ptr(false)}, true, func(t *testing.T, e Effective) {
			if !e.SandboxEnabled {
				t.Error("off")
			}
		}},
		{"limits: a file's max_turns of 0 is none, even trusted", `{"tools":{"autopilot":{"max_turns":10}}}`, Runtime{},
			&frontmatter.Options{MaxTurns: ptr(0)}, true, func(t *testing.T, e Effective) {
				if e.MaxTurns != 10 {
					t.Errorf("%+v", e)
				}
			}},
		{"limits: trusted lifts max_concurrent (0: unlimited)", `{"tools":{"max_concurrent":4}}`, Runtime{},
			&frontmatter.Options{MaxConcurrent: ptr(0)}, true, func(t *testing.T, e Effective) {
				if e.MaxConcurrent != 0 {
					t.Errorf("%+v", e)
				}
			}},
		{"a provider on the Responses wire takes parameters.openai, the file's merged", `{"parameters":{"openai":{"a":1}},"providers":{"myresp":{"wire":"responses"}}}`,
			Runtime{Provider: "myresp"}, &frontmatter.Options{OpenAI: map[string]any{"b": 2}}, false, func(t *testing.T, e Effective) {
				if !reflect.DeepEqual(e.Extra, map[string]any{"a": float64(1), "b": 2}) || e.Endpoint.Wire != "responses" {
					t.Errorf("extra %v endpoint %+v", e.Extra, e.Endpoint)
				}
			}},
		{"session choices, then the file's over them", `{"parameters":{"temperature":0.1,"cache_retention":"short"}}`,
			Runtime{Temperature: ptr(0.5), Thinking: ptr("low"), CacheRetention: ptr("long"), MaxTokens: ptr(7)},
			&frontmatter.Options{CacheRetention: ptr("none")}, false, func(t *testing.T, e Effective) {
				if *e.Temperature != 0.5 || e.Thinking != "low" || e.CacheRetention != "none" || e.MaxTokens != 7 {
					t.Errorf("%+v", e)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, Resolve(setup(t, tt.setup), tt.rt, Buffer{FM: tt.fm, Trusted: tt.trust, Usable: usable}))
		})
	}
}
