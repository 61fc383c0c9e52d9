package cycle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReviewedEdit: a reviewed full content becomes the smallest edit of a
// unique text that gives exactly that content.
func TestReviewedEdit(t *testing.T) {
	cases := []struct {
		name, old, reviewed string
		oldText, newText    string
		ok                  bool
	}{
		{"one line", "a\nb\nc\n", "a\nB\nc\n", "b\n", "B\n", true},
		{"widened until unique", "x\nsame\ny\nsame\nz\n", "x\nsame\ny\nSAME\nz\n", "same\n", "SAME\n", false},
		{"insertion", "a\nb\n", "a\nnew\nb\n", "a\nb\n", "a\nnew\nb\n", true},
		{"deletion", "a\nb\nc\n", "a\nc\n", "b\n", "", true},
		{"no final newline", "a\nb", "a\nc", "b", "c", true},
	}
	for _, c := range cases {
		oldText, newText, ok := reviewedEdit(c.old, c.reviewed)
		if !ok {
			t.Errorf("%s: no edit", c.name)
			continue
		}
		if countOverlapping(c.old, oldText) != 1 {
			t.Errorf("%s: oldText %q is not unique", c.name, oldText)
		}
		if got := strings.Replace(c.old, oldText, newText, 1); got != c.reviewed {
			t.Errorf("%s: the edit (%q → %q) gives %q, want %q", c.name, oldText, newText, got, c.reviewed)
		}
		if c.ok && (oldText != c.oldText || newText != c.newText) {
			t.Errorf("%s: edit %q → %q, want %q → %q", c.name, oldText, newText, c.oldText, c.newText)
		}
	}
	if _, _, ok := reviewedEdit("", "x\n"); ok {
		t.Errorf("an empty file has no unique text to edit")
	}
}

func TestJoinAs(t *testing.T) {
	for _, c := range []struct {
		lines []string
		like  string
		want  string
	}{
		{[]string{"a", "b"}, "x\n", "a\nb\n"},
		{[]string{"a", "b"}, "x", "a\nb"},
		{[]string{"a", "b"}, "x\r\ny\r\n", "a\r\nb\r\n"},
		{[]string{"a"}, "", "a\n"},
		{[]string{}, "x\n", ""},
	} {
		if got := joinAs(c.lines, []byte(c.like)); got != c.want {
			t.Errorf("joinAs(%q, %q) = %q, want %q", c.lines, c.like, got, c.want)
		}
	}
}

