package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

var update = flag.Bool("update", false, "rewrite the golden files of e2e/testdata")

func chatbufFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "chatbuf", "conversation.chat"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// syntaxOn is what Neovim does by default at start-up (-u NONE, which the
// tests use to keep out the machine's config, skips it).
func syntaxOn(t *testing.T, s *nvimtest.Session) {
	t.Helper()
	if err := s.Nv.Command("syntax on"); err != nil {
		t.Fatal(err)
	}
}

// flemmaSyntax is one line per buffer line: its text, a tab, and the
// Flemma* syntax groups found on it (synstack of every column), in order.
func flemmaSyntax(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	var out string
	err := s.Lua(&out, `
		local out = {}
		for l = 1, vim.api.nvim_buf_line_count(0) do
			local line = vim.fn.getline(l)
			local groups, seen = {}, {}
			for col = 1, math.max(#line, 1) do
				for _, id in ipairs(vim.fn.synstack(l, col)) do
					local name = vim.fn.synIDattr(id, "name")
					if name:match("^Flemma") and not seen[name] then
						seen[name] = true
						table.insert(groups, name)
					end
				end
			end
			if #line > 60 then line = line:sub(1, 57) .. "..." end
			table.insert(out, line .. "\t" .. table.concat(groups, " "))
		end
		return table.concat(out, "\n") .. "\n"`)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChatSyntaxGolden: the highlighting of one conversation (roles, tool
// headers, each flemma:tool status, thinking, frontmatter, fences, the
// abort marker, an escaped line) is the golden capture on every Neovim;
// every Flemma group ends in a standard group, each status in its own;
// Markdown comes from treesitter where Neovim has the parser, else from the
// syntax file. go test ./e2e -run TestChatSyntaxGolden -update rewrites it.
func TestChatSyntaxGolden(t *testing.T) {
	golden := filepath.Join("testdata", "chatbuf", "conversation.syntax")
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		syntaxOn(t, s)
		chat := chatbufFixture(t)
		mustOpen(t, s, "conv.chat", chat)
		got := flemmaSyntax(t, s)
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("highlighting differs from %s:\n%s", golden, got)
		}
		if text(t, s) != strings.TrimSuffix(chat, "\n") {
			t.Error("highlighting changed the text")
		}
		// Where each group ends up: a standard group, never a Flemma one.
		var links map[string]string
		if err := s.Lua(&links, `
			local out = {}
			for _, g in ipairs(vim.fn.getcompletion("Flemma", "highlight")) do
				out[g] = vim.fn.synIDattr(vim.fn.synIDtrans(vim.fn.hlID(g)), "name")
			end
			return out`); err != nil {
			t.Fatal(err)
		}
		for _, g := range strings.Fields(strings.ReplaceAll(string(want), "\t", " ")) {
			if !strings.HasPrefix(g, "Flemma") {
				continue
			}
			if to := links[g]; to == "" || strings.HasPrefix(to, "Flemma") {
				t.Errorf("%s links to %q, not a standard group", g, to)
			}
		}
		colours := map[string]bool{}
		for _, st := range []string{"Pending", "Approved", "Rejected", "Denied"} {
			to := links["FlemmaStatus"+st]
			if colours[to] {
				t.Errorf("FlemmaStatus%s shares %s with another status", st, to)
			}
			colours[to] = true
		}
		if links["FlemmaStatusPending"] != "DiagnosticWarn" || links["FlemmaStatusRejected"] != "DiagnosticError" {
			t.Errorf("status links: %v", links)
		}
		// Markdown in message text.
		var md struct {
			TS   bool   `msgpack:"ts"`
			Bold string `msgpack:"bold"`
		}
		if err := s.Lua(&md, `
			local l = vim.fn.search("\\*\\*main.go\\*\\*", "nw")
			local names = {}
			for _, id in ipairs(vim.fn.synstack(l, 8)) do table.insert(names, vim.fn.synIDattr(id, "name")) end
			local hl = vim.treesitter and vim.treesitter.highlighter
			return { ts = (hl and hl.active and hl.active[vim.api.nvim_get_current_buf()]) ~= nil, bold = table.concat(names, " ") }`); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(nvimtest.Version(s.Nvim), "0.7") {
			if md.TS || !strings.Contains(md.Bold, "markdownBold") {
				t.Errorf("0.7: treesitter %v, syntax at **main.go** %q (want markdownBold)", md.TS, md.Bold)
			}
		} else if !md.TS {
			t.Errorf("no treesitter markdown highlighter on %s", nvimtest.Version(s.Nvim))
		}
	})
}

