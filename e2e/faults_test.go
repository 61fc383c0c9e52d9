package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// Faults users meet (issue 26): the host restarted, crashed or hung while
// it worked, a journal under load, a hung host on the paths that wait for
// an answer, a journal that cannot be opened or was damaged. Each test
// makes the fault happen for real (SIGKILL, SIGSTOP, a full filesystem,
// garbage in the file) and checks what the user sees.

// sampleLock starts a sampler in Neovim: every millisecond (between the
// editor's events, as the user would see the buffer) it notes whether the
// current buffer is modifiable while it holds an approved placeholder not
// yet run — a call that waits to run in a buffer the user can type in.
func sampleLock(t *testing.T, s *nvimtest.Session) {
	t.Helper()
	if err := s.Lua(nil, `
		local buf = vim.api.nvim_get_current_buf()
		_G.flemma_lock_samples = { locked = 0, unlocked_waiting = 0, first = nil }
		local t = vim.loop.new_timer()
		_G.flemma_lock_timer = t
		t:start(1, 1, vim.schedule_wrap(function()
			if not vim.api.nvim_buf_is_valid(buf) then return end
			local st = _G.flemma_lock_samples
			if not vim.bo[buf].modifiable then
				st.locked = st.locked + 1
				return
			end
			local waiting = vim.api.nvim_buf_call(buf, function()
				return vim.fn.search("^`+"```"+`flemma:tool status=approved$", "nw")
			end)
			if waiting > 0 then
				st.unlocked_waiting = st.unlocked_waiting + 1
				st.first = st.first or table.concat(vim.api.nvim_buf_get_lines(buf, waiting - 1, waiting + 1, false), " | ")
			end
		end))`); err != nil {
		t.Fatal(err)
	}
}

type lockSamples struct {
	Locked          int    `msgpack:"locked"`
	UnlockedWaiting int    `msgpack:"unlocked_waiting"`
	First           string `msgpack:"first"`
}

