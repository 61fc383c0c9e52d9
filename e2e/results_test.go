package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// Issue 12: results are never dropped, calls start in buffer order, and a
// finished call is never run again to recover its result.

// bashCalls is a conversation whose assistant runs each command with bash,
// ids b1, b2, …
func bashCalls(t *testing.T, commands ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("@You:\ngo\n\n@Assistant:\nRunning.\n")
	for i, c := range commands {
		call := bashCall(t, fmt.Sprintf("b%d", i+1), c)
		b.WriteString(call[strings.Index(call, "\n**Tool Use:**"):])
	}
	return b.String()
}

// TestMaxConcurrentOneRunsInOrder: with max_concurrent = 1 the calls run
// first to last.
func TestMaxConcurrentOneRunsInOrder(t *testing.T) {
	eachNvim(t, `{ tools = { max_concurrent = 1, auto_approve = { "$default", "bash" } } }`, func(t *testing.T, s *nvimtest.Session) {
		var cmds []string
		for _, w := range []string{"first", "second", "third", "fourth", "fifth"} {
			cmds = append(cmds, "echo "+w+" >> order.txt")
		}
		mustOpen(t, s, "ord/o.chat", bashCalls(t, cmds...))
		press(t, s, "<C-]>")
		waitResult(t, s, "b5")
		waitUnlocked(t, s)
		b, _ := os.ReadFile(filepath.Join(s.Dir, "ord", "order.txt"))
		if got := strings.Fields(string(b)); strings.Join(got, ",") != "first,second,third,fourth,fifth" {
			t.Errorf("order.txt = %q, want first to fifth in order", got)
		}
	})
}

// TestUnlimitedConcurrencyKeepsEveryResult: max_concurrent = 0 (unlimited)
// with many calls writes every result, and runs each call once.
func TestUnlimitedConcurrencyKeepsEveryResult(t *testing.T) {
	eachNvim(t, `{ tools = { max_concurrent = 0, max_calls_per_response = 0, auto_approve = { "$default", "bash" } } }`, func(t *testing.T, s *nvimtest.Session) {
		const n = 40
		var cmds []string
		for i := 1; i <= n; i++ {
			cmds = append(cmds, fmt.Sprintf("echo %d >> runs.txt; echo out%d", i, i))
		}
		mustOpen(t, s, "many/m.chat", bashCalls(t, cmds...))
		press(t, s, "<C-]>")
		// 40 sandboxed commands at once: seconds each on a loaded 2-core
		// machine.
		waitUnlockedWithin(t, s, 2*time.Minute)
		doc := buffer.Parse(strings.Split(text(t, s), "\n"))
		for i := 1; i <= n; i++ {
			id := fmt.Sprintf("b%d", i)
			r := doc.Result(id)
			if r == nil || r.Status != "" || commandOutput(r.Content) != fmt.Sprintf("out%d", i) {
				t.Errorf("result of %s = %+v, want out%d", id, r, i)
			}
		}
		b, _ := os.ReadFile(filepath.Join(s.Dir, "many", "runs.txt"))
		if got := len(strings.Fields(string(b))); got != n {
			t.Errorf("%d executions for %d calls", got, n)
		}
		if m := s.Messages(); strings.Contains(m, "not written") {
			t.Errorf("a result was not written:\n%s", m)
		}
	})
}

