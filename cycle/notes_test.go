package cycle

import (
	"path/filepath"
	"strings"
	"testing"
)

// Web tools turned on for a provider whose wire has none (the replay
// script): the user is told once per provider, not once per send.
func TestWebToolsNotedOnce(t *testing.T) {
	web := map[string]any{"tools": map[string]any{"web_search": map[string]any{"enabled": true}}}
	env, _ := attachEnv(t, with(noSandbox(), web))
	for i := 1; i <= 2; i++ {
		env.ed.load(i, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
		if phase, msg := env.press(i); phase != "send" || msg != "" {
			t.Fatalf("press %d: %s %q", i, phase, msg)
		}
		env.ed.waitText(t, i, "Seen.")
		env.ed.waitIdle(t, env.h, i)
	}
	n := 0
	for _, note := range env.ed.notifications() {
		if strings.Contains(note, "tools.web_search is ignored here") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("noted %d times: %q", n, env.ed.notifications())
	}
}

// :Flemma trust between two presses reaches the audit log as the user's.
func TestTrustAudited(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, "@You:\nhi\n\n@Assistant:\n**Tool Use:** `bash` (`toolu_a`)\n\n```json\n{\"command\": \"ls\", \"label\": \"a\"}\n```\n")
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	env.ed.trust(1)
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	log, _ := env.h.onJournalLog(1, false)
	if !strings.Contains(log.Text, "trusted, by user") {
		t.Errorf("the audit log lacks the trust:\n%s", log.Text)
	}
}