func stopSampling(t *testing.T, s *nvimtest.Session) lockSamples {
	t.Helper()
	var st lockSamples
	if err := s.Lua(&st, `_G.flemma_lock_timer:stop(); _G.flemma_lock_timer:close(); return _G.flemma_lock_samples`); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestHundredParallelCalls: 100 calls at once (max_concurrent = 0): every
// one is journaled, started and finished, with no journal failure (issue 26
// item 2: 68–83 of 100 journal writes failed), and the buffer is never
// unlocked while an approved call waits to run (item 7: a momentary unlock
// between the write that approves the calls and the one that starts them).
func TestHundredParallelCalls(t *testing.T) {
	const n = 100
	// max_calls_per_response = 0: all 100 of one response run.
	setup := `{ tools = { max_concurrent = 0, max_calls_per_response = 0, auto_approve = { "$default", "bash" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		var cmds []string
		for i := 1; i <= n; i++ {
			cmds = append(cmds, fmt.Sprintf("echo b%d >> runs.txt; echo out%d", i, i))
		}
		buf := mustOpen(t, s, "many/p.chat", bashCalls(t, cmds...))
		sampleLock(t, s)
		press(t, s, "<C-]>")
		// 100 commands (sandboxed) on a loaded machine: a generous bound.
		if _, err := s.Wait(120*time.Second, func(text string) bool {
			return len(buffer.Parse(strings.Split(text, "\n")).Incomplete()) == 0
		}); err != nil {
			t.Fatalf("the calls never all got results; messages:\n%s", s.Messages())
		}
		waitUnlocked(t, s)
		waitIdle(t, s)
		st := stopSampling(t, s)
		t.Logf("samples: %d locked, %d unlocked while a call waited", st.Locked, st.UnlockedWaiting)
		if st.UnlockedWaiting > 0 {
			t.Errorf("the buffer was modifiable while approved calls waited to run (%d samples), e.g. at %q", st.UnlockedWaiting, st.First)
		}
		doc := buffer.Parse(strings.Split(text(t, s), "\n"))
		if left := doc.Incomplete(); len(left) > 0 {
			t.Fatalf("%d calls without a result", len(left))
		}
		for i := 1; i <= n; i++ {
			id := fmt.Sprintf("b%d", i)
			if r := doc.Result(id); r == nil || r.IsError || commandOutput(r.Content) != fmt.Sprintf("out%d", i) {
				t.Errorf("result of %s: %+v", id, r)
			}
		}
		b, _ := os.ReadFile(filepath.Join(s.Dir, "many", "runs.txt"))
		if got := len(strings.Fields(string(b))); got != n {
			t.Errorf("%d executions for %d calls", got, n)
		}
		if log := s.HostLog(); strings.Contains(log, "journal: start") || strings.Contains(log, "journal: finish") || strings.Contains(log, "journal: record") {
			t.Errorf("journal writes failed:\n%s", grepLines(log, "journal: "))
		}
		if m := s.Messages(); strings.Contains(m, "crash-recovery journal") {
			t.Errorf("the user was told the journal failed:\n%s", m)
		}
		// Every call is in the journal, started and finished.
		out := hostText(t, s, "flemma.journal_log", buf, true)
		finished := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, `"kind":"call"`) && strings.Contains(l, `"status":"ok"`) {
				finished++
			}
		}
		if finished != n {
			t.Errorf("the journal has %d finished calls, want %d", finished, n)
		}
	})
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// hostWays are the ways a host goes while it works (issue 26 item 1).
var hostWays = []string{"restart", "crash", "hang then restart"}

// endHost makes the host go the way named, and waits until it is gone.
func endHost(t *testing.T, s *nvimtest.Session, how string) {
	t.Helper()
	pid := hostPID(t, s)
	switch how {
	case "restart":
		press(t, s, ":Flemma host:restart<CR>")
	case "crash":
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	case "hang then restart":
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		press(t, s, ":Flemma host:restart<CR>")
	default:
		t.Fatalf("no way %q", how)
	}
	waitGone(t, pid)
}

// statusMarks counts the running indicators and the interrupted marks.
func statusMarks(t *testing.T, s *nvimtest.Session) (running, interrupted int) {
	for _, m := range marks(t, s) {
		switch {
		case m.Kind == "status" && strings.Contains(m.Text, "running"), strings.Contains(m.Text, "queued"):
			running++
		case strings.Contains(m.Text, "interrupted"):
			interrupted++
		}
	}
	return
}

// diagnosticsWith returns the current buffer's diagnostics (1-based line:
// message) whose message contains s.
func diagnosticsWith(t *testing.T, s *nvimtest.Session, sub string) []string {
	t.Helper()
	var out []string
	if err := s.Lua(&out, `
		local out = {}
		for _, d in ipairs(vim.diagnostic.get(0)) do
			if d.message:find(..., 1, true) then
				table.insert(out, (d.lnum + 1) .. ": " .. d.message)
			end
		end
		return out`, sub); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHostGoneWhileToolsRun: however the host goes while calls run — a
// restart, a crash, a hang then a restart — the buffer ends unlocked, the
// running calls are shown as interrupted where they ran, and the next press
// finds them interrupted in the journal (it holds them, never runs them
// again). Issue 26 item 1: :Flemma host:restart left the buffer locked for
// good.
func TestHostGoneWhileToolsRun(t *testing.T) {
	// max_calls_per_response = 0: all 100 of one response run.
	setup := `{ tools = { max_concurrent = 0, max_calls_per_response = 0, auto_approve = { "$default", "bash" } } }`
	for _, how := range hostWays {
		t.Run(strings.ReplaceAll(how, " ", "_"), func(t *testing.T) {
			eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
				chat := bashCalls(t, "echo b1 >> runs.txt; sleep 60; echo done1", "echo b2 >> runs.txt; sleep 60; echo done2")
				mustOpen(t, s, "gone/g.chat", chat)
				press(t, s, "<C-]>")
				waitRunning(t, s, 2)
				// Both commands run (each wrote its line).
				runs := filepath.Join(s.Dir, "gone", "runs.txt")
				if _, err := s.Wait(20*time.Second, func(string) bool {
					b, _ := os.ReadFile(runs)
					return len(strings.Fields(string(b))) == 2
				}); err != nil {
					t.Fatal("the commands never ran")
				}
				endHost(t, s, how)
				if _, err := s.Wait(10*time.Second, func(string) bool {
					var on bool
					_ = s.Lua(&on, "return vim.bo.modifiable")
					running, interrupted := statusMarks(t, s)
					return on && running == 0 && interrupted == 2
				}); err != nil {
					var on bool
					_ = s.Lua(&on, "return vim.bo.modifiable")
					t.Fatalf("after the host went (%s): modifiable %v, marks %+v", how, on, marks(t, s))
				}
				if d := diagnosticsWith(t, s, "interrupted: the host stopped"); len(d) != 2 {
					t.Errorf("interrupted diagnostics: %q", d)
				}
				var line string
				if err := s.Lua(&line, `return require("flemma").statusline()`); err != nil || strings.Contains(line, "running") {
					t.Errorf("statusline %q, %v", line, err)
				}
				// The next press reads the journal: both calls started and
				// never finished, so they wait for the user, and run no more.
				press(t, s, "<C-]>")
				waitIdle(t, s)
				for _, id := range []string{"b1", "b2"} {
					if st := statusOf(t, s, id); st != buffer.StatusPending {
						t.Errorf("%s is %q after the press, want pending (interrupted)", id, st)
					}
				}
				if d := diagnosticsWith(t, s, "interrupted: it started"); len(d) != 2 {
					t.Errorf("the press did not find them interrupted in the journal: %q\n%s", d, s.Messages())
				}
				b, _ := os.ReadFile(runs)
				if got := strings.Fields(string(b)); len(got) != 2 {
					t.Errorf("runs: %q, want each call once", got)
				}
			})
		})
	}
}

// TestHostGoneDuringStream: a host that goes while a response streams in
// leaves the buffer unlocked, without the progress indicator, with the text
// received so far and the user's own.
func TestHostGoneDuringStream(t *testing.T) {
	long := strings.Repeat("word ", 400)
	for _, how := range hostWays {
		t.Run(strings.ReplaceAll(how, " ", "_"), func(t *testing.T) {
			f := &fakeAnthropic{turns: []string{sse(long)}, slow: 200 * time.Millisecond}
			eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
				mustOpen(t, s, "stream/s.chat", question)
				press(t, s, "<C-]>")
				if _, err := s.Wait(20*time.Second, func(text string) bool {
					var on bool
					_ = s.Lua(&on, "return vim.bo.modifiable")
					return strings.Contains(text, "word word") && !on
				}); err != nil {
					t.Fatalf("the response never streamed into a locked buffer:\n%s", text(t, s))
				}
				endHost(t, s, how)
				if _, err := s.Wait(10*time.Second, func(string) bool {
					var st struct {
						On       bool `msgpack:"on"`
						Progress int  `msgpack:"progress"`
					}
					_ = s.Lua(&st, `return { on = vim.bo.modifiable, progress = #vim.api.nvim_buf_get_extmarks(0, require("flemma.buf").namespaces().progress, 0, -1, {}) }`)
					return st.On && st.Progress == 0
				}); err != nil {
					t.Fatalf("after the host went (%s) the buffer stayed locked or kept its progress", how)
				}
				if got := text(t, s); !strings.HasPrefix(got, question) || !strings.Contains(got, "word word") {
					t.Errorf("text after the host went:\n%s", got)
				}
			})
		})
	}
}

