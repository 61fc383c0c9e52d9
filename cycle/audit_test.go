package cycle

import (
	"path/filepath"
	"strings"
	"testing"
)

// The audit log has every decision of the user (issue 28 item 3): a
// rejection with its reason (:Flemma tool:reject), the discard of a call
// that never ran, a result the user gives (:Flemma tool:result), each with
// the call's arguments, redacted.
func TestAuditRecordsTheUsersDecisions(t *testing.T) {
	t.Setenv("FLEMMA_TEST_API_TOKEN", "tok-0123456789")
	env := newEnv(t, noSandbox())
	text := "@You:\nhi\n\n@Assistant:\n" +
		"**Tool Use:** `bash` (`toolu_r`)\n\n```json\n{\"command\": \"curl -H tok-0123456789 x\", \"label\": \"r\"}\n```\n\n" +
		"**Tool Use:** `bash` (`toolu_d`)\n\n```json\n{\"command\": \"make\", \"label\": \"d\"}\n```\n"
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, text)
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	if _, err := env.h.SetStatus(1, resultLine(env, 1, "toolu_r"), "rejected", "not with my token"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.h.onDiscard(1, resultLine(env, 1, "toolu_d")); err != nil {
		t.Fatal(err)
	}
	if _, err := env.h.onSetResult(1, "toolu_d", "I ran it myself: ok", false); err != nil {
		t.Fatal(err)
	}
	log, _ := env.h.onJournalLog(1, false)
	for _, want := range []string{
		"toolu_r  bash  rejected, by user\n  detail: not with my token\n  input: {\"command\": \"curl -H [redacted] x\"",
		"toolu_d  bash  discarded, by user\n  input: {\"command\": \"make\"",
		"toolu_d  bash  result given, by user\n  detail: I ran it myself: ok\n",
	} {
		if !strings.Contains(log.Text, want) {
			t.Errorf("the log lacks %q:\n%s", want, log.Text)
		}
	}
	if strings.Contains(log.Text, "tok-0123456789") {
		t.Errorf("the log holds the secret:\n%s", log.Text)
	}
}
