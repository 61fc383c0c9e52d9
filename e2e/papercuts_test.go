package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// replayTurn is the Anthropic SSE body of one turn of a replay script: the
// events given, between message_start and the message's end with stop.
func replayTurn(stop string, events ...string) string {
	var b strings.Builder
	ev := func(v string) { fmt.Fprintf(&b, "event: x\ndata: %s\n\n", v) }
	ev(`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"replay","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`)
	for _, e := range events {
		ev(e)
	}
	ev(`{"type":"message_delta","delta":{"stop_reason":"` + stop + `"},"usage":{"output_tokens":9}}`)
	ev(`{"type":"message_stop"}`)
	return b.String()
}

// Events of a replay turn, by content block index.
func thinkStart(i int) string {
	return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":""}}`, i)
}
func thinkDelta(i int, s string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%q}}`, i, s)
}
func signDelta(i int, sig string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":%q}}`, i, sig)
}
func textStart(i int) string {
	return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i)
}
func textDelta(i int, s string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%q}}`, i, s)
}
func toolStart(i int, id, name string) string {
	return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, name)
}
func toolDelta(i int, json string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%q}}`, i, json)
}
func blockStop(i int) string { return fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i) }

// writeReplay writes a replay script (the format of :help flemma-replay)
// and returns the setup that answers from it.
func writeReplay(t *testing.T, delay string, turns ...string) string {
	t.Helper()
	var b strings.Builder
	if delay != "" {
		b.WriteString("delay: " + delay + "\n")
	}
	for _, turn := range turns {
		b.WriteString("=== turn ===\n" + turn)
	}
	file := filepath.Join(t.TempDir(), "script.sse")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return `provider = "replay", providers = { replay = { file = "` + file + `" } }`
}

// TestThinkingWrittenFirst (issue 27 item 8): the thinking that came first
// in the stream is written first, before the text and the call it led to.
func TestThinkingWrittenFirst(t *testing.T) {
	setup := writeReplay(t, "",
		replayTurn("tool_use",
			thinkStart(0), thinkDelta(0, "The user wants 6*7; the calculator says."), signDelta(0, "c2ln"), blockStop(0),
			textStart(1), textDelta(1, "Computing."), blockStop(1),
			toolStart(2, "toolu_c1", "calculator"), toolDelta(2, `{"expression": "6*7"}`), blockStop(2)),
		replayTurn("end_turn", textStart(0), textDelta(0, "It is 42."), blockStop(0)))
	eachNvim(t, `{ `+setup+`, tools = { auto_approve = { "calculator" } } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "th.chat", "@You:\nWhat is 6*7?\n")
		press(t, s, "<C-]>")
		got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "It is 42.") && strings.HasSuffix(x, "@You:\n") })
		if err != nil {
			t.Fatalf("the answer did not end:\n%s", got)
		}
		want := "@You:\nWhat is 6*7?\n\n@Assistant:\n<thinking anthropic:signature=\"c2ln\">\nThe user wants 6*7; the calculator says.\n</thinking>\n\nComputing.\n\n**Tool Use:** `calculator` (`toolu_c1`)\n"
		if !strings.HasPrefix(got, want) {
			t.Errorf("the thinking is not written first:\n%s\nwant it to start:\n%s", got, want)
		}
	})
}

// TestCancelDuringThinkingKeepsIt (issue 27 item 8): <C-c> while the answer
// is still thinking (Anthropic's stream, no signature yet) keeps the
// @Assistant: message with what was thought, marked cut as a cancel during
// the text is.
func TestCancelDuringThinkingKeepsIt(t *testing.T) {
	events := []string{thinkStart(0), thinkDelta(0, "First I list the files.")}
	for range 60 { // a long thought: 60 pieces at 250 ms
		events = append(events, thinkDelta(0, " More."))
	}
	events = append(events, signDelta(0, "c2ln"), blockStop(0), textStart(1), textDelta(1, "Done."), blockStop(1))
	setup := writeReplay(t, "250ms", replayTurn("end_turn", events...))
	eachNvim(t, `{ `+setup+` }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "cancel.chat", "@You:\nList them.\n")
		press(t, s, "<C-]>")
		waitThinking(t, s)
		press(t, s, "<C-c>")
		got, err := s.Wait(10*time.Second, func(x string) bool { return strings.HasSuffix(x, "@You:\n") })
		if err != nil {
			t.Fatalf("the cancel did not end the answer:\n%s", got)
		}
		want := "@You:\nList them.\n\n@Assistant:\n<thinking>\nFirst I list the files."
		end := "</thinking>\n\n<!-- flemma:aborted: Response interrupted by the user. -->\n\n@You:\n"
		if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, end) || strings.Contains(got, "Done.") {
			t.Errorf("after <C-c> during thinking:\n%s\nwant it to start:\n%s\nand end:\n%s", got, want, end)
		}
	})
}

