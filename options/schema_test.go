package options

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/frontmatter"
)

var updateLua = flag.Bool("update-lua", false, "write lua/flemma/schema.lua from the schema")

// lua/flemma/schema.lua is written from Schema (go generate ./options):
// the committed file is the current one.
func TestLuaSchemaIsCurrent(t *testing.T) {
	path := filepath.Join("..", LuaSchemaFile)
	want := LuaSchema()
	if *updateLua {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the schema's: run go generate ./options", LuaSchemaFile)
	}
}

// wrongValue is a value o does not take: the first of a string, a number,
// a boolean, a table of a key, that it refuses.
func wrongValue(o Option) any {
	for _, v := range []any{"two", 5.0, true, map[string]any{"x": 1.0}, -1.0, 1.5, []any{5.0}} {
		if !o.Check(v) {
			return v
		}
	}
	return nil
}

// Issue 27 #1, for every option: a value of the wrong type is reported
// once — its path, what it takes, the value given — and replaced by the
// default or the stricter choice; the chosen provider and a stricter
// auto_approve survive it.
func TestEveryOptionWrongValue(t *testing.T) {
	for _, o := range Schema {
		t.Run(o.Path, func(t *testing.T) {
			bad := wrongValue(o)
			if bad == nil {
				t.Fatalf("no value is wrong for %s: give it a type", o.Path)
			}
			tree := map[string]any{"provider": "openai", "tools": map[string]any{"auto_approve": []any{"$readonly"}}}
			setPath(tree, o.Path, bad)
			b, err := json.Marshal(tree)
			if err != nil {
				t.Fatal(err)
			}
			c, probs, err := Decode(string(b))
			if err != nil {
				t.Fatal(err)
			}
			if len(probs) != 1 || probs[0].Path != o.Path || probs[0].Want != o.Want() || probs[0].Got != gotString(bad) {
				t.Fatalf("problems = %v, want one for %s (expected %s, got %s)", probs, o.Path, o.Want(), gotString(bad))
			}
			msg := probs[0].String()
			for _, want := range []string{o.Path, o.Want(), gotString(bad)} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q does not say %q", msg, want)
				}
			}
			if o.Path != "provider" && c.Provider != "openai" {
				t.Errorf("provider = %q: lost with %s", c.Provider, o.Path)
			}
			if list, ok := c.AutoApproveList(); o.Path != "tools.auto_approve" && (!ok || !reflect.DeepEqual(list, []string{"$readonly"})) {
				t.Errorf("auto_approve = %v: lost with %s", list, o.Path)
			}
			// What replaced it: the stricter choice, else the default.
			tree = map[string]any{}
			setPath(tree, o.Path, bad)
			Validate(tree)
			got := getPath(tree, o.Path)
			want := o.Default
			switch {
			case o.Fallback != nil:
				want = o.Fallback
			case o.Keep == "strings":
				want = []string{}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s replaced by %v, want %v", o.Path, got, want)
			}
		})
	}
}

// The stricter fallbacks of approval and the sandbox, on values a user
// might write.
func TestStricterFallbacks(t *testing.T) {
	for _, tc := range []struct {
		setup string
		check func(c Config) bool
	}{
		{`{"tools":{"auto_approve":["$readonly",5]}}`, func(c Config) bool {
			l, ok := c.AutoApproveList()
			return ok && reflect.DeepEqual(l, []string{"$readonly"})
		}},
		{`{"tools":{"auto_approve":7}}`, func(c Config) bool { l, ok := c.AutoApproveList(); return ok && len(l) == 0 }},
		{`{"tools":{"auto_approve_sandboxed":"yes"}}`, func(c Config) bool { return *c.Tools.AutoApproveSandboxed == false }},
		{`{"tools":{"autopilot":"on"}}`, func(c Config) bool { return !Resolve(c, Runtime{}, Buffer{}).Autopilot }},
		{`{"tools":{"mode":"enable"}}`, func(c Config) bool { return c.Tools.Mode == "parse_only" }},
		{`{"sandbox":{"enabled":"no"}}`, func(c Config) bool { return Resolve(c, Runtime{}, Buffer{}).SandboxEnabled }},
		{`{"sandbox":{"network":"yes"}}`, func(c Config) bool { return *c.Sandbox.Network == false }},
		{`{"sandbox":{"deny_read":["~/secret",3]}}`, func(c Config) bool {
			return len(c.Sandbox.DenyRead) == len(DefaultDenyRead)+1 && c.Sandbox.DenyRead[len(DefaultDenyRead)] == "~/secret"
		}},
		{`{"sandbox":{"env_deny":"MY_*"}}`, func(c Config) bool { return reflect.DeepEqual(c.Sandbox.EnvDeny, DefaultEnvDeny) }},
		{`{"sandbox":{"writable":["/work",false]}}`, func(c Config) bool { return reflect.DeepEqual(c.Sandbox.Writable, []string{"/work"}) }},
	} {
		c, probs, err := Decode(tc.setup)
		if err != nil || len(probs) != 1 || !tc.check(c) {
			t.Errorf("%s: %v %v, config %+v", tc.setup, err, probs, c.Tools)
		}
	}
}

