package cycle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The user types between a step's read and its write: the write is refused
// (stale changedtick), the step re-reads and re-plans, and both the user's
// text and the step's edit are in the buffer.
func TestStaleTickReplans(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, fileWithCall("echo hi", ""))
	var once sync.Once
	env.ed.beforeApply = func(bufnr int) {
		once.Do(func() {
			if err := env.ed.edit(bufnr, 0, 0, "typed while flemma planned"); err != nil {
				t.Error(err)
			}
		})
	}
	env.as("press while the user types").reply(env.h.Cycle(1))
	got := env.ed.String(1)
	if !strings.HasPrefix(got, "typed while flemma planned\n") || !strings.Contains(got, "status=pending") {
		t.Fatalf("lost an edit:\n%s", got)
	}
	env.show(1, "both edits")
	env.golden()
}

// A buffer that keeps changing under every step: nothing is written, the
// user is told, and the text typed is all there.
func TestBufferThatKeepsChanging(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, fileWithCall("echo hi", ""))
	n := 0
	env.ed.beforeApply = func(bufnr int) {
		n++
		if err := env.ed.edit(bufnr, 0, 0, "again"); err != nil {
			t.Error(err)
		}
	}
	_, err := env.h.Cycle(1)
	if err == nil || !strings.Contains(err.Error(), "kept changing") {
		t.Fatalf("err = %v", err)
	}
	if got := strings.Count(env.ed.String(1), "again\n"); got != n || strings.Contains(env.ed.String(1), "flemma:tool") {
		t.Fatalf("%d of %d edits kept, or a placeholder was written:\n%s", got, n, env.ed.String(1))
	}
}

// Presses that overlap (two keys at once, or a press while autopilot's
// step is written) run one step at a time: an approved call runs once.
func TestOverlappingPressesRunACallOnce(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.userApproves(1, counter(env, "toolu_c").input["command"].(string))
	var wg sync.WaitGroup
	phases := make([]string, 4)
	for i := range phases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := env.h.Cycle(1)
			if err != nil {
				t.Error(err)
				return
			}
			phases[i] = res.Phase
		}()
	}
	wg.Wait()
	env.ed.waitText(t, 1, "ran\n```")
	env.ed.waitIdle(t, env.h, 1)
	if env.runs() != 1 {
		t.Fatalf("the call ran %d times (phases %q)", env.runs(), phases)
	}
}

// The host dies while a call runs; a new host starts. The call is not run
// again by the next press: it waits as interrupted until the user resumes
// or discards it.
func TestHostDeathDoesNotRunACallTwice(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.userApproves(1, "echo run >> "+filepath.Join(env.dir, "runs")+"; sleep 30")
	env.as("press").reply(env.h.Cycle(1))
	env.ed.wait(t, 1, "the command started", func(*fakeBuf) bool { return env.runs() == 1 })
	env.restart()
	env.ed.SetModifiable(1, true) // the plugin unlocks a buffer whose host died
	phase, msg := env.as("press after the restart").reply(env.h.Cycle(1))
	// The journal's "interrupted" wins over the ledger's "it ran": the
	// user is told it may have partly run, and offered resume or discard
	// (issue 28 item 4).
	if env.runs() != 1 || phase != "pending" || !strings.Contains(msg, "interrupted") || !strings.Contains(msg, "may have partly run") ||
		!strings.Contains(msg, ":Flemma tool:resume") || strings.Contains(msg, "already ran") {
		t.Fatalf("runs %d, phase %s, message %q", env.runs(), phase, msg)
	}
	line := resultLine(env, 1, "toolu_f1")
	env.as(":Flemma tool:discard").reply(env.h.onDiscard(1, line))
	if env.runs() != 1 {
		t.Fatalf("discard ran the call")
	}
	env.show(1, "discarded")
	env.golden()
}

// userApproves loads a file with a bash call, presses (the call asks), and
// sets its status to approved as the user would: the next press runs it.
func (env *testEnv) userApproves(bufnr int, cmd string) {
	env.t.Helper()
	env.ed.load(bufnr, filepath.Join(env.dir, "x.chat"), env.dir, fileWithCall(cmd, ""))
	if phase, msg := env.press(bufnr); phase != "categorize" {
		env.t.Fatalf("first press: %s %q", phase, msg)
	}
	env.ed.replace(env.t, bufnr, "```flemma:tool status=pending", "```flemma:tool status=approved")
}