type foldInfo struct {
	Level  int    `msgpack:"level"`
	Closed int    `msgpack:"closed"`
	Text   string `msgpack:"text"`
}

func foldAt(t *testing.T, s *nvimtest.Session, pattern string) foldInfo {
	t.Helper()
	var f foldInfo
	if err := s.Lua(&f, `
		local l = vim.fn.search(..., "nw")
		if l == 0 then return { level = -1, closed = -1, text = "no line matches" } end
		local c = vim.fn.foldclosed(l)
		return { level = vim.fn.foldlevel(l), closed = c == -1 and -1 or c - l, text = c ~= -1 and vim.fn.foldtextresult(l) or "" }`, pattern); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestChatFolds: messages are folds of level 1, thinking and tool blocks of
// level 2; thinking, results over fold.result_lines and inputs over
// fold.input_chars start closed with a fold text that says what they hold;
// short results and placeholders stay open; the fold options stay with the
// chat buffer.
func TestChatFolds(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := chatbufFixture(t)
		mustOpen(t, s, "conv.chat", chat)
		want := []struct {
			pattern string
			level   int
			closed  bool
			text    string
		}{
			{`^@System:`, 1, false, ""},
			{`^not a role`, 1, false, ""},
			{`^<thinking>`, 2, true, "thinking — 2 lines, 38 chars"},
			{"toolu_01`)$", 2, false, ""},
			{"toolu_02`)$", 2, true, "Tool Use write: notes.txt — 774 chars"},
			{"^\\*\\*Tool Result:\\*\\* `toolu_01`", 2, true, "read: src/main.go — 12 lines"},
			{"^\\*\\*Tool Result:\\*\\* `toolu_02`", 2, false, ""},
			{"^\\*\\*Tool Result:\\*\\* `toolu_03`", 2, false, ""},
			{`^Done\.`, 1, false, ""},
		}
		for _, w := range want {
			got := foldAt(t, s, w.pattern)
			if got.Level != w.level || (got.Closed == 0) != w.closed || (w.closed && !strings.HasPrefix(got.Text, w.text)) {
				t.Errorf("%s: level %d, closed %v, text %q; want level %d, closed %v, text %q",
					w.pattern, got.Level, got.Closed == 0, got.Text, w.level, w.closed, w.text)
			}
		}
		// A closed message says who speaks and how it starts.
		if err := s.Lua(nil, `vim.cmd(vim.fn.search("^@System:", "nw") .. "foldclose")`); err != nil {
			t.Fatal(err)
		}
		if got := foldAt(t, s, `^@System:`); got.Text != "@System: Be brief. — 3 lines" {
			t.Errorf("closed @System: fold text %q", got.Text)
		}
		if text(t, s) != strings.TrimSuffix(chat, "\n") {
			t.Error("folding changed the text")
		}
		// The fold options are the chat buffer's, not the window's for
		// every buffer it shows later.
		var fdm string
		if err := s.Lua(&fdm, `vim.cmd("enew"); return vim.wo.foldmethod`); err != nil {
			t.Fatal(err)
		}
		if fdm != "manual" {
			t.Errorf("a new buffer in the chat's window has foldmethod %q", fdm)
		}
	})
}

