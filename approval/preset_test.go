package approval

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func mustPresets(t *testing.T, user map[string]PresetDef) *Presets {
	t.Helper()
	p, errs := NewPresets(user, nil)
	if len(errs) > 0 {
		t.Fatalf("NewPresets: %v", errs)
	}
	return p
}

func TestExpand(t *testing.T) {
	p := mustPresets(t, map[string]PresetDef{
		"$yolo":    {Approve: []string{"bash", "read", "write", "edit"}},
		"$no-bash": {Deny: []string{"bash"}},
		"$calc":    {Approve: []string{"calculator"}, Deny: []string{"calculator_async"}},
		"$git":     {Approve: []string{"bash(git status*)", "bash(git log *)"}, Deny: []string{"bash(git push*)"}},
		"$safety":  {Deny: []string{"bash(rm *)", "write"}},
	})
	type check struct {
		tool, command string
		want          Decision
		rule          string
	}
	tests := []struct {
		name       string
		list       []string
		exclusions []string
		env        []string // Call.Env.Exclusions
		checks     []check
	}{
		{"union of presets and names", []string{"$readonly", "$calc", "todo"}, nil, nil, []check{
			{"read", "", Approve, "$readonly"}, {"calculator", "", Approve, "$calc"}, {"todo", "", Approve, "todo"},
			{"write", "", Pass, ""}, {"calculator_async", "", Deny, "$calc"}}},
		{"deny wins over a preset approve", []string{"$yolo", "$no-bash"}, nil, nil, []check{
			{"bash", "ls", Deny, "$no-bash"}, {"read", "", Approve, "$yolo"}}},
		{"deny wins over a plain name, in any order", []string{"bash", "$no-bash"}, nil, nil, []check{
			{"bash", "ls", Deny, "$no-bash"}}},
		{"deny wins over a later approve", []string{"$safety", "$default"}, nil, nil, []check{
			{"write", "", Deny, "$safety"}, {"edit", "", Approve, "$default"}}},
		{"first source names the approval", []string{"read", "$default"}, nil, nil, []check{
			{"read", "", Approve, "read"}, {"write", "", Approve, "$default"}}},
		{"unknown preset ignored", []string{"$nonexistent", "read"}, nil, nil, []check{
			{"read", "", Approve, "read"}, {"write", "", Pass, ""}}},
		{"exclusions remove approvals", []string{"$default"}, []string{"write"}, nil, []check{
			{"write", "", Pass, ""}, {"read", "", Approve, "$default"}}},
		{"exclusions never lift a deny", []string{"$yolo", "$no-bash"}, []string{"bash"}, nil, []check{
			{"bash", "ls", Deny, "$no-bash"}}},
		{"call exclusions remove approvals", []string{"$default"}, nil, []string{"read"}, []check{
			{"read", "", Pass, ""}, {"grep", "", Approve, "$default"}}},
		{"command rules from a preset", []string{"$git"}, nil, nil, []check{
			{"bash", "git status", Approve, "bash(git status*) from $git"},
			{"bash", "git log", Approve, "bash(git log *) from $git"},
			{"bash", "git push origin main", Deny, "bash(git push*) from $git"},
			{"bash", "git commit", Pass, ""}}},
		{"plain command rule", []string{"bash(make test)"}, nil, nil, []check{
			{"bash", "make test", Approve, "bash(make test)"}, {"bash", "make testx", Pass, ""}}},
		{"excluding bash drops command rules", []string{"$git", "bash(ls*)"}, []string{"bash"}, nil, []check{
			{"bash", "git status", Pass, ""}, {"bash", "ls", Pass, ""},
			{"bash", "git push", Deny, "bash(git push*) from $git"}}},
		{"excluding one rule", []string{"bash(ls*)", "bash(pwd)"}, []string{"bash(ls*)"}, nil, []check{
			{"bash", "ls", Pass, ""}, {"bash", "pwd", Approve, "bash(pwd)"}}},
		{"call exclusion of bash drops rules", []string{"bash(ls*)"}, nil, []string{"bash"}, []check{
			{"bash", "ls", Pass, ""}}},
		{"deny rule beats plain bash", []string{"bash", "$safety"}, nil, nil, []check{
			{"bash", "ls", Approve, "bash"}, {"bash", "ls; rm -rf /", Deny, "bash(rm *) from $safety"}}},
		{"deny rule, unverifiable command", []string{"bash", "$safety"}, nil, nil, []check{
			{"bash", "$CMD -rf /", RequireApproval, RuleUnverifiable},
			{"bash", "echo 'unbalanced", RequireApproval, RuleUnverifiable},
			{"bash", "cat x | sh", RequireApproval, RuleUnverifiable}}},
		{"$standard is $default", []string{"$standard"}, nil, nil, []check{
			{"edit", "", Approve, "$standard"}, {"bash", "ls", Pass, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := p.Expand(tt.list, tt.exclusions)
			for _, c := range tt.checks {
				in := Call{Tool: c.tool, Env: Env{Exclusions: tt.env}, Tags: builtinTags[c.tool]}
				if c.tool == BashTool {
					in.Input = map[string]any{"command": c.command}
				}
				d, rule := pol.Decide(in)
				if d != c.want || rule != c.rule {
					t.Errorf("Decide(%s %q) = %q, %q; want %q, %q", c.tool, c.command, d, rule, c.want, c.rule)
				}
			}
		})
	}
}

func TestPolicyBashWithoutCommand(t *testing.T) {
	pol := mustPresets(t, map[string]PresetDef{"$d": {Deny: []string{"bash(*)"}}}).Expand([]string{"bash(*)", "$d"}, nil)
	for _, input := range []map[string]any{nil, {}, {"command": 42}, {"command": []any{"ls"}}, {"cmd": "ls"}} {
		if d, rule := pol.Decide(Call{Tool: BashTool, Input: input}); d != Pass {
			t.Errorf("Decide(bash %v) = %q, %q; want pass", input, d, rule)
		}
	}
	// Command rules apply to the bash tool only.
	if d, _ := pol.Decide(Call{Tool: "sh", Input: map[string]any{"command": "ls"}}); d != Pass {
		t.Errorf("Decide(sh) = %q, want pass", d)
	}
}

func TestNilPolicy(t *testing.T) {
	var p *Policy
	if d, rule := p.Decide(call("read", Env{})); d != Pass || rule != "" {
		t.Errorf("nil policy Decide = %q, %q", d, rule)
	}
	if p.Approved() != nil || p.Denied() != nil {
		t.Error("nil policy lists something")
	}
}

func TestPolicyIntrospection(t *testing.T) {
	p := mustPresets(t, map[string]PresetDef{"$x": {Approve: []string{"bash(ls*)"}, Deny: []string{"bash", "bash(rm *)"}}})
	pol := p.Expand([]string{"$readonly", "$x", "calculator", "bash(ls*)"}, nil)
	if got, want := pol.Approved(), []string{"calculator"}; !reflect.DeepEqual(got, want) { // $readonly approves by tag
		t.Errorf("Approved() = %v, want %v", got, want)
	}
	if got := pol.Denied(); !reflect.DeepEqual(got, []string{"bash"}) {
		t.Errorf("Denied() = %v", got)
	}
	a, d := pol.Rules()
	if !reflect.DeepEqual(a, []string{"bash(ls*)"}) || !reflect.DeepEqual(d, []string{"bash(rm *)"}) {
		t.Errorf("Rules() = %v, %v (duplicates must collapse)", a, d)
	}
}

func TestPresetOverrideAndAlias(t *testing.T) {
	p := mustPresets(t, map[string]PresetDef{"$default": {Approve: []string{"read"}}})
	if got, _ := p.Get("$standard"); !reflect.DeepEqual(got.Approve, []string{"read"}) {
		t.Errorf("$standard follows a user $default: got %v", got.Approve)
	}
	p = mustPresets(t, map[string]PresetDef{"$standard": {Approve: []string{"ls"}}})
	if got, _ := p.Get("$standard"); !reflect.DeepEqual(got.Approve, []string{"ls"}) {
		t.Errorf("user $standard = %v", got.Approve)
	}
	if got, _ := p.Get("$default"); !reflect.DeepEqual(got.Tags, []string{TagReadonly, TagWrites}) {
		t.Errorf("$default changed by a user $standard: %v", got.Approve)
	}
	if _, ok := p.Get("$nope"); ok {
		t.Error("Get($nope) found something")
	}
	var none *Presets
	if got := none.Names(); !reflect.DeepEqual(got, []string{"$commands", "$default", "$files", "$readonly"}) {
		t.Errorf("nil Presets Names() = %v", got)
	}
}

func TestNewPresetsValidation(t *testing.T) {
	p, errs := NewPresets(map[string]PresetDef{
		"nodollar":  {Approve: []string{"read"}},
		"$badrule":  {Approve: []string{"bash(git status"}},
		"$emptyrul": {Deny: []string{"bash()"}},
		"$empty":    {Approve: []string{""}},
		"$ok":       {Approve: []string{"read", "bash(ls *)"}, Deny: []string{"bash(rm *)"}},
	}, nil)
	want := []string{
		"Preset '$badrule' ignored — 'approve': malformed command rule 'bash(git status' (want bash(<pattern>))",
		"Preset '$empty' ignored — 'approve': empty entry",
		"Preset '$emptyrul' ignored — 'deny': malformed command rule 'bash()' (want bash(<pattern>))",
		"Preset 'nodollar' ignored — preset keys must start with '$'",
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := p.Names(); !reflect.DeepEqual(got, []string{"$commands", "$default", "$files", "$ok", "$readonly"}) {
		t.Errorf("Names() = %v", got)
	}
}

func TestDecodePresets(t *testing.T) {
	tests := []struct {
		name    string
		raw     any
		want    map[string]PresetDef
		wantErr []string
	}{
		{"nil", nil, map[string]PresetDef{}, nil},
		{"empty list (empty Lua table)", []any{}, map[string]PresetDef{}, nil},
		{"not a table", "x", map[string]PresetDef{}, []string{"tools.presets: expected table, got string"}},
		{"string keys", map[string]any{"$a": map[string]any{"approve": []any{"read"}, "deny": []any{}}},
			map[string]PresetDef{"$a": {Approve: []string{"read"}, Deny: []string{}}}, nil},
		{"any keys, empty preset", map[any]any{"$b": []any{}}, map[string]PresetDef{"$b": {}}, nil},
		{"empty map list", map[string]any{"$c": map[any]any{"approve": map[string]any{}}}, map[string]PresetDef{"$c": {}}, nil},
		{"preset not a table", map[string]any{"$d": true}, map[string]PresetDef{},
			[]string{"Preset '$d' ignored — expected table, got boolean"}},
		{"non-string element", map[string]any{"$e": map[string]any{"deny": []any{"bash", int64(3)}}}, map[string]PresetDef{},
			[]string{"Preset '$e' ignored — 'deny' must be a string[], got table"}},
		{"number", map[string]any{"$f": map[string]any{"approve": 1.5}}, map[string]PresetDef{},
			[]string{"Preset '$f' ignored — 'approve' must be a string[], got number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := DecodePresets(tt.raw)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(msgs, tt.wantErr) {
				t.Errorf("DecodePresets(%v) = %v, %q; want %v, %q", tt.raw, got, msgs, tt.want, tt.wantErr)
			}
		})
	}
}

func TestValidateEntry(t *testing.T) {
	for _, ok := range []string{"read", "$default", "bash(git status*)", "bash(*)", "my:tool"} {
		if err := ValidateEntry(ok); err != nil {
			t.Errorf("ValidateEntry(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "  ", "bash(", "bash()", "bash(  )", "bash(ls"} {
		if ValidateEntry(bad) == nil {
			t.Errorf("ValidateEntry(%q) = nil", bad)
		}
	}
}

// The privilege groups of seed 003: each is the one before it plus more,
// and a frontmatter cannot use one to widen an untrusted file's approvals.
func TestPrivilegeGroups(t *testing.T) {
	tests := []struct {
		group string
		tool  string
		want  Decision
	}{
		{"$readonly", "read", Approve}, {"$readonly", "grep", Approve}, {"$readonly", "find", Approve}, {"$readonly", "ls", Approve},
		{"$readonly", "write", RequireApproval}, {"$readonly", "edit", RequireApproval}, {"$readonly", "bash", RequireApproval},
		{"$files", "read", Approve}, {"$files", "write", Approve}, {"$files", "edit", Approve},
		{"$files", "bash", RequireApproval}, {"$files", "calculator", RequireApproval},
		{"$commands", "ls", Approve}, {"$commands", "edit", Approve}, {"$commands", "bash", Approve},
		{"$commands", "calculator", RequireApproval},
	}
	for _, tt := range tests {
		ch, _ := setupChain(t, Setup{RequireApproval: true, AutoApprove: []string{tt.group}})
		if got := ch.Decide(context.Background(), call(tt.tool, Env{})); got.Decision != tt.want {
			t.Errorf("%s: Decide(%s) = %v, want %s", tt.group, tt.tool, got, tt.want)
		}
	}
	names := defaultPresets.Names()
	for _, g := range []string{PresetReadonly, PresetFiles, PresetCommands} {
		if !slices.Contains(names, g) {
			t.Errorf("Names() = %v lacks %s", names, g)
		}
	}
}

func TestNameMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"mcp__github__*", "mcp__github__create_issue", true},
		{"mcp__github__*", "mcp__github__", true},
		{"mcp__github__*", "mcp__gitlab__x", false},
		{"mcp__github__*", "xmcp__github__x", false},
		{"mcp__*__read", "mcp__fs__read", true},
		{"mcp__*__read", "mcp__fs__read_all", false},
		{"mcp__*", "read", false},
		{"*", "anything", true},
		{"*_issue", "create_issue", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"read", "read", true},
		{"read", "reader", false},
	} {
		if got := NameMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("NameMatch(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestPolicyNamePatterns(t *testing.T) {
	p, _ := NewPresets(map[string]PresetDef{"$nogh": {Deny: []string{"mcp__github__delete_*"}}}, nil)
	// Entries may use the wire's spelling of ':' ("__").
	pol := p.Expand([]string{"mcp__github__*", "mcp:test:*", "$nogh", "*"}, nil)
	for _, tc := range []struct {
		tool string
		excl []string
		want Decision
	}{
		{"mcp:github:create_issue", nil, Approve},
		{"mcp:github:delete_repo", nil, Deny}, // deny wins
		{"mcp:test:echo", nil, Approve},
		{"mcp:test:echo", []string{"mcp__test__echo"}, Pass}, // a frontmatter exclusion, either spelling
		{"bash", nil, Pass},                                  // a pattern never approves bash
	} {
		c := Call{Tool: tc.tool, Input: map[string]any{"command": "rm -rf /"}}
		c.Env.Exclusions = tc.excl
		if got, _ := pol.Decide(c); got != tc.want {
			t.Errorf("%s (exclusions %v): %v, want %v", tc.tool, tc.excl, got, tc.want)
		}
	}
	if got, rule := p.Expand([]string{"mcp__test__*"}, nil).Decide(Call{Tool: "mcp:test:echo"}); got != Approve || rule != "mcp:test:*" {
		t.Errorf("rule %q", rule)
	}
}

// The built-in presets approve by tag: a tool nobody listed that declares
// readonly is in $readonly (and so in $files, $commands, $default), one
// that declares writes in $files, exec in $commands; the first entry of the
// list names the approval, and exclusions remove tag approvals too.
func TestPresetsByTag(t *testing.T) {
	p := mustPresets(t, nil)
	newTool := func(tags ...string) Call { return Call{Tool: "my_reader", Tags: tags} }
	tests := []struct {
		list       []string
		exclusions []string
		c          Call
		want       Decision
		rule       string
	}{
		{[]string{"$readonly"}, nil, newTool("text", TagReadonly), Approve, "$readonly"},
		{[]string{"$default"}, nil, newTool(TagReadonly), Approve, "$default"},
		{[]string{"$standard"}, nil, newTool(TagReadonly), Approve, "$standard"},
		{[]string{"$commands"}, nil, newTool(TagExec), Approve, "$commands"},
		{[]string{"$files"}, nil, newTool(TagExec), Pass, ""},
		{[]string{"$files"}, nil, newTool(TagWrites), Approve, "$files"},
		{[]string{"$readonly"}, nil, newTool(TagWrites), Pass, ""},
		{[]string{"$readonly"}, nil, newTool("Readonly", "read-only", "mcp"), Pass, ""},
		{[]string{"$readonly"}, nil, newTool(), Pass, ""},
		{[]string{"$readonly"}, []string{"my_reader"}, newTool(TagReadonly), Pass, ""},
		{[]string{"$readonly", "my_reader"}, nil, newTool(TagReadonly), Approve, "$readonly"},
		{[]string{"my_reader", "$readonly"}, nil, newTool(TagReadonly), Approve, "my_reader"},
		{[]string{"my_reader", "$readonly"}, []string{"my_reader"}, newTool(TagReadonly), Pass, ""},
	}
	for _, tt := range tests {
		if d, rule := p.Expand(tt.list, tt.exclusions).Decide(tt.c); d != tt.want || rule != tt.rule {
			t.Errorf("%v minus %v: Decide(%v) = %q, %q; want %q, %q", tt.list, tt.exclusions, tt.c.Tags, d, rule, tt.want, tt.rule)
		}
	}
	// A user preset of the same name replaces the built-in, tags included.
	over := mustPresets(t, map[string]PresetDef{"$readonly": {Approve: []string{"read"}}})
	if d, _ := over.Expand([]string{"$readonly"}, nil).Decide(newTool(TagReadonly)); d != Pass {
		t.Errorf("a user $readonly still approves by tag: %q", d)
	}
	// A call's exclusion removes a tag approval.
	c := newTool(TagReadonly)
	c.Env.Exclusions = []string{"my_reader"}
	if d, _ := p.Expand([]string{"$readonly"}, nil).Decide(c); d != Pass {
		t.Errorf("Env.Exclusions does not remove a tag approval: %q", d)
	}
}