// TestResultDoesNotOverwriteAChangedBlock: text typed into a running call's
// placeholder (another plugin, or :set modifiable) is not overwritten; the
// result is kept and <M-CR> writes it without running the call again.
func TestResultDoesNotOverwriteAChangedBlock(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "$default", "bash" } } }`, func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "chg")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fifo := filepath.Join(dir, "go.fifo")
		if err := mkfifo(fifo); err != nil {
			t.Fatal(err)
		}
		// The call waits on the fifo: it runs until the test says so.
		mustOpen(t, s, "chg/c.chat", bashCalls(t, "echo ran >> runs.txt; read x < go.fifo; echo finished"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "b1", buffer.StatusApproved)
		// The user's text goes into the running call's block.
		lines := strings.Split(text(t, s), "\n")
		r := buffer.Parse(lines).Result("b1")
		if err := s.Lua(nil, `local l = ...; vim.bo.modifiable = true; vim.api.nvim_buf_set_lines(0, l, l, false, { "my own notes" }); vim.bo.modifiable = false`, r.FenceLine); err != nil {
			t.Fatal(err)
		}
		releaseFIFO(t, s, fifo)
		waitUnlocked(t, s)
		if _, err := s.Wait(10*time.Second, func(string) bool { return strings.Contains(s.Messages(), "b1 was not written") }); err != nil {
			t.Fatalf("no word about the result of b1:\n%s\n%s", text(t, s), s.Messages())
		}
		if r := buffer.Parse(strings.Split(text(t, s), "\n")).Result("b1"); r == nil || r.Content != "my own notes" {
			t.Fatalf("the user's text was overwritten:\n%s", text(t, s))
		}
		cursorTo(t, s, "my own notes")
		press(t, s, "<M-CR>")
		if body, _ := waitResult(t, s, "b1"); commandOutput(body) != "finished" {
			t.Errorf("kept result = %q, want finished", body)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "runs.txt")); string(b) != "ran\n" {
			t.Errorf("runs.txt = %q: the call ran again", b)
		}
	})
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

// releaseFIFO writes a line into fifo once the command waiting on it has
// opened it for reading. A plain write would block for ever if the command
// failed before it got there; this fails the test instead, with the buffer
// and the messages.
func releaseFIFO(t *testing.T, s *nvimtest.Session, fifo string) {
	t.Helper()
	var f *os.File
	_, err := s.Wait(10*time.Second, func(string) bool {
		var err error
		f, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		return err == nil // ENXIO: nobody reads it yet
	})
	if err != nil {
		t.Fatalf("nothing ever read %s (the command did not get there):\n%s\nmessages: %s", fifo, text(t, s), s.Messages())
	}
	defer f.Close()
	if _, err := f.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
}

// TestDiagnosticsFollowTheEdits: a press that inserts placeholders leaves
// each diagnostic on the line of its block, not where the block was.
func TestDiagnosticsFollowTheEdits(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "diag/m.chat", readTestdata(t, "malformed.chat"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "toolu_good", buffer.StatusPending)
		var lines []struct {
			Lnum    int    `msgpack:"lnum"`
			Message string `msgpack:"message"`
		}
		if err := s.Lua(&lines, `return vim.diagnostic.get(0)`); err != nil {
			t.Fatal(err)
		}
		buf := strings.Split(text(t, s), "\n")
		found := false
		for _, d := range lines {
			if strings.Contains(d.Message, "toolu_ghost") {
				found = true
				if got := buf[d.Lnum]; !strings.Contains(got, "toolu_ghost") {
					t.Errorf("the diagnostic about toolu_ghost is on line %d %q", d.Lnum+1, got)
				}
			}
		}
		if !found {
			t.Errorf("no diagnostic about toolu_ghost: %+v", lines)
		}
	})
}

// TestResolvedPressDoesNotSendWithoutAutopilot: with autopilot off, a press
// that writes the results of rejected and denied calls stops there; the
// next press sends.
func TestResolvedPressDoesNotSendWithoutAutopilot(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("unused: the conversation has one answer already"), sse("Understood.")}}
	eachNvimSend(t, f, `, tools = { autopilot = false }`, func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("1+1") + "\n@You:\n\n" + placeholder("c1", "rejected", "not now")
		mustOpen(t, s, "res/r.chat", chat)
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "c1"); !isErr || body != "not now" {
			t.Fatalf("c1 = %q (error %v)", body, isErr)
		}
		waitIdle(t, s) // nothing left in flight that could still send
		f.mu.Lock()
		n := len(f.bodies)
		f.mu.Unlock()
		if n != 0 {
			t.Fatalf("the press that wrote the results also sent")
		}
		press(t, s, "<C-]>")
		if _, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "Understood.") }); err != nil {
			t.Fatalf("the next press did not send:\n%s", text(t, s))
		}
	})
}

// TestSendWhileRunning: :Flemma send while a call runs says it is running.
func TestSendWhileRunning(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "$default", "bash" } } }`, func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "run")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fifo := filepath.Join(dir, "go.fifo")
		if err := mkfifo(fifo); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "run/r.chat", bashCalls(t, "read x < go.fifo; echo done"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "b1", buffer.StatusApproved)
		press(t, s, ":Flemma send<CR>")
		waitMessage(t, s, "is running")
		releaseFIFO(t, s, fifo)
		waitResult(t, s, "b1")
	})
}