// fakeCommand puts an executable script named name on a new folder and
// returns the PATH that finds it first.
func fakeCommand(t *testing.T, name, script string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return "PATH=" + dir + ":" + os.Getenv("PATH")
}

// TestHealthVertexNeedsAToken (issue 27 item 8): gcloud on $PATH that
// cannot give a token (not logged in) is not "credentials present" in
// :checkhealth flemma; one that gives a token is.
func TestHealthVertexNeedsAToken(t *testing.T) {
	for _, c := range []struct {
		name, script, want string
		present            bool
	}{
		{"not logged in", "echo 'ERROR: (gcloud.auth.print-access-token) You do not currently have an active account selected.' >&2; exit 1", "log in with `gcloud auth login`", false},
		{"logged in", "echo ya29.fake-token", "the command `gcloud`, which gave one", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := []string{fakeCommand(t, "gcloud", c.script), "VERTEX_AI_ACCESS_TOKEN=", "VERTEX_ACCESS_TOKEN="}
			eachNvimEnv(t, `{ provider = "vertex", providers = { vertex = { project = "p" } } }`, env, func(t *testing.T, s *nvimtest.Session) {
				if err := s.Nv.Command("checkhealth flemma"); err != nil {
					t.Fatal(err)
				}
				out := text(t, s)
				var line string
				for _, l := range strings.Split(out, "\n") {
					if strings.Contains(l, "vertex credentials") {
						line = l
					}
				}
				if got := strings.Contains(line, "vertex credentials present"); got != c.present || !strings.Contains(line, c.want) {
					t.Errorf("checkhealth's vertex line %q: want present %v and %q\n%s", line, c.present, c.want, out)
				}
				if !c.present && !strings.Contains(line, "WARNING") {
					t.Errorf("the active provider's credential is not a warning: %q", line)
				}
				if strings.Contains(out, "ya29.fake-token") {
					t.Errorf("checkhealth shows the token:\n%s", out)
				}
			})
		})
	}
}

// messageArea is what the message area (the screen's last line) shows once
// Neovim has redrawn.
func messageArea(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	var line string
	if err := s.Lua(&line, `
		vim.cmd("redraw")
		local row, chars = vim.o.lines, {}
		for c = 1, vim.o.columns do
			chars[#chars + 1] = vim.fn.nr2char(vim.fn.screenchar(row, c))
		end
		return vim.trim(table.concat(chars))`); err != nil {
		t.Fatal(err)
	}
	return line
}

