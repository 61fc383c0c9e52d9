package approval

// Behaviours pinned by the Lua plugin's tests at the seed era
// (reference/seed-era.md §12, items 28–42), adapted to this API: setup
// config becomes a Setup, ctx.opts becomes Call.Env.

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var sandboxOn = Env{SandboxEnabled: true, SandboxAvailable: true}

// Item 28: a config list.
func TestEraConfigList(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{"calculator", "read"}})
	r, ok := ch.Get(ConfigName)
	if !ok || r.Priority() != 100 {
		t.Fatalf("Get(%s) = %v, %v; want priority 100", ConfigName, r, ok)
	}
	o := expect(t, ch, call("calculator", Env{}), Approve)
	if o.Resolver != ConfigName || o.Rule != "calculator" {
		t.Errorf("outcome = %v, want by config (calculator)", o)
	}
	expect(t, ch, call("read", Env{}), Approve)
	expect(t, ch, call("bash", Env{}), RequireApproval)

	empty, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{}})
	if _, ok := empty.Get(ConfigName); ok {
		t.Errorf("empty list registered a config resolver")
	}
	expect(t, empty, call("calculator", Env{}), RequireApproval)
}

// Item 29: the config function form.
func TestEraConfigFunction(t *testing.T) {
	tests := []struct {
		name string
		ret  any
		err  error
		want Decision
	}{
		{"true", true, nil, Approve},
		{"false", false, nil, RequireApproval},
		{"deny", "deny", nil, Deny},
		{"nil", nil, nil, RequireApproval},
		{"42", 42, nil, RequireApproval},
		{"throws", nil, errors.New("boom"), RequireApproval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen Call
			fn := func(ctx context.Context, c Call) (Decision, string, error) {
				seen = c
				return luaFunc(func(string, map[string]any) (any, error) { return tt.ret, tt.err })(ctx, c)
			}
			// Catch-all present: a throwing config function must still
			// end in require_approval (fail-closed), not fall to it.
			ch, log := setupChain(t, Setup{RequireApproval: tt.name != "throws", AutoApproveFunc: fn})
			in := call("calculator", Env{})
			in.Input["expression"] = "2+2"
			o := expect(t, ch, in, tt.want)
			if !reflect.DeepEqual(seen.Input, in.Input) || seen.Tool != "calculator" || seen.ID != "toolu_01" || seen.Bufnr != 1 {
				t.Errorf("function saw %+v, want the call unchanged", seen)
			}
			if tt.err != nil {
				if o.Resolver != ConfigName || o.Rule != RuleError {
					t.Errorf("outcome = %v, want require_approval by config (error)", o)
				}
				if !strings.Contains(log.String(), "boom") {
					t.Errorf("error not logged: %q", log.String())
				}
			}
		})
	}
}

// Item 30: auto_approve = 42 or "calculator" registers no config resolver.
func TestEraConfigOtherTypes(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true})
	if _, ok := ch.Get(ConfigName); ok {
		t.Fatal("config resolver registered without a list or function")
	}
	expect(t, ch, call("calculator", Env{}), RequireApproval)
}

// Item 31: require_approval = false.
func TestEraCatchAll(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: false})
	r, ok := ch.Get(CatchAllName)
	if !ok || r.Priority() != 0 {
		t.Fatalf("Get(%s) = %v, %v; want priority 0", CatchAllName, r, ok)
	}
	o := expect(t, ch, call("anything", Env{}), Approve)
	if o.String() != "approve by urn:flemma:approval:catch-all (require_approval = false)" {
		t.Errorf("String() = %q", o.String())
	}
	ch.Register(&FuncResolver{N: "security", P: 200, Fn: func(_ context.Context, c Call) (Decision, string, error) {
		if c.Tool == "bash" {
			return Deny, "no bash", nil
		}
		return Pass, "", nil
	}})
	o = expect(t, ch, call("bash", Env{}), Deny)
	if o.Resolver != "security" {
		t.Errorf("outcome = %v, want by security", o)
	}
	expect(t, ch, call("read", Env{}), Approve)

	gated, _ := setupChain(t, Setup{RequireApproval: true})
	if _, ok := gated.Get(CatchAllName); ok {
		t.Error("catch-all registered with require_approval = true")
	}
}

