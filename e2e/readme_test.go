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

// TestHighlightGroupsDocumented (issue 27 item 9): every highlight group
// plugin/flemma.lua links (the ones a colorscheme may set) is named in
// README and in :help flemma-highlights.
func TestHighlightGroupsDocumented(t *testing.T) {
	root := nvimtest.RepoRoot()
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	plugin, readme, help := read("plugin/flemma.lua"), read("README.md"), read("doc/flemma.txt")
	start := strings.Index(plugin, "local links = {")
	if start < 0 {
		t.Fatal("plugin/flemma.lua has no links table")
	}
	table := plugin[start : start+strings.Index(plugin[start:], "\n}")]
	groups := regexp.MustCompile(`(?m)^\s+(Flemma\w+) = `).FindAllStringSubmatch(table, -1)
	if len(groups) < 20 {
		t.Fatalf("found %d groups in plugin/flemma.lua", len(groups))
	}
	// README may shorten a family: `FlemmaStatusWordPending`, `…Approved`.
	for _, g := range groups {
		name := g[1]
		if !strings.Contains(readme, name) && !strings.Contains(readme, "…"+strings.TrimPrefix(name, "FlemmaStatusWord")+"`") {
			t.Errorf("README does not name the highlight group %s", name)
		}
		if !strings.Contains(help, name) && !(strings.HasPrefix(name, "FlemmaStatusWord") && strings.Contains(help, "FlemmaStatusWord*")) {
			t.Errorf(":help flemma does not name the highlight group %s", name)
		}
	}
}