// TestChatFoldsOff: fold = { enabled = false } leaves the window alone.
func TestChatFoldsOff(t *testing.T) {
	eachNvim(t, `{ fold = { enabled = false } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "conv.chat", chatbufFixture(t))
		var fdm string
		if err := s.Lua(&fdm, `return vim.wo.foldmethod`); err != nil {
			t.Fatal(err)
		}
		if fdm != "manual" {
			t.Errorf("foldmethod %q with folding off", fdm)
		}
	})
}

// TestChatNavigation: ]m [m ]t [t (with a count) move between messages and
// tool blocks; im/am and iT/aT select a message and a tool block; keys are
// configurable and false leaves one unmapped.
func TestChatNavigation(t *testing.T) {
	eachNvim(t, `{ fold = { enabled = false }, keymaps = { prev_tool = false, next_tool = "gn" } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := chatbufFixture(t)
		mustOpen(t, s, "conv.chat", chat)
		press(t, s, "gg")
		steps := []struct {
			keys string
			line int
		}{
			{"]m", 4}, {"]m", 7}, {"2]m", 58}, {"[m", 15}, {"G[m", 107},
			{"gg", 1}, {"gn", 22}, {"gn", 28}, {"3gn", 46}, {"]m", 58}, {"gn", 59},
		}
		for _, st := range steps {
			press(t, s, st.keys)
			if got := cursorLine(t, s); got != st.line {
				t.Fatalf("after %s the cursor is on line %d, want %d", st.keys, got, st.line)
			}
		}
		var mapped struct {
			Prev string `msgpack:"prev"`
			Next string `msgpack:"next"`
		}
		if err := s.Lua(&mapped, `return { prev = vim.fn.maparg("[t", "n"), next = vim.fn.maparg("]t", "n") }`); err != nil {
			t.Fatal(err)
		}
		if mapped.Prev != "" || mapped.Next != "" {
			t.Errorf("[t / ]t mapped although configured away: %+v", mapped)
		}
		// Text objects: a visual selection, then operators.
		sel := func(keys string) [2]int {
			t.Helper()
			press(t, s, keys+"<Esc>")
			var r [2]int
			if err := s.Lua(&r, `return { vim.fn.line("'<"), vim.fn.line("'>") }`); err != nil {
				t.Fatal(err)
			}
			return r
		}
		cursorTo(t, s, "^Be brief")
		if r := sel("vim"); r != [2]int{5, 5} {
			t.Errorf("vim on @System: selects %v, want 5-5", r)
		}
		if r := sel("vam"); r != [2]int{4, 6} {
			t.Errorf("vam on @System: selects %v, want 4-6", r)
		}
		cursorTo(t, s, "^func main")
		if r := sel("viT"); r != [2]int{62, 73} {
			t.Errorf("viT in a result selects %v, want 62-73", r)
		}
		if r := sel("vaT"); r != [2]int{59, 74} {
			t.Errorf("vaT in a result selects %v, want 59-74", r)
		}
		cursorTo(t, s, "toolu_03`)$")
		press(t, s, `"ayaT`)
		var reg string
		if err := s.Lua(&reg, `return vim.fn.getreg("a")`); err != nil {
			t.Fatal(err)
		}
		if reg != "**Tool Use:** `bash` (`toolu_03`)\n\n```json\n{\"command\": \"make test\", \"label\": \"tests\"}\n```\n" {
			t.Errorf("yaT yanked %q", reg)
		}
		cursorTo(t, s, "^Done\\.")
		press(t, s, "dim")
		if got := text(t, s); !strings.Contains(got, "@Assistant:\n\n@You:\n\\@Assistant:") {
			t.Errorf("dim did not delete the message text:\n%s", got[len(got)-120:])
		}
		press(t, s, "u")
		if text(t, s) != strings.TrimSuffix(chat, "\n") {
			t.Error("the text after dim and u is not the original")
		}
	})
}