// TestPausedNoticeGoesOnApproval (issue 27 item 8): "Autopilot paused: …
// waits for your approval" leaves the message area once the user approved
// with <M-CR> and the cycle goes on; it does not stay over the answer
// that follows.
func TestPausedNoticeGoesOnApproval(t *testing.T) {
	answer := []string{textStart(0)}
	for range 30 {
		answer = append(answer, textDelta(0, "Two. "))
	}
	answer = append(answer, blockStop(0))
	setup := writeReplay(t, "150ms",
		replayTurn("tool_use", toolStart(0, "toolu_p1", "calculator"), toolDelta(0, `{"expression": "1+1"}`), blockStop(0)),
		replayTurn("end_turn", answer...))
	eachNvim(t, `{ `+setup+` }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "pause.chat", "@You:\nWhat is 1+1?\n")
		press(t, s, "<C-]>")
		if _, err := s.Wait(20*time.Second, func(string) bool {
			return strings.Contains(messageArea(t, s), "Autopilot paused: calculator waits for your approval.")
		}); err != nil {
			t.Fatalf("no paused notice; message area %q, buffer:\n%s", messageArea(t, s), text(t, s))
		}
		press(t, s, "<M-CR>")
		// The second answer streams: the notice must be gone by now.
		if _, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "Two. ") }); err != nil {
			t.Fatalf("the cycle did not go on after <M-CR>:\n%s", text(t, s))
		}
		if m := messageArea(t, s); strings.Contains(m, "Autopilot paused") {
			t.Errorf("the paused notice stays after <M-CR>, while the answer streams: %q", m)
		}
		if m := s.Messages(); !strings.Contains(m, "Autopilot paused: calculator waits for your approval.") {
			t.Errorf(":messages lost the notice:\n%s", m)
		}
	})
}

// TestToolListSaysByYouFromTheJournal (issue 27 item 9): after the calls the
// user approved and rejected have finished and the answer came (the
// session no longer holds their decisions), :Flemma tool:list still says
// the decisions were the user's, read from the journal, not the policy's
// verdict from before.
func TestToolListSaysByYouFromTheJournal(t *testing.T) {
	setup := writeReplay(t, "",
		replayTurn("tool_use",
			toolStart(0, "toolu_a", "calculator"), toolDelta(0, `{"expression": "1+1"}`), blockStop(0),
			toolStart(1, "toolu_b", "calculator"), toolDelta(1, `{"expression": "2+2"}`), blockStop(1)),
		replayTurn("end_turn", textStart(0), textDelta(0, "Done."), blockStop(0)),
		replayTurn("end_turn", textStart(0), textDelta(0, "Welcome."), blockStop(0)))
	eachNvim(t, `{ `+setup+` }`, func(t *testing.T, s *nvimtest.Session) {
		buf := mustOpen(t, s, "list.chat", "@You:\nCompute.\n")
		press(t, s, "<C-]>")
		if got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Count(x, "status=pending") == 2 }); err != nil {
			t.Fatalf("no pending calls:\n%s", got)
		}
		cursorTo(t, s, "status=pending")
		press(t, s, ":Flemma tool:approve<CR>")
		cursorTo(t, s, "status=pending")
		press(t, s, ":Flemma tool:reject not now<CR>")
		press(t, s, "<C-]>")
		if got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "Done.") && strings.HasSuffix(x, "@You:\n") }); err != nil {
			t.Fatalf("the answer did not come:\n%s", got)
		}
		waitIdle(t, s)
		// The next press is done with both calls: the session lets their
		// records go.
		appendLines(t, s, "Thanks.")
		press(t, s, "<C-]>")
		if got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "Welcome.") && strings.HasSuffix(x, "@You:\n") }); err != nil {
			t.Fatalf("the second answer did not come:\n%s", got)
		}
		waitIdle(t, s)
		list := hostText(t, s, "flemma.tool_list", buf)
		for _, want := range []string{"calculator (toolu_a): result (ran in ", "approved by you\n", "calculator (toolu_b): error result  — rejected by you"} {
			if !strings.Contains(list, want) {
				t.Errorf(":Flemma tool:list lacks %q:\n%s", want, list)
			}
		}
	})
}

// TestAutoWrite (issue 27, what users of the peers reach for): with
// editing.auto_write the chat is written to its file once the answer is
// in, with no prompt; without it the file is left alone. A file changed on
// disk meanwhile is not overwritten, and that is said once.
func TestAutoWrite(t *testing.T) {
	turn := replayTurn("end_turn", textStart(0), textDelta(0, "Hello from the script."), blockStop(0))
	setup := writeReplay(t, "", turn, turn, turn)
	// The buffer's text (its last line empty); the file has a newline
	// after each line.
	const want = "@You:\nHi\n\n@Assistant:\nHello from the script.\n\n@You:\n"
	readFile := func(t *testing.T, s *nvimtest.Session, name string) string {
		b, err := os.ReadFile(filepath.Join(s.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t.Run("on", func(t *testing.T) {
		eachNvim(t, `{ `+setup+`, editing = { auto_write = true } }`, func(t *testing.T, s *nvimtest.Session) {
			mustOpen(t, s, "aw.chat", "@You:\nHi\n")
			press(t, s, "<C-]>")
			waitText(t, s, want)
			if _, err := s.Wait(10*time.Second, func(string) bool { return readFile(t, s, "aw.chat") == want+"\n" }); err != nil {
				t.Fatalf("the file after the answer:\n%s", readFile(t, s, "aw.chat"))
			}
			var modified bool
			if err := s.Lua(&modified, `return vim.bo.modified`); err != nil || modified {
				t.Errorf("the buffer is still 'modified' after the write (%v)", err)
			}
			// Someone else changes the file: the next answer is not written
			// over it, and the user is told once.
			path := filepath.Join(s.Dir, "aw.chat")
			time.Sleep(10 * time.Millisecond) // a later modification time than the write's
			if err := os.WriteFile(path, []byte("changed elsewhere\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			appendLines(t, s, "Again?")
			press(t, s, "<C-]>")
			waitMessage(t, s, "editing.auto_write: aw.chat changed on disk since it was read: not written")
			if got := readFile(t, s, "aw.chat"); got != "changed elsewhere\n" {
				t.Errorf("the file changed elsewhere was overwritten:\n%s", got)
			}
		})
	})
	t.Run("off", func(t *testing.T) {
		eachNvim(t, `{ `+setup+` }`, func(t *testing.T, s *nvimtest.Session) {
			mustOpen(t, s, "aw.chat", "@You:\nHi\n")
			press(t, s, "<C-]>")
			waitText(t, s, want)
			waitIdle(t, s)
			if got := readFile(t, s, "aw.chat"); got != "@You:\nHi\n" {
				t.Errorf("the file was written without editing.auto_write:\n%s", got)
			}
		})
	})
}

// roleLineMarks is, per line of the current buffer with a mark of the
// rulers' namespace, the mark's id.
func roleLineMarks(t *testing.T, s *nvimtest.Session) map[int]int {
	t.Helper()
	var marks [][]int
	if err := s.Lua(&marks, `
		local ns = require("flemma.chatbuf").rulers_namespace
		local out = {}
		for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, {})) do
			out[#out + 1] = { m[2] + 1, m[1] }
		end
		return out`); err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for _, m := range marks {
		got[m[0]] = m[1]
	}
	return got
}

// lineBackground is the background colour Neovim draws past the text of
// screen line row (1-based; the window starts at the top), -1 for none.
func lineBackground(t *testing.T, s *nvimtest.Session, row int) int {
	t.Helper()
	var bg int
	if err := s.Lua(&bg, `
		-- A message wider than the message area scrolls the screen up
		-- until the next full redraw.
		vim.cmd("echo ''")
		vim.cmd("redraw!")
		local cell = vim.api.nvim__inspect_cell(1, ... - 1, vim.o.columns - 2)
		return cell[2].background or -1`, row); err != nil {
		t.Fatal(err)
	}
	return bg
}

// TestRoleBackgrounds (issue 27, what users of the peers reach for):
// chat.role_backgrounds draws the @You: and @Assistant: lines with the
// backgrounds of FlemmaRoleLineYou and FlemmaRoleLineAssistant, which the
// user links or sets; a role line typed gets its own, and typing elsewhere
// redraws no other role line (the rulers' incremental path). Off by
// default.
func TestRoleBackgrounds(t *testing.T) {
	chat := "@You:\nHi\n\n@Assistant:\nHello.\n\n@You:\nMore\n"
	setColours := `vim.api.nvim_set_hl(0, "FlemmaRoleLineYou", { bg = "#102030" })
		vim.api.nvim_set_hl(0, "FlemmaRoleLineAssistant", { bg = "#405060" })`
	const you, assistant = 0x102030, 0x405060
	eachNvim(t, `{ chat = { role_backgrounds = true } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "bg.chat", chat)
		if err := s.Lua(nil, setColours); err != nil {
			t.Fatal(err)
		}
		wrong := func() string {
			var out []string
			for row, want := range map[int]int{1: you, 2: -1, 4: assistant, 5: -1, 7: you} {
				if got := lineBackground(t, s, row); got != want {
					out = append(out, fmt.Sprintf("line %d: background %#x, want %#x", row, got, want))
				}
			}
			return strings.Join(out, "; ")
		}
		if _, err := s.Wait(5*time.Second, func(string) bool { return wrong() == "" }); err != nil {
			t.Errorf("role line backgrounds: %s", wrong())
		}
		before := roleLineMarks(t, s)
		// Type a new role line at the end, as a user would.
		press(t, s, "Go<CR>@Assistant:<CR>Typed.<Esc>")
		if _, err := s.Wait(5*time.Second, func(string) bool { return lineBackground(t, s, 10) == assistant }); err != nil {
			t.Errorf("the typed role line has background %#x, want %#x:\n%s", lineBackground(t, s, 10), assistant, text(t, s))
		}
		after := roleLineMarks(t, s)
		for _, l := range []int{1, 4, 7} {
			if before[l] == 0 || after[l] != before[l] {
				t.Errorf("the role line %d was drawn again for a change below it (mark %d, then %d)", l, before[l], after[l])
			}
		}
	})
	eachNvim(t, `{}`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "bg.chat", chat)
		if err := s.Lua(nil, setColours); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Wait(5*time.Second, func(string) bool { return lineBackground(t, s, 1) == -1 }); err != nil {
			t.Errorf("a role line has a background %#x without chat.role_backgrounds", lineBackground(t, s, 1))
		}
	})
}