// The frontmatter's key tree (frontmatter.Keys) and the schema's scopes
// say the same: a file sets exactly the options whose scope is narrow or
// free, and none of the others.
func TestFrontmatterKeysMatchSchema(t *testing.T) {
	keys := frontmatter.Keys()
	// flemma.opt's own keys that are no option of setup(): the list of
	// the buffer's tools, and the shorthands of parameters.
	fmOnly := map[string]bool{"tools": true}
	// A key of the tree, or refused with a table above it; an option
	// the tree does not know is refused as unknown.
	settable := func(at string) bool {
		v, ok := keys[at]
		return ok && v
	}
	covered := map[string]bool{}
	for _, o := range Schema {
		at := o.Path
		if o.FM != "" {
			at = o.FM
		}
		covered[at] = true
		fileSets := o.Scope == Narrow || o.Scope == Free
		if got, ok := keys[at]; fileSets && (!ok || !got) {
			t.Errorf("%s: scope %s, but a frontmatter cannot set %s", o.Path, o.Scope, at)
		} else if !fileSets && settable(at) {
			t.Errorf("%s: scope %s, but a frontmatter sets %s", o.Path, o.Scope, at)
		}
	}
	for at, ok := range keys {
		if !ok || fmOnly[at] || covered[at] {
			continue
		}
		if o, found := Lookup("parameters." + at); found && (o.Scope == Free || o.Scope == Narrow) {
			continue // thinking = parameters.thinking
		}
		t.Errorf("a frontmatter sets %s, which the schema does not declare (or not as narrow/free)", at)
	}
}

// The help's option list (doc/flemma.txt) has every option, with the
// schema's default where it gives one.
func TestHelpListsEveryOption(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "doc", "flemma.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, o := range Schema {
		found := false
		for _, l := range lines {
			rest, ok := strings.CutPrefix(l, o.Path)
			if !ok || !(rest == "" || rest[0] == ' ' || o.Open && rest[0] == '.') {
				continue
			}
			found = true
			if rest == "" || rest[0] == '.' {
				break
			}
			rest = strings.TrimLeft(rest, " ")
			if strings.HasPrefix(rest, "`") {
				end := strings.Index(rest[1:], "`")
				if got, want := rest[1:1+end], luaLiteral(o.Default); got != want {
					t.Errorf("doc/flemma.txt: %s `%s`, the schema's default is %s", o.Path, got, want)
				}
			}
			break
		}
		if !found {
			t.Errorf("doc/flemma.txt does not list %s (a line starting with it)", o.Path)
		}
	}
}