// listingWindow waits for the listing window to show flemma://<name> and
// returns its text.
func listingWindow(t *testing.T, s *nvimtest.Session, name string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got struct {
			Name string `msgpack:"name"`
			Text string `msgpack:"text"`
		}
		if err := s.Lua(&got, `return { name = vim.api.nvim_buf_get_name(0), text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") }`); err != nil {
			t.Fatal(err)
		}
		if got.Name == "flemma://"+name {
			return got.Text
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listing window flemma://%s (current buffer %q); messages:\n%s", name, got.Name, s.Messages())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func windows(t *testing.T, s *nvimtest.Session) int {
	t.Helper()
	var n int
	if err := s.Lua(&n, `return #vim.api.nvim_tabpage_list_wins(0)`); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestListingWindow: :Flemma tool:list, status and tools open a scratch
// window instead of echoing (nothing lands in the message area); q closes
// it; <CR> on a call goes to it in the chat's window.
func TestListingWindow(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2", "3*3")
		chatBuf := mustOpen(t, s, "list.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), placeholder("c2", "pending", "")))
		if err := s.Nv.Command("messages clear"); err != nil {
			t.Fatal(err)
		}
		press(t, s, ":Flemma tool:list<CR>")
		list := listingWindow(t, s, "tool-list")
		if !strings.Contains(list, "calculator (c2): pending") || windows(t, s) != 2 {
			t.Fatalf("tool:list window (%d windows):\n%s", windows(t, s), list)
		}
		if m := strings.TrimSpace(s.Messages()); m != "" {
			t.Errorf("tool:list also wrote to the message area: %q", m)
		}
		// <CR> on the second call's line goes to it in the chat.
		press(t, s, "/c2<CR><CR>")
		var at struct {
			Buf  int    `msgpack:"buf"`
			Line string `msgpack:"line"`
		}
		if err := s.Lua(&at, `return { buf = vim.api.nvim_get_current_buf(), line = vim.api.nvim_get_current_line() }`); err != nil {
			t.Fatal(err)
		}
		if at.Buf != chatBuf || at.Line != "**Tool Use:** `calculator` (`c2`)" {
			t.Errorf("<CR> went to buffer %d, line %q", at.Buf, at.Line)
		}
		// :Flemma status replaces the listing in the same window; q closes it.
		press(t, s, ":Flemma status<CR>")
		if st := listingWindow(t, s, "status"); !strings.Contains(st, "anthropic") || windows(t, s) != 2 {
			t.Errorf("status window (%d windows):\n%s", windows(t, s), st)
		}
		press(t, s, "q")
		if n := windows(t, s); n != 1 {
			t.Errorf("%d windows after q", n)
		}
		if m := strings.TrimSpace(s.Messages()); m != "" {
			t.Errorf("the listings wrote to the message area: %q", m)
		}
	})
}

// TestNewChatTemplate: a new .chat starts with the template (not modified,
// not an undo step); <C-]> on a chat with nothing written says how to
// start; chat.template = "" leaves the buffer empty.
func TestNewChatTemplate(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		path := filepath.Join(s.Dir, "new.chat")
		if err := s.Lua(nil, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, path); err != nil {
			t.Fatal(err)
		}
		var st struct {
			Modified bool `msgpack:"modified"`
			Line     int  `msgpack:"line"`
		}
		if err := s.Lua(&st, `return { modified = vim.bo.modified, line = vim.fn.line(".") }`); err != nil {
			t.Fatal(err)
		}
		if got := text(t, s); got != "@You:\n" || st.Modified || st.Line != 2 {
			t.Errorf("new chat: %q, modified %v, cursor line %d", got, st.Modified, st.Line)
		}
		press(t, s, "u")
		press(t, s, "<C-]>")
		if got := text(t, s); got != "@You:\n" {
			t.Errorf("after u and <C-]>: %q", got)
		}
		if m := s.Messages(); !strings.Contains(m, "Nothing to send yet: write your message under @You:") {
			t.Errorf("<C-]> on an empty chat said: %q", m)
		}
	})
	eachNvim(t, `{ chat = { template = "@System:\nBe brief.\n\n@You:\n" } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, filepath.Join(s.Dir, "sys.chat")); err != nil {
			t.Fatal(err)
		}
		if got := text(t, s); got != "@System:\nBe brief.\n\n@You:\n" {
			t.Errorf("custom template: %q", got)
		}
	})
	eachNvim(t, `{ chat = { template = "" } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, filepath.Join(s.Dir, "bare.chat")); err != nil {
			t.Fatal(err)
		}
		if got := text(t, s); got != "" {
			t.Errorf("no template: %q", got)
		}
	})
}