// Item 32: a frontmatter list.
func TestEraFrontmatterList(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true})
	env := fmList(nil, []string{"calculator", "read"})
	for _, tool := range []string{"calculator", "read"} {
		if o := expect(t, ch, call(tool, env), Approve); o.Resolver != FrontmatterName {
			t.Errorf("outcome = %v, want by frontmatter", o)
		}
	}
	expect(t, ch, call("bash", fmList(nil, []string{"calculator"})), RequireApproval)
	expect(t, ch, call("calculator", fmList(nil, []string{})), RequireApproval)
}

// Item 33: a frontmatter function.
func TestEraFrontmatterFunction(t *testing.T) {
	ch, log := setupChain(t, Setup{RequireApproval: true})
	policy := luaFunc(func(tool string, _ map[string]any) (any, error) {
		switch tool {
		case "calculator":
			return true, nil
		case "bash":
			return "deny", nil
		}
		return false, nil
	})
	env := Env{FrontmatterSet: true, FrontmatterReplaces: true, FrontmatterTrusted: true, FrontmatterFunc: policy}
	expect(t, ch, call("calculator", env), Approve)
	if o := expect(t, ch, call("bash", env), Deny); o.String() != "deny by urn:flemma:approval:frontmatter (function)" {
		t.Errorf("String() = %q", o.String())
	}
	expect(t, ch, call("read", env), RequireApproval)

	noop := Env{FrontmatterSet: true, FrontmatterReplaces: true, FrontmatterTrusted: true, FrontmatterFunc: luaFunc(func(string, map[string]any) (any, error) { return nil, nil })}
	expect(t, ch, call("calculator", noop), RequireApproval)

	boom := Env{FrontmatterSet: true, FrontmatterReplaces: true, FrontmatterTrusted: true, FrontmatterFunc: luaFunc(func(string, map[string]any) (any, error) {
		return nil, errors.New("boom")
	})}
	if o := expect(t, ch, call("calculator", boom), RequireApproval); o.Rule != RuleDefault {
		t.Errorf("outcome = %v, want the default (frontmatter skipped)", o)
	}
	if !strings.Contains(log.String(), "resolver '"+FrontmatterName+"' error: boom") {
		t.Errorf("log = %q", log.String())
	}
}

// Item 34: frontmatter (90) against a config function (100). Unlike the Lua
// plugin, the config's deny stands (issue 11, class 5: a file may only
// narrow the user's policy).
func TestEraFrontmatterOverConfig(t *testing.T) {
	denyCalc := luaFunc(func(tool string, _ map[string]any) (any, error) {
		if tool == "calculator" {
			return "deny", nil
		}
		return nil, nil
	})
	ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApproveFunc: denyCalc})
	if r, _ := ch.Get(FrontmatterName); r == nil || r.Priority() != 90 {
		t.Fatalf("frontmatter resolver = %v, want priority 90", r)
	}
	expect(t, ch, call("calculator", fmList(nil, []string{"calculator"})), Deny)
	expect(t, ch, call("calculator", Env{}), Deny)

	approveBash := luaFunc(func(tool string, _ map[string]any) (any, error) { return tool == "bash", nil })
	ch2, _ := setupChain(t, Setup{RequireApproval: true, AutoApproveFunc: approveBash})
	expect(t, ch2, call("bash", fmList(nil, []string{"calculator"})), RequireApproval)
	expect(t, ch2, call("bash", Env{}), Approve)
}

// Item 35: a frontmatter list replaces the config list.
func TestEraFrontmatterReplacesConfigList(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{"$default"}})
	env := fmList(nil, []string{"$readonly"})
	expect(t, ch, call("read", env), Approve)
	expect(t, ch, call("write", env), RequireApproval)
	empty := fmList(nil, []string{})
	expect(t, ch, call("read", empty), RequireApproval)
	expect(t, ch, call("write", empty), RequireApproval)
}

