package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// chaosFaults are what TestChaos does to the host in turn, at a random
// moment of a press that runs tool calls:
//
//   - kill: SIGKILL;
//   - restart: :Flemma host:restart;
//   - hang: SIGSTOP, then setup() and :checkhealth flemma (both must
//     return, :checkhealth saying the host does not answer), then
//     :Flemma host:restart, the way out the messages name;
//   - full disk: the state folder is a full filesystem when the host
//     starts (the journal cannot be opened), then SIGKILL;
//   - corrupt journal: the journal file is garbage when the host starts
//     (it is moved aside), then SIGKILL.
var chaosFaults = []string{"kill", "restart", "hang", "full disk", "corrupt journal"}

// chaosCount is what TestChaos saw for one fault.
type chaosCount struct {
	iterations, doubles, interrupted, recovered, finished, told int
}

// TestChaos makes the host go (chaosFaults, in turn) at random moments
// while a press runs tool calls, and checks after every fault what issues
// 12 and 26 ask for:
//
//   - no call ever runs twice (each call appends its id to a file);
//   - the user's text is never lost (a line typed before the press);
//   - the buffer is never left locked, and no running indicator is left;
//   - the next press works: the interrupted calls wait as interrupted and
//     :Flemma tool:discard settles them; every call ends with a result;
//   - a fault of the journal or a hung host is told to the user.
//
// The randomness is in when the fault strikes; every check waits for a
// state. Counts are per iteration, from the messages the iteration showed
// (a hook on vim.notify), not from the cumulative :messages.
// FLEMMA_CHAOS_ITERATIONS sets the number of iterations per Neovim (make
// chaos: 200; make test: one per fault).
func TestChaos(t *testing.T) {
	n := len(chaosFaults)
	if v, err := strconv.Atoi(os.Getenv("FLEMMA_CHAOS_ITERATIONS")); err == nil && v > 0 {
		n = v
	}
	logDir := t.TempDir()
	setup := `{ host = { timeout = 2, log_file = "` + logDir + `/host.log" }, tools = { auto_approve = { "$default", "bash" }, max_concurrent = 3 } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		// Every message of the session, for per-iteration counts.
		if err := s.Lua(nil, `
			_G.flemma_chaos_notes = {}
			local show = vim.notify
			vim.notify = function(msg, ...)
				table.insert(_G.flemma_chaos_notes, tostring(msg))
				return show(msg, ...)
			end`); err != nil {
			t.Fatal(err)
		}
		notes := func() string { // the messages since the last call
			var out []string
			if err := s.Lua(&out, `local n = _G.flemma_chaos_notes; _G.flemma_chaos_notes = {}; return n`); err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, "\n")
		}
		counts := map[string]*chaosCount{}
		for _, f := range chaosFaults {
			counts[f] = &chaosCount{}
		}
		state := stateDir(t, s)
		for i := 0; i < n; i++ {
			fault := chaosFaults[i%len(chaosFaults)]
			c := counts[fault]
			c.iterations++
			notes()
			// The start conditions of the journal faults: the next host
			// meets them.
			var told string
			undo := func() {}
			switch fault {
			case "full disk":
				if running(t, s) {
					stopHost(t, s)
				}
				_, undo = fullDisk(t, state)
				told = "journal cannot be opened"
			case "corrupt journal":
				if running(t, s) {
					stopHost(t, s)
				}
				if err := os.WriteFile(filepath.Join(state, "journal.db"), []byte(strings.Repeat("garbage ", 1024)), 0o600); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(state, "journal.db-wal"))
				os.Remove(filepath.Join(state, "journal.db-shm"))
				told = "journal was damaged"
			}

			name := fmt.Sprintf("chaos/c%03d.chat", i)
			dir := filepath.Dir(filepath.Join(s.Dir, name))
			runs := filepath.Join(dir, fmt.Sprintf("runs%03d.txt", i))
			var cmds []string
			for k := 1; k <= 4; k++ {
				// Each call records that it started, works a little, and ends.
				cmds = append(cmds, fmt.Sprintf("echo b%d >> %s; sleep 0.0%d; echo done-b%d", k, filepath.Base(runs), rng.IntN(9)+1, k))
			}
			mustOpen(t, s, name, bashCalls(t, cmds...))
			// The user's own words, typed before the press.
			typed := fmt.Sprintf("my note %d", i)
			if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, 1, 1, false, { ... })`, typed); err != nil {
				t.Fatal(err)
			}
			host := hostPID(t, s)
			k, _ := s.Nv.ReplaceTermcodes("<C-]>", true, true, true)
			if err := s.Nv.FeedKeys(k, "mx", false); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond) // the chaos: a random moment
			switch fault {
			case "restart":
				press(t, s, ":Flemma host:restart<CR>")
			case "hang":
				_ = syscall.Kill(host, syscall.SIGSTOP)
				within(t, "setup() with a hung host", func() error {
					return s.Lua(nil, `require("flemma").setup(require("flemma").config())`)
				})
				var health string
				within(t, ":checkhealth with a hung host", func() error {
					if err := s.Nv.Command("checkhealth flemma"); err != nil {
						return err
					}
					return s.Lua(&health, `local t = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"); vim.cmd("close"); return t`)
				})
				if strings.Contains(health, "did not answer flemma.health") {
					c.told++
				} else {
					t.Errorf("iteration %d: :checkhealth with a hung host:\n%s", i, health)
				}
				press(t, s, ":Flemma host:restart<CR>")
			default:
				_ = syscall.Kill(host, syscall.SIGKILL)
			}
			// The plugin notices (and resends the press to a new host when
			// the old one died before answering); the buffer ends unlocked
			// and without running indicators.
			waitGone(t, host)
			if _, err := s.Wait(20*time.Second, func(string) bool {
				var modifiable bool
				_ = s.Lua(&modifiable, "return vim.bo.modifiable")
				running, _ := statusMarks(t, s)
				return modifiable && running == 0
			}); err != nil {
				t.Fatalf("iteration %d (%s): after the fault the buffer stayed locked or kept its indicators", i, fault)
			}
			if !strings.Contains(text(t, s), typed) {
				t.Fatalf("iteration %d (%s): the user's text was lost:\n%s", i, fault, text(t, s))
			}
			// Press until every call has a result, discarding the ones the
			// fault interrupted (what a user does after reading why they wait).
			for round := 0; ; round++ {
				if round > 20 {
					t.Fatalf("iteration %d (%s): the calls never all got results:\n%s\n%s", i, fault, text(t, s), s.Messages())
				}
				doc := buffer.Parse(strings.Split(text(t, s), "\n"))
				if len(doc.Incomplete()) == 0 {
					break
				}
				press(t, s, "<C-]>")
				waitIdle(t, s)
				doc = buffer.Parse(strings.Split(text(t, s), "\n"))
				for _, u := range doc.Incomplete() {
					r := doc.Result(u.ID)
					if r == nil || r.Status != buffer.StatusPending {
						continue
					}
					c.interrupted++
					cursorTo(t, s, "Tool Result:\\*\\* `"+u.ID+"`")
					press(t, s, ":Flemma tool:discard<CR>")
				}
			}
			waitIdle(t, s)
			doc := buffer.Parse(strings.Split(text(t, s), "\n"))
			for _, u := range doc.ToolUses() {
				r := doc.Result(u.ID)
				if r != nil && strings.Contains(r.Content, "done-"+u.ID) {
					c.finished++
				}
			}
			shown := notes()
			c.recovered += strings.Count(shown, "Recovered the result")
			if told != "" {
				if strings.Contains(shown, told) {
					c.told++
				} else {
					t.Errorf("iteration %d (%s): the user was not told %q:\n%s", i, fault, told, shown)
				}
			}
			b, _ := os.ReadFile(runs)
			count := map[string]int{}
			for _, id := range strings.Fields(string(b)) {
				count[id]++
				if count[id] > 1 {
					c.doubles++
					t.Errorf("iteration %d (%s): %s ran %d times", i, fault, id, count[id])
				}
			}
			if !strings.Contains(text(t, s), typed) {
				t.Fatalf("iteration %d (%s): the user's text was lost after the presses", i, fault)
			}
			if fault == "full disk" {
				// The host that runs without a journal goes, and the next
				// one opens the real journal again.
				stopHost(t, s)
				undo()
			}
		}
		var names []string
		for f := range counts {
			names = append(names, f)
		}
		sort.Strings(names)
		t.Logf("chaos: %d iterations on %s", n, nvimtest.Version(s.Nvim))
		t.Logf("%-16s %5s %8s %12s %9s %6s %7s", "fault", "iters", "finished", "interrupted", "recovered", "told", "doubles")
		for _, f := range names {
			c := counts[f]
			t.Logf("%-16s %5d %8d %12d %9d %6d %7d", f, c.iterations, c.finished, c.interrupted, c.recovered, c.told, c.doubles)
		}
	})
}

// running reports whether the session's host runs.
func running(t *testing.T, s *nvimtest.Session) bool {
	t.Helper()
	var on bool
	if err := s.Lua(&on, `return (require("flemma.host").running())`); err != nil {
		t.Fatal(err)
	}
	return on
}

// waitGone waits until a process has exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d outlived its end", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