// rulerLines are the 1-based lines that carry a role ruler.
func rulerLines(t *testing.T, s *nvimtest.Session) []int {
	t.Helper()
	var lines []int
	if err := s.Lua(&lines, `
		local out = {}
		for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, require("flemma.chatbuf").rulers_namespace, 0, -1, {})) do
			table.insert(out, m[2] + 1)
		end
		return out`); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestRoleRulers: every role line has a ruler, also the ones the host
// writes (a response) and the ones the user types; the text is untouched;
// chat.rulers = false draws none.
func TestRoleRulers(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("It is 42.")}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "r.chat", "@System:\nBe brief.\n\n"+question)
		if got := rulerLines(t, s); fmt.Sprint(got) != "[1 4]" {
			t.Errorf("rulers on %v, want [1 4]", got)
		}
		press(t, s, "<C-]>")
		waitText(t, s, "@System:\nBe brief.\n\n@You:\nWhat is 6*7?\n\n@Assistant:\nIt is 42.\n\n@You:\n")
		if _, err := s.Wait(5*time.Second, func(string) bool { return fmt.Sprint(rulerLines(t, s)) == "[1 4 7 10]" }); err != nil {
			t.Errorf("rulers after the response on %v, want [1 4 7 10]", rulerLines(t, s))
		}
	})
	eachNvim(t, `{ chat = { rulers = false } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "n.chat", question)
		if got := rulerLines(t, s); len(got) != 0 {
			t.Errorf("rulers with chat.rulers = false: %v", got)
		}
	})
}

// foldMap is, per line of the current window, its fold level and whether a
// fold starts there (foldclosed after zM), as a string for comparisons.
func foldMap(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	var out string
	if err := s.Lua(&out, `
		local view = vim.fn.winsaveview()
		vim.cmd("normal! zM")
		local out = {}
		for l = 1, vim.api.nvim_buf_line_count(0) do
			out[#out + 1] = string.format("%d:%d:%d %s", l, vim.fn.foldlevel(l), vim.fn.foldclosed(l), vim.fn.getline(l):sub(1, 20))
		end
		vim.cmd("normal! zR")
		vim.fn.winrestview(view)
		return table.concat(out, "\n")`); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFoldsAfterResponse (issue 27 item 3): right after the host wrote a
// response (streamed, then the new @You:), the folds of the chat window are
// those of the same text opened fresh: every message a fold of its own
// under zM, the new @You: included, and the fold text names the answer.
func TestFoldsAfterResponse(t *testing.T) {
	answer := "First paragraph of the answer.\n\nSecond paragraph, longer than the first one.\n\nThird."
	// The request carries one answer already: the server's second turn.
	f := &fakeAnthropic{turns: []string{sse(answer), sse(answer)}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		chat := "@System:\nBe brief.\n\n@You:\nFirst question.\n\n@Assistant:\nFirst answer.\n\n" + question
		mustOpen(t, s, "f.chat", chat)
		// Folds computed before the response, as a user has them.
		_ = foldMap(t, s)
		press(t, s, "<C-]>")
		want := strings.TrimSuffix(chat, "\n") + "\n\n@Assistant:\n" + answer + "\n\n@You:\n"
		waitText(t, s, want)
		if err := s.WaitIdle(); err != nil {
			t.Fatal(err)
		}
		got := foldMap(t, s)
		// The same text in a fresh chat buffer: folds from scratch.
		if err := s.Lua(nil, `
			local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
			vim.cmd("enew")
			vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
			vim.bo.filetype = "chat"`); err != nil {
			t.Fatal(err)
		}
		fresh := foldMap(t, s)
		if got != fresh {
			t.Errorf("folds after the response:\n%s\nfolds of the same text opened fresh:\n%s", got, fresh)
		}
		for _, l := range strings.Split(got, "\n") {
			var n, level, closed int
			var rest string
			fmt.Sscanf(l, "%d:%d:%d %s", &n, &level, &closed, &rest)
			if strings.HasPrefix(rest, "@") && closed != n {
				t.Errorf("line %d (%s) is not the start of its own closed fold under zM: %s", n, rest, l)
			}
		}
	})
}

// thinkingTurn is an answer that thinks a word per event (words lines of
// it, a line break every 6 words), then says "Done.".
func thinkingTurn(words int) string {
	var b strings.Builder
	ev := func(v string) { fmt.Fprintf(&b, "event: x\ndata: %s\n\n", v) }
	ev(`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"test-model","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`)
	ev(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`)
	for i := 0; i < words; i++ {
		w := "pondering "
		if i%6 == 5 {
			w = "pondering\\n"
		}
		ev(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"` + w + `"}}`)
	}
	ev(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`)
	ev(`{"type":"content_block_stop","index":0}`)
	ev(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`)
	ev(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Done."}}`)
	ev(`{"type":"content_block_stop","index":1}`)
	ev(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`)
	ev(`{"type":"message_stop"}`)
	return b.String()
}

// TestProgressStaysAfterFlushes (issue 27 item 7): while an answer thinks,
// after every write of the host the progress note ("thinking… N chars") is
// on the buffer's last line, where it is drawn, and no ruler is on that
// line to push it out of the window: it never blinks away between two
// writes.
func TestProgressStaysAfterFlushes(t *testing.T) {
	f := &fakeAnthropic{turns: []string{thinkingTurn(120)}, slow: 3 * time.Millisecond}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "p.chat", question)
		if err := s.Lua(nil, `
			local buf = require("flemma.buf")
			local apply = buf.apply
			_G.PROGRESS_SEEN = {}
			buf.apply = function(bufnr, ...)
				local res = apply(bufnr, ...)
				local b = require("flemma.state").buffers[bufnr]
				if b and b.progress then
					local last = vim.api.nvim_buf_line_count(bufnr) - 1
					local ns = buf.namespaces().progress
					local on_last = #vim.api.nvim_buf_get_extmarks(bufnr, ns, { last, 0 }, { last, -1 }, {}) > 0
					local ruler = #vim.api.nvim_buf_get_extmarks(bufnr, require("flemma.chatbuf").rulers_namespace, { last, 0 }, { last, -1 }, {}) > 0
					table.insert(PROGRESS_SEEN, { on_last = on_last, ruler = ruler, line = vim.api.nvim_buf_get_lines(bufnr, last, last + 1, false)[1] })
				end
				return res
			end`); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		if _, err := s.Wait(20*time.Second, func(text string) bool { return strings.Contains(text, "Done.") && strings.HasSuffix(text, "@You:\n") }); err != nil {
			t.Fatalf("the answer did not end: %v", err)
		}
		var seen []struct {
			OnLast bool   `msgpack:"on_last"`
			Ruler  bool   `msgpack:"ruler"`
			Line   string `msgpack:"line"`
		}
		if err := s.Lua(&seen, `return PROGRESS_SEEN`); err != nil {
			t.Fatal(err)
		}
		if len(seen) < 5 {
			t.Fatalf("only %d writes while the progress was shown", len(seen))
		}
		for i, w := range seen {
			if !w.OnLast || w.Ruler {
				t.Errorf("write %d of %d: progress on the last line %v, a ruler there %v (line %q)", i+1, len(seen), w.OnLast, w.Ruler, w.Line)
			}
		}
	})
}
