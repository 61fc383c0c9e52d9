package cycle

import (
	"strings"
	"testing"
)

// A journal that fails while in use (here: closed under the engine, as a
// damaged or vanished database would fail) never stops a tool, and the
// user is told once — not for every write — and :checkhealth names the
// failed write (issue 26 item 2: failures were only logged).
func TestJournalWriteFailureToldOnce(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.h.journal().Close()
	for i, cmd := range []string{"echo one", "echo two"} {
		env.userApproves(1, cmd)
		env.press(1)
		env.ed.waitText(t, 1, strings.TrimPrefix(cmd, "echo ")+"\n```")
		env.ed.waitIdle(t, env.h, 1)
		told := 0
		for _, n := range env.ed.notifications() {
			if strings.Contains(n, "journal could not be written") {
				told++
			}
		}
		if told != 1 {
			t.Fatalf("after call %d: told %d times: %q", i+1, told, env.ed.notifications())
		}
	}
	hr, _ := env.h.onHealth()
	found := false
	for _, l := range hr.Lines {
		found = found || l.Level == "warn" && strings.Contains(l.Text, "a write failed") && strings.Contains(l.Text, "journal is closed")
	}
	if !found {
		t.Errorf("health: %+v", hr.Lines)
	}
}