// TestHelpOptionsAreInTheSchema is the other direction: every option the
// help's tables list with a default (a line "a.b.c `default` …") is one the
// schema declares, so setup accepts what the help documents (the keys
// keymaps.tool_approve_all and tool_reject_all were documented and
// refused as unknown).
func TestHelpOptionsAreInTheSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "doc", "flemma.txt"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^([a-z_]+(?:\\.[a-z_0-9]+)+)\\s+`")
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n++
		if !declared(m[1]) {
			t.Errorf("doc/flemma.txt lists %s, which the schema does not declare (setup would call it unknown)", m[1])
		}
	}
	if n < 50 {
		t.Fatalf("found only %d option rows in the help: the pattern is broken", n)
	}
}

// declared reports whether path is a schema option or lies under an open one.
func declared(path string) bool {
	for _, o := range Schema {
		if o.Path == path || o.Open && strings.HasPrefix(path, o.Path+".") {
			return true
		}
	}
	return false
}

// Config (what the host decodes) and the schema's options the host reads
// are the same keys: a field added to one and not the other fails here.
// paths is the plugin's own (Neovim's folders), not an option.
func TestConfigMatchesSchema(t *testing.T) {
	fields := map[string]bool{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			path := prefix + name
			if ft := t.Field(i).Type; ft.Kind() == reflect.Struct {
				walk(ft, path+".")
			} else {
				fields[path] = true
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	for _, o := range Schema {
		if !o.LuaOnly && !fields[o.Path] {
			t.Errorf("%s: the host reads it (not LuaOnly) but Config has no field for it", o.Path)
		}
		if o.LuaOnly && fields[o.Path] {
			t.Errorf("%s: LuaOnly, but Config decodes it", o.Path)
		}
		delete(fields, o.Path)
	}
	for f := range fields {
		if !strings.HasPrefix(f, "paths.") {
			t.Errorf("Config decodes %s, which the schema does not declare", f)
		}
	}
}

// The keys of an entry of providers, models and mcp_servers (Entries, which
// flemma.config checks) are the fields the host decodes.
func TestEntriesMatchConfig(t *testing.T) {
	for name, typ := range map[string]reflect.Type{"providers": reflect.TypeOf(ProviderConfig{}),
		"models": reflect.TypeOf(ModelOverride{}), "mcp_servers": reflect.TypeOf(MCPServer{})} {
		fields := map[string]bool{}
		for i := 0; i < typ.NumField(); i++ {
			n, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			fields[n] = true
		}
		for _, o := range Entries[name] {
			if !fields[o.Path] {
				t.Errorf("%s.<entry>.%s is checked but %s has no field for it", name, o.Path, typ.Name())
			}
			if wrongValue(o) == nil {
				t.Errorf("%s.<entry>.%s takes every value", name, o.Path)
			}
			delete(fields, o.Path)
		}
		for f := range fields {
			t.Errorf("%s decodes %s.<entry>.%s, which Entries does not declare", typ.Name(), name, f)
		}
	}
}

// The host's side for the keys of an entry: each wrong value is reported
// with its path and left out, and the setup's other keys stay.
func TestEveryEntryKeyWrongValue(t *testing.T) {
	for table, keys := range Entries {
		for _, o := range keys {
			bad := wrongValue(o)
			tree := map[string]any{"provider": "openai", table: map[string]any{"x": map[string]any{o.Path: bad}}}
			b, _ := json.Marshal(tree)
			c, probs, err := Decode(string(b))
			path := table + ".x." + o.Path
			if err != nil || len(probs) != 1 || probs[0].Path != path || c.Provider != "openai" {
				t.Errorf("%s = %v: %v %v, provider %q", path, bad, probs, err, c.Provider)
			}
		}
	}
}

// A table that holds options, given as something else (tools = "x"), is
// reported once and its options get their defaults; autopilot, given a
// wrong value, is off. The rest of the setup stays.
func TestEveryGroupWrongValue(t *testing.T) {
	groups := map[string]bool{}
	for _, o := range Schema {
		parts := strings.Split(o.Path, ".")
		for i := 1; i < len(parts); i++ {
			groups[strings.Join(parts[:i], ".")] = true
		}
	}
	for g := range groups {
		if _, isOption := Lookup(g); isOption {
			t.Errorf("%s is both an option and a table of options", g)
		}
		tree := map[string]any{"provider": "openai"}
		setPath(tree, g, "x")
		b, _ := json.Marshal(tree)
		c, probs, err := Decode(string(b))
		if err != nil || len(probs) != 1 || probs[0].Path != g || c.Provider != "openai" {
			t.Errorf("%s = \"x\": %v %v, provider %q", g, probs, err, c.Provider)
		}
		if g == "tools.autopilot" && Resolve(c, Runtime{}, Buffer{}).Autopilot {
			t.Errorf("tools.autopilot = \"x\" left autopilot on")
		}
	}
}

// The setup as the plugin sends it with every default (the schema's tree),
// decoded key by key: what each setup() costs the host.
func BenchmarkDecodeSetup(b *testing.B) {
	tree := map[string]any{}
	for _, o := range Schema {
		if !o.LuaOnly && o.Default != nil {
			setPath(tree, o.Path, o.Default)
		}
	}
	js, err := json.Marshal(tree)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, probs, err := Decode(string(js)); err != nil || len(probs) > 0 {
			b.Fatal(err, probs)
		}
	}
}
