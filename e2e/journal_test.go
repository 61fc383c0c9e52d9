package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// Crash recovery (SPEC §11, issue 12): a call that was running when Neovim
// died is never run again by itself; a finished call whose result never
// reached the saved file gets its recorded result back.

// restart kills Neovim (and with it the host) as a crash would, and starts
// a new one on the same state directory, with the same setup.
func restart(t *testing.T, s *nvimtest.Session, setup string) *nvimtest.Session {
	t.Helper()
	var pid, host int
	if err := s.Lua(&pid, "return vim.fn.getpid()"); err != nil {
		t.Fatal(err)
	}
	if err := s.Lua(&host, `return vim.fn.jobpid(require("flemma.host")._chan())`); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The host notices (its channel closes), kills its commands and exits:
	// wait for that, as a user restarting Neovim would be later still.
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(host, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the host (pid %d) outlived its Neovim", host)
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, err := nvimtest.Start(nvimtest.Options{Nvim: s.Nvim, Dir: s.Dir, Setup: setup})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// reopen edits a file already on disk in the new Neovim.
func reopen(t *testing.T, s *nvimtest.Session, name string) {
	t.Helper()
	if err := s.Lua(nil, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, filepath.Join(s.Dir, name)); err != nil {
		t.Fatal(err)
	}
}

func TestInterruptedCallIsNotRerun(t *testing.T) {
	setup := `{ tools = { auto_approve = { "$default", "bash" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "crash")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := mkfifo(filepath.Join(dir, "go.fifo")); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "crash/c.chat", bashCalls(t, "echo run >> count.txt; read x < go.fifo; echo done"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "b1", buffer.StatusApproved)
		waitFile(t, filepath.Join(dir, "count.txt"), "run\n") // it is running
		press(t, s, ":w<CR>")
		s = restart(t, s, setup)
		reopen(t, s, "crash/c.chat")
		press(t, s, "<C-]>")
		waitStatus(t, s, "b1", buffer.StatusPending)
		var diags []struct {
			Message string `msgpack:"message"`
		}
		if err := s.Lua(&diags, `return vim.diagnostic.get(0)`); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range diags {
			found = found || strings.Contains(d.Message, "interrupted")
		}
		if !found {
			t.Errorf("no diagnostic says b1 was interrupted: %+v\n%s", diags, s.Messages())
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "count.txt")); string(b) != "run\n" {
			t.Fatalf("count.txt = %q: the interrupted call ran again", b)
		}
		cursorTo(t, s, "Tool Result:\\*\\* `b1`")
		press(t, s, ":Flemma tool:discard<CR>")
		body, isErr := waitResult(t, s, "b1")
		if !isErr || !strings.Contains(body, "interrupted") {
			t.Errorf("discarded b1 = %q (error %v)", body, isErr)
		}
		if log := hostText(t, s, "flemma.journal_log", 0, false); !strings.Contains(log, "discarded, by user") {
			t.Errorf(":Flemma tool:log does not show the discard:\n%s", log)
		}
	})
}

func TestFinishedResultIsRecovered(t *testing.T) {
	setup := `{ tools = { auto_approve = { "$default", "bash" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "rec")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fifo := filepath.Join(dir, "go.fifo")
		if err := mkfifo(fifo); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "rec/r.chat", bashCalls(t, "echo run >> count.txt; read x < go.fifo; echo the-result"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "b1", buffer.StatusApproved)
		press(t, s, ":w<CR>") // saved with the call running: the result never reaches the file
		releaseFIFO(t, s, fifo)
		waitResult(t, s, "b1")
		s = restart(t, s, setup)
		reopen(t, s, "rec/r.chat")
		press(t, s, "<C-]>")
		if body, _ := waitResult(t, s, "b1"); commandOutput(body) != "the-result" {
			t.Errorf("recovered result = %q, want the-result", body)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "count.txt")); string(b) != "run\n" {
			t.Errorf("count.txt = %q: the finished call ran again", b)
		}
	})
}

// waitFile waits until path holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, _ := os.ReadFile(path); string(b) == want {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(path)
			t.Fatalf("%s = %q, want %q", path, b, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// :Flemma tool:undo restores what write and edit changed, only while the
// files still hold what the tool wrote, and tells the model in the result.
func TestToolUndo(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "undo")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		chat := "@You:\ngo\n\n@Assistant:\nEditing.\n\n" +
			"**Tool Use:** `write` (`w1`)\n\n```json\n{\"path\": \"new.txt\", \"content\": \"fresh\\n\", \"label\": \"x\"}\n```\n\n" +
			"**Tool Use:** `edit` (`e1`)\n\n```json\n{\"path\": \"notes.txt\", \"oldText\": \"beta\", \"newText\": \"BETA\", \"label\": \"x\"}\n```\n"
		mustOpen(t, s, "undo/u.chat", chat)
		press(t, s, "<C-]>")
		waitResult(t, s, "w1")
		waitResult(t, s, "e1")
		if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "alpha\nBETA\n" {
			t.Fatalf("edit did not run: %q", b)
		}
		waitIdle(t, s) // autopilot goes on after the results; undo waits for no step
		cursorTo(t, s, "Tool Result:\\*\\* `e1`")
		press(t, s, ":Flemma tool:undo<CR>")
		if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "alpha\nbeta\n" {
			t.Errorf("notes.txt after undo = %q", b)
		}
		if body, _ := waitResult(t, s, "e1"); !strings.Contains(body, "The user undid this call's changes on disk") {
			t.Errorf("the result does not tell the model: %q", body)
		}
		// A file changed since the tool wrote it is not undone.
		if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("edited by hand\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cursorTo(t, s, "Tool Result:\\*\\* `w1`")
		press(t, s, ":Flemma tool:undo<CR>")
		if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "edited by hand\n" {
			t.Errorf("undo overwrote a file changed since: %q", b)
		}
		waitMessage(t, s, "Not undone")
	})
}

// TestToolLogForPeople (issue 27 item 8): :Flemma tool:log shows one line
// per call for people (time, tool and id, decision, how it ended);
// `--json` shows the journal's JSON lines as they are.
func TestToolLogForPeople(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "calculator" } } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "log/l.chat", calcCalls("2+2"))
		press(t, s, "<C-]>")
		waitResult(t, s, "c1")
		waitIdle(t, s)
		press(t, s, ":Flemma tool:log<CR>")
		out := listingWindow(t, s, "tool-log")
		if !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+  c1  calculator  ran: ok in \d+ ms`).MatchString(out) {
			t.Errorf(":Flemma tool:log:\n%s", out)
		}
		if strings.Contains(out, `"call_id"`) {
			t.Errorf(":Flemma tool:log shows JSON:\n%s", out)
		}
		if err := s.Nv.Command("wincmd p"); err != nil {
			t.Fatal(err)
		}
		press(t, s, ":Flemma tool:log --json<CR>")
		if out := listingWindow(t, s, "tool-log"); !strings.Contains(out, `"call_id":"c1"`) {
			t.Errorf(":Flemma tool:log --json:\n%s", out)
		}
	})
}