// within runs fn, and fails the test if it has not returned after a
// generous watchdog (not a timed assertion: it only turns "Neovim froze"
// into a failure instead of a test that hangs).
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: Neovim did not return while the host hung", what)
	}
}

// TestHungHostBoundsEveryRequest: with the host stopped (SIGSTOP), every
// path that asks it something returns — setup(), :checkhealth flemma, a
// Lua tool's registration, <C-]>, :Flemma status — and says the host does
// not answer, with the way out (issue 26 item 3: setup(), :checkhealth and
// tool registration waited forever). :Flemma host:restart then works.
func TestHungHostBoundsEveryRequest(t *testing.T) {
	eachNvim(t, `{ host = { timeout = 1 } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("1+1")
		mustOpen(t, s, "hung/h.chat", chat)
		pid := hostPID(t, s)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

		within(t, "setup()", func() error {
			return s.Lua(nil, `require("flemma").setup({ host = { timeout = 1 } })`)
		})
		waitMessage(t, s, "has not answered flemma.setup")

		var health string
		within(t, ":checkhealth flemma", func() error {
			if err := s.Nv.Command("checkhealth flemma"); err != nil {
				return err
			}
			return s.Lua(&health, `return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")`)
		})
		if !strings.Contains(health, "did not answer flemma.health within 1 s") || !strings.Contains(health, "host:restart") {
			t.Errorf(":checkhealth does not say the host hangs:\n%s", health)
		}
		if err := s.Nv.Command("close"); err != nil {
			t.Fatal(err)
		}

		var registered bool
		within(t, "tool registration", func() error {
			return s.Lua(&registered, `return require("flemma.tools").register("late_tool", {
				description = "x", input_schema = { type = "object", properties = {} },
				execute = function() return { success = true, output = "x" } end })`)
		})
		waitMessage(t, s, "did not answer flemma.define_tools within 1 s")

		k, _ := s.Nv.ReplaceTermcodes("<C-]>", true, true, true)
		within(t, "<C-]>", func() error { return s.Nv.FeedKeys(k, "mx", false) })
		waitMessage(t, s, "has not answered flemma.cycle")
		k, _ = s.Nv.ReplaceTermcodes(":Flemma status<CR>", true, true, true)
		within(t, ":Flemma status", func() error { return s.Nv.FeedKeys(k, "mx", false) })
		waitMessage(t, s, "has not answered flemma.status")

		// The way out the messages name.
		within(t, ":Flemma host:restart", func() error { return s.Press(":Flemma host:restart<CR>") })
		waitGone(t, pid)
		waitMessage(t, s, "the host was restarted") // the requests it never answered
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", "")))
	})
}