// Item 36: presets in the config list.
func TestEraConfigPresets(t *testing.T) {
	extra, errs := NewPresets(map[string]PresetDef{"$extra": {Approve: []string{"bash"}}}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tests := []struct {
		list []string
		tool string
		want Decision
	}{
		{[]string{"$default"}, "read", Approve},
		{[]string{"$default"}, "write", Approve},
		{[]string{"$default"}, "edit", Approve},
		{[]string{"$default"}, "bash", RequireApproval},
		{[]string{"$readonly"}, "read", Approve},
		{[]string{"$readonly"}, "write", RequireApproval},
		{[]string{"$readonly", "bash"}, "bash", Approve},
		{[]string{"$default", "$extra"}, "bash", Approve},
		{[]string{"$nonexistent", "read"}, "read", Approve},
		{[]string{"$nonexistent", "read"}, "write", RequireApproval},
	}
	for _, tt := range tests {
		ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: tt.list, Presets: extra})
		if got := ch.Decide(context.Background(), call(tt.tool, Env{})); got.Decision != tt.want {
			t.Errorf("%v: Decide(%s) = %v, want %s", tt.list, tt.tool, got, tt.want)
		}
	}
}

// Item 37: deny wins across presets.
func TestEraDenyWins(t *testing.T) {
	p, _ := NewPresets(map[string]PresetDef{
		"$yolo":    {Approve: []string{"bash"}},
		"$no-bash": {Deny: []string{"bash"}},
	}, nil)
	ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{"$yolo", "$no-bash"}, Presets: p})
	if o := expect(t, ch, call("bash", Env{}), Deny); o.Rule != "$no-bash" {
		t.Errorf("outcome = %v, want rule $no-bash", o)
	}
}

// Item 38: exclusions.
func TestEraExclusions(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true})
	env := fmList(nil, []string{"$default"}, "read")
	expect(t, ch, call("write", env), Approve)
	expect(t, ch, call("read", env), RequireApproval)
}

// Item 39: ListOption operations, as the frontmatter package hands them over.
func TestEraListOptionOperations(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{"$default"}})
	removeWrite := fmList(nil, []string{"$default"}, "write") // = {"$default"}; :remove("write")
	expect(t, ch, call("read", removeWrite), Approve)
	expect(t, ch, call("edit", removeWrite), Approve)
	expect(t, ch, call("write", removeWrite), RequireApproval)
	removeDefault := fmList(nil, []string{}) // :remove("$default") drops the entry
	expect(t, ch, call("read", removeDefault), RequireApproval)
	appendBash := fmList(nil, []string{"$default", "bash"}) // :append("bash")
	expect(t, ch, call("bash", appendBash), Approve)
}

// Item 40: the sandbox resolver approves.
func TestEraSandboxApproves(t *testing.T) {
	ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{"$default"}, AutoApproveSandboxed: true})
	if r, _ := ch.Get(SandboxName); r == nil || r.Priority() != 25 {
		t.Fatalf("sandbox resolver = %v, want priority 25", r)
	}
	o := expect(t, ch, call("bash", sandboxOn), Approve)
	if o.String() != "approve by urn:flemma:approval:sandbox (sandbox)" {
		t.Errorf("String() = %q", o.String())
	}
	expect(t, ch, call("calculator", sandboxOn), RequireApproval)
	custom := call("my_tool", sandboxOn)
	custom.Capabilities = []string{"other", CapSandboxed}
	expect(t, ch, custom, Approve)
	other := call("my_tool", sandboxOn)
	other.Capabilities = []string{"template_tool_result"}
	expect(t, ch, other, RequireApproval)
	for _, tool := range []string{"read", "write", "edit"} {
		if o := expect(t, ch, call(tool, sandboxOn), Approve); o.Resolver != ConfigName {
			t.Errorf("%s: outcome = %v, want by config", tool, o)
		}
	}
}

