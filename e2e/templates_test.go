package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// Issue 27: {% %} statement blocks and include() in a user message. A
// loop over a frontmatter list writes one line per item; include() renders
// a template file with only the variables passed to it, and that file's
// own include() resolves from its folder. The buffer keeps the templates.
func TestTemplateStatementsAndInclude(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("Noted.")}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		write := func(name, text string) {
			p := filepath.Join(s.Dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("snippets/greet.md", "Dear {{ who }},{{ include('sign.md') }}")
		write("snippets/sign.md", " -- the team")
		chat := "```lua\nname = 'Ada'\nitems = { 'milk', 'eggs' }\n```\n@You:\n" +
			"{% for i, it in ipairs(items) do -%}\n{{ i }}. {{ it }}\n{% end -%}\n" +
			"{{ include('./snippets/greet.md', { who = name }) }}\n"
		mustOpen(t, s, "tpl.chat", chat)
		press(t, s, "<C-]>")
		got, err := s.Wait(15*time.Second, func(x string) bool { return strings.Contains(x, "Noted.") })
		if err != nil {
			t.Fatalf("buffer:\n%s\nmessages: %s", got, s.Messages())
		}
		if !strings.Contains(got, "{% for i, it in ipairs(items) do -%}") {
			t.Errorf("the buffer must keep the template:\n%s", got)
		}
		f.mu.Lock()
		body, _ := json.Marshal(f.bodies[0]["messages"])
		f.mu.Unlock()
		if want := `1. milk\n2. eggs\nDear Ada, -- the team`; !strings.Contains(string(body), want) {
			t.Errorf("request lacks %q: %s", want, body)
		}
	})
}

// Attack: a .chat file from someone else includes a file outside its
// project. Nothing is read or sent until the user allows it with
// :Flemma attach:allow, as for an @ reference; and an include loop is
// stopped with an error on its line.
func TestTemplateIncludeConfined(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("outside text"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fakeAnthropic{turns: []string{sse("Seen.")}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		if err := os.MkdirAll(filepath.Join(s.Dir, "proj"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "proj", "loop.md"), []byte("{{ include('loop.md') }}"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustOpenForeign(t, s, "proj/loop.chat", "@You:\nx\n{{ include('loop.md') }}\n")
		press(t, s, "<C-]>")
		waitIdle(t, s)
		// The depth guard stops the loop in about 5 ms; on a machine loaded
		// enough to stall the host for 100 ms the piece's deadline stops it
		// first. Either way the loop ends with an error on its line (the depth
		// guard alone: frontmatter's TestRenderBombs, with no deadline in reach).
		if m := s.Messages(); !strings.Contains(m, "line 3") || !strings.Contains(m, "deeper than 8") && !strings.Contains(m, "did not finish") {
			t.Errorf("no error for the include loop:\n%s", m)
		}
		mustOpenForeign(t, s, "proj/c.chat", "@You:\nread {{ include('"+filepath.Join(outside, "secret.md")+"') }}\n")
		press(t, s, "<C-]>")
		waitIdle(t, s)
		if m := s.Messages(); !strings.Contains(m, ":Flemma attach:allow") {
			t.Errorf("no question for the file outside the project:\n%s", m)
		}
		body := allowAfterAsking(t, s, f)
		if !strings.Contains(string(body), "read outside text") {
			t.Errorf("request: %s", body)
		}
	})
}

// The help's {% %} example, as written (its block in doc/flemma.txt),
// sent with a frontmatter that defines files: one numbered line per file.
func TestHelpTemplateExample(t *testing.T) {
	var example string
	for _, ex := range docBlocks(t) {
		if strings.HasPrefix(ex.code, "{%") {
			example = ex.code
		}
	}
	if example == "" {
		t.Fatal("the help has no {% %} example")
	}
	f := &fakeAnthropic{turns: []string{sse("Listed.")}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "ex.chat", "```lua\nfiles = { 'a.go', 'b.go' }\n```\n@You:\n"+example)
		press(t, s, "<C-]>")
		if got, err := s.Wait(15*time.Second, func(x string) bool { return strings.Contains(x, "Listed.") }); err != nil {
			t.Fatalf("buffer:\n%s\nmessages: %s", got, s.Messages())
		}
		f.mu.Lock()
		body, _ := json.Marshal(f.bodies[0]["messages"])
		f.mu.Unlock()
		if !strings.Contains(string(body), `1. a.go\n2. b.go\n`) {
			t.Errorf("request: %s", body)
		}
	})
}
