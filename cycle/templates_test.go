package cycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// include() reads by the rules of a user's @ reference: relative to the
// chat's folder (a file's own include() from its folder), text only, at
// most maxIncludeBytes, redacted; in a buffer that is not trusted a file
// outside the project is asked about (:Flemma attach:allow) before it is
// read. Each failure stops the send with its line.
func TestTemplateInclude(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	env, prov := attachEnv(t, noSandbox())
	write := func(name, text string) {
		p := filepath.Join(env.dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("parts/a.md", "A{{ include('b.md', { x = 2 }) }}")
	write("parts/b.md", "B{{ x * 21 }} ghp_abcdefghijklmnopqrstuvwxyz0123456789")
	write("big.md", strings.Repeat("x", maxIncludeBytes+1))
	write("shot.png", string(pngBytes))
	os.WriteFile(filepath.Join(home, "notes.md"), []byte("from home"), 0o644)

	for i, c := range []struct{ expr, want string }{
		{"include('nope.md')", "line 2: {{ include('nope.md') }}: Lua error: include('nope.md'): file not found"},
		{"include('big.md')", "larger than"},
		{"include('shot.png')", "is not a template (attach it with @shot.png instead)"},
		{"include('')", "empty path"},
		{"include('parts')", "is a directory"},
	} {
		env.ed.load(10+i, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\n{{ "+c.expr+" }}\n")
		env.ed.trust(10 + i)
		if phase, msg := env.press(10 + i); phase != "send" || !strings.Contains(msg, c.want) {
			t.Errorf("%s: press: %s %q, want %q", c.expr, phase, msg, c.want)
		}
	}
	if n := len(prov.requests()); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}

	// Nested, relative to the including file, redacted by shape.
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\n{{ include('./parts/a.md') }}\n")
	env.ed.trust(1)
	if phase, msg := env.press(1); phase != "send" || msg != "" {
		t.Fatalf("press: %s %q", phase, msg)
	}
	env.ed.waitText(t, 1, "Seen.")
	env.ed.waitIdle(t, env.h, 1)
	got := requestText(prov.requests()[0])
	if !strings.Contains(got, "AB42 ") || strings.Contains(got, "ghp_abcdefghijklmnopqrstuvwxyz0123456789") {
		t.Errorf("request text:\n%s", got)
	}

	// Not trusted: a file outside the project asks first.
	env.ed.load(2, filepath.Join(env.dir, "d.chat"), env.dir, "@You:\n{{ include('~/notes.md') }}\n")
	phase, msg := env.press(2)
	if phase != "send" || !strings.Contains(msg, ":Flemma attach:allow") {
		t.Fatalf("untrusted: press: %s %q", phase, msg)
	}
	if r, err := env.h.onAttachAllow(2); err != nil || r.Phase != "send" {
		t.Fatalf("attach:allow: %+v %v", r, err)
	}
	env.ed.waitText(t, 2, "Seen.")
	env.ed.waitIdle(t, env.h, 2)
	reqs := prov.requests()
	if got := requestText(reqs[len(reqs)-1]); !strings.Contains(got, "from home") {
		t.Errorf("after attach:allow:\n%s", got)
	}
}

// {% %} blocks around text and file references: a loop repeats a
// reference (sent once, then "the same file as attached above"), a branch
// not taken drops it (so the later reference is the one that attaches it),
// a global a block sets reaches the next message of the send.
func TestTemplateStatements(t *testing.T) {
	env, prov := attachEnv(t, noSandbox())
	os.WriteFile(filepath.Join(env.dir, "n.txt"), []byte("note"), 0o644)
	text := "```lua\nitems = { 'a', 'b' }\n```\n@You:\n{% shared = 'kept' %}{% for _, it in ipairs(items) do %}[{{ it }}]{% end %}" +
		"{% if false then %}@./n.txt{% end %}\n\n@Assistant:\nok\n\n@You:\n{{ shared }} {% for i = 1, 2 do %}@./n.txt {% end %}\n"
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, text)
	env.ed.trust(1)
	if phase, msg := env.press(1); phase != "send" || msg != "" {
		t.Fatalf("press: %s %q", phase, msg)
	}
	env.ed.waitText(t, 1, "Seen.")
	env.ed.waitIdle(t, env.h, 1)
	got := requestText(prov.requests()[0])
	if !strings.Contains(got, "[a][b]okkept <file path=\"./n.txt\">\nnote\n</file> <file path=\"./n.txt\">[the same file as attached above]</file>") {
		t.Errorf("request text:\n%s", got)
	}
}