// Neovim and the host both stop while a call runs (the session's trust
// records are gone); the file is opened again. The journal knows the call
// started and never finished: it waits, with a diagnostic, and resume runs
// it again only on the user's word.
func TestInterruptedCallWaitsForResume(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.userApproves(1, "echo run >> "+filepath.Join(env.dir, "runs")+"; sleep 30")
	env.as("press").reply(env.h.Cycle(1))
	env.ed.wait(t, 1, "the command started", func(*fakeBuf) bool { return env.runs() == 1 })
	saved := env.ed.String(1)
	env.h.Shutdown()
	env.ed = newFakeEditor()
	env.restart()
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, saved)
	phase, msg := env.as("press in the reopened file").reply(env.h.Cycle(1))
	if env.runs() != 1 || phase != "pending" || !strings.Contains(msg, "interrupted") {
		t.Fatalf("runs %d, phase %s, message %q", env.runs(), phase, msg)
	}
	env.ed.mu.Lock()
	diags := env.ed.bufs[1].diags
	env.ed.mu.Unlock()
	if len(diags) == 0 || !strings.Contains(diags[len(diags)-1].Message, "interrupted") {
		t.Errorf("no diagnostic on the interrupted call: %+v", diags)
	}
	env.as("press again").reply(env.h.Cycle(1))
	if env.runs() != 1 {
		t.Fatal("a second press ran the interrupted call")
	}
	env.as(":Flemma tool:resume").reply(env.h.onResume(1, resultLine(env, 1, "toolu_f1")))
	env.ed.wait(t, 1, "the call ran again", func(*fakeBuf) bool { return env.runs() == 2 })
	env.h.Cancel(1)
	env.ed.waitIdle(t, env.h, 1)
	env.show(1, "resumed, then cancelled")
	env.golden()
}

// resultLine is the 1-based line of the result header of id.
func resultLine(env *testEnv, bufnr int, id string) int {
	for i, l := range env.ed.text(bufnr) {
		if strings.HasPrefix(l, "**Tool Result:** `"+id+"`") {
			return i + 1
		}
	}
	env.t.Fatalf("no result block of %s", id)
	return 0
}

// The last result and the unlock arrive in one write: text the user sees
// appear can be typed after at once (a user who typed right after the last
// result met E21 while the step finished its bookkeeping).
func TestLastResultUnlocksInTheSameWrite(t *testing.T) {
	env := newEnv(t, with(noSandbox(), map[string]any{"tools": map[string]any{"autopilot": map[string]any{"enabled": false}}}))
	text := "@You:\nhi\n\n@Assistant:\n" +
		"**Tool Use:** `bash` (`toolu_a`)\n\n```json\n{\"command\": \"echo first\", \"label\": \"a\"}\n```\n\n" +
		"**Tool Use:** `bash` (`toolu_b`)\n\n```json\n{\"command\": \"sleep 0.2; echo second\", \"label\": \"b\"}\n```\n"
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, text)
	env.press(1)
	for range 2 {
		env.ed.replace(t, 1, "```flemma:tool status=pending", "```flemma:tool status=approved")
	}
	var seen []string
	env.ed.afterApply = func(bufnr int, b *fakeBuf) {
		all := strings.Join(b.lines, "\n")
		results := strings.Count(all, "first\n```") + strings.Count(all, "second\n```")
		seen = append(seen, fmt.Sprintf("%d results, modifiable %v", results, b.modifiable))
	}
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	env.ed.mu.Lock()
	defer env.ed.mu.Unlock()
	var firstBoth string
	for _, s := range seen {
		if strings.HasPrefix(s, "2 results") {
			firstBoth = s
			break
		}
	}
	if firstBoth != "2 results, modifiable true" {
		t.Fatalf("the write of the last result: %q (all writes: %q)", firstBoth, seen)
	}
	for _, s := range seen {
		if strings.HasPrefix(s, "1 results") && strings.HasSuffix(s, "true") {
			t.Fatalf("unlocked while a call still ran: %q", seen)
		}
	}
}

// A command on a call right after its result appears (tool:undo here) is
// not refused as "still running": the call ended, only its bookkeeping was
// left (a make test run failed on it).
func TestCommandRightAfterTheResult(t *testing.T) {
	env := newEnv(t, noSandbox())
	if err := os.WriteFile(filepath.Join(env.dir, "notes.txt"), []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := "@You:\nhi\n\n@Assistant:\n**Tool Use:** `write` (`toolu_w`)\n\n```json\n{\"path\": \"notes.txt\", \"content\": \"after\\n\", \"label\": \"w\"}\n```\n"
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, text)
	env.press(1)
	env.ed.replace(t, 1, "```flemma:tool status=pending", "```flemma:tool status=approved")
	replies := make(chan Reply, 1)
	var once sync.Once
	env.ed.afterApply = func(bufnr int, b *fakeBuf) {
		if strings.Contains(strings.Join(b.lines, "\n"), "Successfully wrote") {
			once.Do(func() {
				line := 0
				for i, l := range b.lines {
					if strings.HasPrefix(l, "**Tool Result:** `toolu_w`") {
						line = i + 1
					}
				}
				go func() {
					res, err := env.h.onUndo(bufnr, line)
					if err != nil {
						t.Error(err)
					}
					replies <- res
				}()
			})
		}
	}
	env.press(1)
	res := <-replies
	if res.Phase != "undo" {
		t.Fatalf("tool:undo right after the result: %+v", res)
	}
	env.ed.waitIdle(t, env.h, 1)
}