// stateDir is flemma's state folder in the session (the journal's).
func stateDir(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	var dir string
	if err := s.Lua(&dir, `return require("flemma").state_dir()`); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stopHost stops the host (as quitting Neovim would) and waits until it is
// gone: its journal is closed.
func stopHost(t *testing.T, s *nvimtest.Session) {
	t.Helper()
	pid := hostPID(t, s)
	if err := s.Lua(nil, `require("flemma.host").stop()`); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

// fullDisk mounts a small filesystem over dir and fills it: a real ENOSPC
// for whatever flemma writes there next. When this machine does not let
// the test mount (not root), it makes the journal's path unusable instead
// (a folder where the file should be), and says so: the user must be told
// either way. It returns what the message names, and undo, which restores
// the folder (also done at cleanup).
func fullDisk(t *testing.T, dir string) (what string, undo func()) {
	t.Helper()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("cannot mount a small filesystem (%v: %s): the journal's path is made a folder instead of a full disk", err, strings.TrimSpace(string(out)))
		db := filepath.Join(dir, "journal.db")
		aside := db + ".chaos-aside"
		os.Rename(db, aside)
		os.Remove(db + "-wal")
		if err := os.Mkdir(db, 0o700); err != nil {
			t.Fatal(err)
		}
		return "not a regular file", func() { os.Remove(db); os.Rename(aside, db) }
	}
	done := false
	undo = func() {
		if !done {
			done = true
			exec.Command("umount", "-l", dir).Run()
		}
	}
	t.Cleanup(undo)
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	return "no space left", undo
}

// checkhealth returns the text of :checkhealth flemma.
func checkhealth(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	var out string
	if err := s.Nv.Command("checkhealth flemma"); err != nil {
		t.Fatal(err)
	}
	if err := s.Lua(&out, `local t = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"); vim.cmd("close"); return t`); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestJournalFaultsAreTold: a journal that cannot be opened (a full disk
// when the host starts), a damaged journal (moved aside) and a damaged WAL
// (records lost) are each told once in the message area, with what it
// costs and where the damaged file went, and stay in :checkhealth; tools
// run on (issue 26 item 4: they were only logged, or not at all).
func TestJournalFaultsAreTold(t *testing.T) {
	setup := func(dir string) string {
		return `{ host = { log_file = "` + dir + `/host.log" }, tools = { auto_approve = { "calculator" } } }`
	}
	tests := []struct {
		name  string
		fault func(t *testing.T, s *nvimtest.Session) []string // what the message and health must say
	}{
		{"full disk at start", func(t *testing.T, s *nvimtest.Session) []string {
			dir := stateDir(t, s)
			stopHost(t, s)
			what, _ := fullDisk(t, dir)
			return []string{"journal cannot be opened", what}
		}},
		{"damaged journal", func(t *testing.T, s *nvimtest.Session) []string {
			dir := stateDir(t, s)
			stopHost(t, s)
			// The whole journal: a host that had no time to close it
			// (killed after jobstop's grace) leaves its WAL, which would
			// still hold the pages the garbage covers.
			if err := os.WriteFile(filepath.Join(dir, "journal.db"), []byte(strings.Repeat("garbage ", 2048)), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, "journal.db-wal"))
			os.Remove(filepath.Join(dir, "journal.db-shm"))
			return []string{"journal was damaged", "moved it to " + filepath.Join(dir, "journal.db.corrupt-"), "could not be counted"}
		}},
		{"damaged WAL", func(t *testing.T, s *nvimtest.Session) []string {
			dir := stateDir(t, s)
			pid := hostPID(t, s)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil { // no checkpoint: the WAL stays
				t.Fatal(err)
			}
			waitGone(t, pid)
			f, err := os.OpenFile(filepath.Join(dir, "journal.db-wal"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte(strings.Repeat("garbage!", 8)), 0)
			f.Close()
			return []string{"journal lost records", "kept at " + filepath.Join(dir, "journal.db.wal-damaged-")}
		}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			logDir := t.TempDir()
			eachNvim(t, setup(logDir), func(t *testing.T, s *nvimtest.Session) {
				// Some history first: a call runs and is journaled.
				chat := calcCalls("1+1")
				mustOpen(t, s, "j/first.chat", chat)
				press(t, s, "<C-]>")
				waitText(t, s, withResults(chat, result("c1", "2", false)))
				want := tt.fault(t, s)
				// The next press starts a host, which meets the fault.
				chat2 := calcCalls("2+3")
				mustOpen(t, s, "j/second.chat", chat2)
				press(t, s, "<C-]>")
				waitText(t, s, withResults(chat2, result("c1", "5", false)))
				msgs := s.Messages()
				for _, w := range want {
					if !strings.Contains(msgs, w) {
						t.Errorf("the message area does not say %q:\n%s", w, msgs)
					}
				}
				if n := strings.Count(msgs, want[0]); n != 1 {
					t.Errorf("told %d times:\n%s", n, msgs)
				}
				health := checkhealth(t, s)
				for _, w := range want[1:] {
					if !strings.Contains(health, w) {
						t.Errorf(":checkhealth does not say %q:\n%s", w, health)
					}
				}
				// Once: another press says nothing more.
				press(t, s, "<C-]>")
				waitIdle(t, s)
				if n := strings.Count(s.Messages(), want[0]); n != 1 {
					t.Errorf("told %d times after another press", n)
				}
			})
		})
	}
}