// A Lua tool with the "diff" capability: its pending call shows the diff
// of what its diff function says it would write; a review function takes
// the user's version (checked by asking the diff function again); without
// one the view is view only. The file is read after deny_read even with
// the sandbox disabled (the path is the model's), and a failing diff
// function is a line, not a crash.
func TestLuaToolDiff(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("SECRET KEY\n"), 0o600)
	env := newEnv(t, with(noSandbox(), script(t, turn{text: "ok"})))
	schema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "text": map[string]any{"type": "string"}}}
	var defs []any
	for _, d := range []struct {
		name         string
		diff, review bool
	}{{"save", true, true}, {"viewonly", true, false}, {"crashing", true, false}, {"liar", true, true}} {
		defs = append(defs, map[string]any{"name": d.name, "description": d.name, "input_schema": schema, "enabled": true,
			"capabilities": []any{"diff"}, "has_diff": d.diff, "has_review": d.review})
	}
	b, _ := json.Marshal(defs)
	if res, err := env.h.onDefineTools(string(b)); err != nil || len(res.Errors) > 0 {
		t.Fatalf("define: %+v %v", res, err)
	}
	os.WriteFile(filepath.Join(env.dir, "notes.txt"), []byte("a\nb\nc\n"), 0o644)
	use := func(name, id string, input map[string]any) string {
		j, _ := json.Marshal(input)
		return "**Tool Use:** `" + name + "` (`" + id + "`)\n\n```json\n" + string(j) + "\n```\n\n"
	}
	chat := "@You:\nhi\n\n@Assistant:\n" +
		use("save", "toolu_s", map[string]any{"path": "notes.txt", "text": "a\nB\nc\n"}) +
		use("viewonly", "toolu_v", map[string]any{"path": "notes.txt", "text": "a\nb\nC\n"}) +
		use("crashing", "toolu_c", map[string]any{"path": "notes.txt"}) +
		use("liar", "toolu_l", map[string]any{"path": "notes.txt", "text": "A\nb\nc\n"}) +
		use("save", "toolu_k", map[string]any{"path": "~/.ssh/id_ed25519", "text": "mine\n"})
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, chat)
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)

	env.ed.mu.Lock()
	marks := append([]Mark(nil), env.ed.bufs[1].marks...)
	env.ed.mu.Unlock()
	lines := strings.Split(env.ed.String(1), "\n")
	lineOf := func(id string) int {
		for i, l := range lines {
			if strings.Contains(l, "(`"+id+"`)") {
				return i + 1
			}
		}
		t.Fatalf("no call %s in:\n%s", id, env.ed.String(1))
		return 0
	}
	diffOf := func(id string) []string {
		// The preview mark of a call sits on its result's fence line (the
		// first preview mark after its Tool Result line).
		at := -1
		for i, l := range lines {
			if strings.Contains(l, "Tool Result:** `"+id+"`") {
				at = i
			}
		}
		var first *Mark
		for i, m := range marks {
			if m.Kind == "preview" && m.Line > at && (first == nil || m.Line < first.Line) {
				first = &marks[i]
			}
		}
		if first == nil {
			return nil
		}
		var out []string
		for _, l := range first.Lines {
			out = append(out, l.HL+"|"+l.Text)
		}
		return out
	}
	if got := strings.Join(diffOf("toolu_s"), "\n"); !strings.Contains(got, "DiffDelete|-b") || !strings.Contains(got, "DiffAdd|+B") {
		t.Errorf("save's diff:\n%s", got)
	}
	if got := strings.Join(diffOf("toolu_c"), "\n"); !strings.Contains(got, "its diff function failed: attempt to call a nil value") {
		t.Errorf("crashing's diff:\n%s", got)
	}
	if got := strings.Join(diffOf("toolu_k"), "\n"); !strings.Contains(got, "deny_read") || strings.Contains(got, "SECRET") {
		t.Errorf("the key's diff:\n%s", got)
	}
	if d, err := env.h.onDiffAt(1, lineOf("toolu_k")); err != nil || d.Phase == "diff" || strings.Contains(strings.Join(d.Old, ""), "SECRET") {
		t.Errorf("DiffAt on the key: %+v %v", d, err)
	}

	d, err := env.h.onDiffAt(1, lineOf("toolu_s"))
	if err != nil || d.Phase != "diff" || !d.Reviewable || d.Path != "notes.txt" || strings.Join(d.Old, ",") != "a,b,c" || strings.Join(d.New, ",") != "a,B,c" {
		t.Fatalf("DiffAt save: %+v %v", d, err)
	}
	if v, _ := env.h.onDiffAt(1, lineOf("toolu_v")); v.Phase != "diff" || v.Reviewable {
		t.Errorf("DiffAt viewonly: %+v", v)
	}
	if r, _ := env.h.onReview(1, "toolu_v", []string{"a", "b", "C", "D"}); !strings.Contains(r.Message, "takes no reviewed version") {
		t.Errorf("a modified review of a view-only call: %+v", r)
	}
	if r, _ := env.h.onReview(1, "toolu_l", []string{"A", "b", "c", "d"}); !strings.Contains(r.Message, "does not write your version") {
		t.Errorf("a review function that answers another input: %+v", r)
	}
	if r, _ := env.h.onReview(1, "toolu_s", []string{"a", "B", "c", "d"}); r.Phase != "status" {
		t.Fatalf("review of save: %+v\n%s", r, env.ed.String(1))
	}
	got := env.ed.String(1)
	if !strings.Contains(got, `{"path":"notes.txt","text":"a\nB\nc\nd\n"}`) {
		t.Errorf("the reviewed input is not the call's:\n%s", got)
	}
	if n := strings.Count(got, "status=approved"); n != 1 {
		t.Errorf("%d approved calls after one review:\n%s", n, got)
	}
}