// Item 41: the sandbox resolver stands down.
func TestEraSandboxStandsDown(t *testing.T) {
	def := []string{"$default"}
	noBash, _ := NewPresets(map[string]PresetDef{"$no-bash": {Deny: []string{"bash"}}}, nil)
	tests := []struct {
		name  string
		setup Setup
		env   Env
		extra []Resolver
		want  Decision
	}{
		{"sandbox disabled", Setup{AutoApprove: def, AutoApproveSandboxed: true}, Env{SandboxAvailable: true}, nil, RequireApproval},
		{"no backend", Setup{AutoApprove: def, AutoApproveSandboxed: true}, Env{SandboxEnabled: true}, nil, RequireApproval},
		{"auto_approve_sandboxed = false", Setup{AutoApprove: def}, sandboxOn, nil, RequireApproval},
		{"no auto_approve configured", Setup{AutoApproveSandboxed: true}, sandboxOn, nil, RequireApproval},
		{"frontmatter remove(bash)", Setup{AutoApprove: def, AutoApproveSandboxed: true},
			Env{SandboxEnabled: true, SandboxAvailable: true, Exclusions: []string{"bash"}}, nil, RequireApproval},
		{"bash listed, sandbox off", Setup{AutoApprove: []string{"$default", "bash"}, AutoApproveSandboxed: true}, Env{}, nil, Approve},
		{"config preset denies bash", Setup{AutoApprove: []string{"$default", "$no-bash"}, AutoApproveSandboxed: true, Presets: noBash}, sandboxOn, nil, Deny},
		{"community resolver at 50", Setup{AutoApprove: def, AutoApproveSandboxed: true}, sandboxOn,
			[]Resolver{fnResolver("community", DefaultPriority, RequireApproval)}, RequireApproval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup.RequireApproval = true
			ch, _ := setupChain(t, tt.setup, tt.extra...)
			expect(t, ch, call("bash", tt.env), tt.want)
		})
	}
}

// Item 42: the preset registry.
func TestEraPresetRegistry(t *testing.T) {
	p, errs := NewPresets(nil, taggedBuiltins)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ro, _ := p.Get("$readonly")
	if want := []string{"read", "grep", "find", "ls", "diagnostics", "lsp", "buffers"}; !reflect.DeepEqual(ro.Approve, want) || ro.Deny != nil {
		t.Errorf("$readonly = %+v, want approve %v and no deny", ro, want)
	}
	def, _ := p.Get("$default")
	if want := []string{"read", "grep", "find", "ls", "diagnostics", "lsp", "buffers", "write", "edit"}; !reflect.DeepEqual(def.Approve, want) || def.Deny != nil {
		t.Errorf("$default = %+v, want approve %v and no deny", def, want)
	}

	over, _ := NewPresets(map[string]PresetDef{"$default": {Approve: []string{"bash"}}, "$yolo": {Approve: []string{"bash"}}}, nil)
	if got, _ := over.Get("$default"); !reflect.DeepEqual(got.Approve, []string{"bash"}) {
		t.Errorf("user $default = %v, want [bash]", got.Approve)
	}
	if got, want := over.Names(), []string{"$commands", "$default", "$files", "$readonly", "$yolo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}

	raw := map[string]any{
		"bad":   map[string]any{"approve": []any{"read"}},
		"$s":    map[string]any{"approve": "read"},
		"$d":    map[string]any{"deny": "bash"},
		"$good": map[string]any{"approve": []any{"read"}, "deny": []any{"bash"}},
	}
	defs, errs := DecodePresets(raw)
	_, errs2 := NewPresets(defs, nil)
	errs = append(errs, errs2...)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	want := []string{
		"Preset '$d' ignored — 'deny' must be a string[], got string",
		"Preset '$s' ignored — 'approve' must be a string[], got string",
		"Preset 'bad' ignored — preset keys must start with '$'",
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("errors = %q, want %q", msgs, want)
	}

	got, _ := p.Get("$default")
	got.Approve[0] = "mutated"
	if again, _ := p.Get("$default"); again.Approve[0] != "read" {
		t.Error("Get returned the registry's own slice")
	}
}
