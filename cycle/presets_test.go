package cycle

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/tools/editor"
)

// The built-in presets as they were written before they were made of tags
// (issue 25 item 4): the registered built-ins must be decided exactly as
// these name lists decided them.
var presetsByName = map[string]approval.PresetDef{
	approval.PresetReadonly: {Approve: []string{"read", "grep", "find", "ls", "diagnostics", "lsp", "buffers"}},
	approval.PresetFiles:    {Approve: []string{"read", "grep", "find", "ls", "diagnostics", "lsp", "buffers", "write", "edit"}},
	approval.PresetCommands: {Approve: []string{"read", "grep", "find", "ls", "diagnostics", "lsp", "buffers", "write", "edit", "bash"}},
	approval.PresetDefault:  {Approve: []string{"read", "grep", "find", "ls", "diagnostics", "lsp", "buffers", "write", "edit"}},
}

func TestBuiltinPresetsByTag(t *testing.T) {
	env := newEnv(t, noSandbox())
	before, errs := approval.NewPresets(presetsByName, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	env.h.mu.Lock()
	after := env.h.presets
	env.h.mu.Unlock()
	// The editor's tools, registered where Neovim answers, too.
	for _, tl := range editor.All(asker{env.h}, env.h.editorOptions) {
		env.h.Registry.MustAdd(tl)
	}
	var names []string
	for _, tl := range env.h.Registry.All() {
		names = append(names, tl.Spec().Name)
	}
	for _, def := range presetsByName {
		for _, n := range def.Approve {
			if !slices.Contains(names, n) {
				t.Fatalf("%s is not registered: the table below would not check it", n)
			}
		}
	}
	lists := []struct{ list, exclusions []string }{
		{[]string{"$readonly"}, nil}, {[]string{"$files"}, nil}, {[]string{"$commands"}, nil},
		{[]string{"$default"}, nil}, {[]string{"$standard"}, nil}, {[]string{"$readonly", "bash"}, nil},
		{[]string{"read", "$default"}, nil}, {[]string{"$default", "read"}, nil},
		{[]string{"$default"}, []string{"write", "grep"}}, {[]string{"$commands"}, []string{"bash"}},
		{[]string{"$nope", "calculator"}, nil}, {nil, nil},
	}
	checked := 0
	for _, l := range lists {
		for _, name := range names {
			c := env.h.session(1).approvalCall(&buffer.ToolUse{ID: "toolu_1", Name: name, Args: map[string]any{"command": "ls", "path": "x"}}, nil)
			wd, wr := before.Expand(l.list, l.exclusions).Decide(c)
			gd, gr := after.Expand(l.list, l.exclusions).Decide(c)
			if gd != wd || gr != wr {
				t.Errorf("%v minus %v: %s = %s %q, was %s %q", l.list, l.exclusions, name, gd, gr, wd, wr)
			}
			if wd == approval.Approve {
				checked++
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d approvals compared", checked)
	}
}

// A new tool that declares the readonly tag is in $readonly, $files,
// $commands and $default (the default policy) without any preset naming it,
// and :Flemma tools lists it in them.
func TestNewReadonlyToolInPresets(t *testing.T) {
	env := newEnv(t, noSandbox())
	defs, _ := json.Marshal([]any{
		map[string]any{"name": "word_count", "description": "Count words.", "input_schema": map[string]any{"type": "object", "properties": []any{}},
			"enabled": true, "open_schema": true, "tags": []any{"text", "readonly"}},
		map[string]any{"name": "word_write", "description": "Write words.", "input_schema": map[string]any{"type": "object", "properties": []any{}},
			"enabled": true, "open_schema": true, "tags": []any{"text"}},
	})
	if res, err := env.h.onDefineTools(string(defs)); err != nil || len(res.Errors) > 0 {
		t.Fatalf("define: %+v %v", res, err)
	}
	decide := func(tool string) approval.Outcome {
		return env.h.chain.Decide(context.Background(), env.h.session(1).approvalCall(&buffer.ToolUse{ID: "toolu_1", Name: tool, Args: map[string]any{}}, nil))
	}
	if o := decide("word_count"); o.Decision != approval.Approve || o.Rule != "$default" {
		t.Errorf("word_count (tagged readonly) under the default policy: %v", o)
	}
	if o := decide("word_write"); o.Decision == approval.Approve {
		t.Errorf("word_write (not tagged readonly) approved: %v", o)
	}
	res, err := env.h.onTools(1, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(res.Text, "\n") {
		if strings.HasPrefix(line, "  $") && !strings.Contains(line, "word_count") {
			t.Errorf("a built-in preset does not list word_count: %q", line)
		}
	}
}
