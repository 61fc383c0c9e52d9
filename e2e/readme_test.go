package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// readmeBlock returns the README's Lua code block that contains marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nvimtest.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```lua\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		if regexp.MustCompile(regexp.QuoteMeta(marker)).MatchString(m[1]) {
			return m[1]
		}
	}
	t.Fatalf("README has no Lua block with %q", marker)
	return ""
}

// TestReadmeAsyncToolExample: the README's async tool, exactly as written,
// registers and runs (it once lacked async = true and failed with a Lua
// stack trace for everyone who followed it).
func TestReadmeAsyncToolExample(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "wait" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, readmeBlock(t, `register("wait"`)); err != nil {
			t.Fatalf("the README example: %v", err)
		}
		mustOpen(t, s, "w.chat", toolChat("wait", "w1", `{"ms": 20}`))
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "w1"); isErr || body != "waited 20 ms" {
			t.Errorf("result %q (error %v)", body, isErr)
		}
	})
}

// TestReadmeNamedProviders: the README's named providers, exactly as
// written, are accepted by setup (no key reported unknown or mistyped) and
// each can be switched to.
func TestReadmeNamedProviders(t *testing.T) {
	eachNvim(t, `{}`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, readmeBlock(t, `proxied_mistral = {`)); err != nil {
			t.Fatalf("the README example: %v", err)
		}
		for _, name := range []string{"ollama", "openrouter", "deepseek", "mistral", "gemini", "proxied_mistral", "azure"} {
			if err := s.Nv.Command("Flemma switch " + name); err != nil {
				t.Fatalf("switch %s: %v", name, err)
			}
			waitMessage(t, s, "Provider "+name+", model ")
		}
		for _, bad := range []string{"unknown option", "must be", "E5108"} {
			if strings.Contains(s.Messages(), bad) {
				t.Errorf("setup reported a problem with the README's example:\n%s", s.Messages())
			}
		}
	})
}
