package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// diffLines returns the virtual lines (text, highlight) under the pending
// placeholders of the current buffer.
func diffLines(t *testing.T, s *nvimtest.Session) []string {
	t.Helper()
	var out []string
	err := s.Lua(&out, `
		local ns = require("flemma.buf").namespaces().marks
		local out = {}
		for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
			for _, vl in ipairs(m[4].virt_lines or {}) do
				table.insert(out, vl[1][1] .. "|" .. vl[1][2])
			end
		end
		return out`)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tabs(t *testing.T, s *nvimtest.Session) int {
	t.Helper()
	var n int
	if err := s.Lua(&n, `return #vim.api.nvim_list_tabpages()`); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitTabs(t *testing.T, s *nvimtest.Session, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for tabs(t, s) != n {
		if time.Now().After(deadline) {
			t.Fatalf("never %d tab pages; messages:\n%s", n, s.Messages())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDiffReview: a pending edit shows its diff under the placeholder;
// <CR> on the block opens the file and the proposal side by side; the user
// takes one hunk back from the file (diffget), :w makes that version the
// call's input and approves it (a call from a foreign file, which no
// policy may approve: only the user's review did); the next <C-]> writes
// exactly the reviewed version, and the result tells the model.
func TestDiffReview(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		var orig strings.Builder
		for _, l := range []string{"l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8", "l9", "l10", "l11"} {
			orig.WriteString(l + "\n")
		}
		target := filepath.Join(s.Dir, "notes.txt")
		if err := os.WriteFile(target, []byte(orig.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		input, _ := json.Marshal(map[string]any{"path": "notes.txt", "label": "bump two lines",
			"oldText": "l2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n", "newText": "L2\nl3\nl4\nl5\nl6\nl7\nl8\nL9\n"})
		chat := toolChat("edit", "e1", string(input))
		mustOpenForeign(t, s, "d.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("e1", "pending", "")))
		want := []string{"edit: notes.txt  # bump two lines|FlemmaToolPreview",
			"@@ -1,3 +1,3 @@|FlemmaToolPreview", " l1|FlemmaToolPreview", "-l2|DiffDelete", "+L2|DiffAdd", " l3|FlemmaToolPreview",
			"@@ -8,3 +8,3 @@|FlemmaToolPreview", " l8|FlemmaToolPreview", "-l9|DiffDelete", "+L9|DiffAdd", " l10|FlemmaToolPreview"}
		if got := diffLines(t, s); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("preview lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}

		// <CR> on the Tool Use header opens the review.
		lines := strings.Split(text(t, s), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "**Tool Use:**") {
				if err := s.Nv.Command("normal! " + strconv.Itoa(i+1) + "G"); err != nil {
					t.Fatal(err)
				}
			}
		}
		press(t, s, "<CR>")
		waitTabs(t, s, 2)
		var view struct {
			Wins     int      `msgpack:"wins"`
			Diff     bool     `msgpack:"diff"`
			Proposal []string `msgpack:"proposal"`
		}
		if err := s.Lua(&view, `return { wins = #vim.api.nvim_tabpage_list_wins(0), diff = vim.wo.diff,
			proposal = vim.api.nvim_buf_get_lines(0, 0, -1, false) }`); err != nil {
			t.Fatal(err)
		}
		if view.Wins != 2 || !view.Diff || strings.Join(view.Proposal, ",") != "l1,L2,l3,l4,l5,l6,l7,l8,L9,l10,l11" {
			t.Fatalf("diff view = %+v", view)
		}
		// Drop the first hunk (take the file's line 2 back), then :w.
		if err := s.Nv.Command("2diffget"); err != nil {
			t.Fatal(err)
		}
		press(t, s, ":w<CR>")
		waitTabs(t, s, 1)
		waitIdle(t, s)
		got := text(t, s)
		if !strings.Contains(got, "```flemma:tool status=approved") || !strings.Contains(got, `"oldText":"l9\n"`) || !strings.Contains(got, `"newText":"L9\n"`) {
			t.Fatalf("after the review the chat is:\n%s", got)
		}
		if b, _ := os.ReadFile(target); string(b) != orig.String() {
			t.Fatalf("the review wrote the file before the call ran")
		}

		press(t, s, "<C-]>")
		if _, err := s.Wait(10*time.Second, func(text string) bool { _, _, ok := resultOf(text, "e1"); return ok }); err != nil {
			t.Fatalf("the reviewed edit never ran:\n%s\n%s", text(t, s), s.Messages())
		}
		waitIdle(t, s)
		body, isErr, _ := resultOf(text(t, s), "e1")
		if isErr || !strings.Contains(body, "the user reviewed this change and modified it") || !strings.Contains(body, "Successfully replaced text in notes.txt") {
			t.Errorf("result = %q (error %v)", body, isErr)
		}
		wantFile := strings.Replace(orig.String(), "l9\n", "L9\n", 1)
		if b, _ := os.ReadFile(target); string(b) != wantFile {
			t.Errorf("notes.txt = %q, want %q", b, wantFile)
		}
	})
}

// TestDiffReviewReject: :Flemma tool:reject in the view rejects the call
// with the reason given, and closes the view; nothing is written.
func TestDiffReviewReject(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := toolChat("write", "w1", `{"path": "new.txt", "content": "hello\n", "label": "greet"}`)
		mustOpenForeign(t, s, "r.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("w1", "pending", "")))
		press(t, s, ":Flemma tool:diff<CR>")
		waitTabs(t, s, 2)
		press(t, s, ":Flemma tool:reject not now<CR>")
		waitTabs(t, s, 1)
		waitText(t, s, withResults(chat, placeholder("w1", "rejected", "not now")))
		if _, err := os.Stat(filepath.Join(s.Dir, "new.txt")); err == nil {
			t.Errorf("a rejected write created its file")
		}
	})
}

// TestBashFilesUndo: a sandboxed bash lists the files it created in its
// result, and :Flemma tool:undo on the result removes them.
func TestBashFilesUndo(t *testing.T) {
	needBwrap(t)
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := toolChat("bash", "b1", `{"command": "echo hi > made.txt", "label": "make a file", "timeout": null}`)
		mustOpen(t, s, "bash/b.chat", chat)
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "b1")
		if !strings.Contains(body, "created: made.txt") {
			t.Fatalf("the result does not list the created file: %q", body)
		}
		made := filepath.Join(s.Dir, "bash", "made.txt")
		if _, err := os.Stat(made); err != nil {
			t.Fatalf("bash did not run: %v", err)
		}
		waitIdle(t, s)
		cursorTo(t, s, "Tool Result:\\*\\* `b1`")
		press(t, s, ":Flemma tool:undo<CR>")
		if _, err := os.Stat(made); err == nil {
			t.Errorf("undo left the file bash created")
		}
		if body, _ := waitResult(t, s, "b1"); !strings.Contains(body, "The user undid this call's changes on disk") {
			t.Errorf("the result does not tell the model: %q", body)
		}
	})
}

// TestBashFilesUndoChanged: the files a sandboxed bash changed (sed -i)
// or deleted (rm) under the project are put back by :Flemma tool:undo on
// its result, from the copies kept before it ran, and the result says so.
func TestBashFilesUndoChanged(t *testing.T) {
	needBwrap(t)
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "bashundo")
		os.MkdirAll(dir, 0o755)
		notes, old := filepath.Join(dir, "notes.txt"), filepath.Join(dir, "old.txt")
		os.WriteFile(notes, []byte("alpha\nbeta\n"), 0o644)
		os.WriteFile(old, []byte("keep me\n"), 0o644)
		chat := toolChat("bash", "b1", `{"command": "sed -i s/beta/BETA/ notes.txt && rm old.txt", "label": "edit and remove", "timeout": null}`)
		mustOpen(t, s, "bashundo/b.chat", chat)
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "b1")
		if !strings.Contains(body, "changed: notes.txt") || !strings.Contains(body, "deleted: old.txt") || strings.Contains(body, "not undoable") {
			t.Fatalf("the result does not list the changed and deleted files as undoable: %q", body)
		}
		if b, _ := os.ReadFile(notes); string(b) != "alpha\nBETA\n" {
			t.Fatalf("bash did not run: notes.txt = %q", b)
		}
		if _, err := os.Stat(old); err == nil {
			t.Fatalf("bash did not remove old.txt")
		}
		waitIdle(t, s)
		cursorTo(t, s, "Tool Result:\\*\\* `b1`")
		press(t, s, ":Flemma tool:undo<CR>")
		if b, _ := os.ReadFile(notes); string(b) != "alpha\nbeta\n" {
			t.Errorf("notes.txt after undo = %q", b)
		}
		if b, err := os.ReadFile(old); err != nil || string(b) != "keep me\n" {
			t.Errorf("old.txt after undo = %q (%v)", b, err)
		}
		if body, _ := waitResult(t, s, "b1"); !strings.Contains(body, "The user undid this call's changes on disk") {
			t.Errorf("the result does not tell the model: %q", body)
		}
	})
}

// commandOutput is a bash result without the list of the files it changed
// (which a sandboxed bash appends).
func commandOutput(body string) string {
	if i := strings.Index(body, "\n\nFiles in the writable roots the command changed:"); i >= 0 {
		return body[:i]
	}
	return body
}

// TestReadmeDiffToolExample: the README's Lua tool with a diff, exactly as
// written: its pending call shows the diff, the view opens, the user's
// change to the proposal becomes the call's input through its review
// function, and the tool writes the reviewed version.
func TestReadmeDiffToolExample(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, readmeBlock(t, `register("save"`)); err != nil {
			t.Fatalf("the README example: %v", err)
		}
		// The capability without the function is refused, saying why.
		var ok bool
		if err := s.Lua(&ok, `return require("flemma.tools").register("bad", { description = "x",
			capabilities = { "diff" }, execute = function() return { success = true } end })`); err != nil || ok {
			t.Fatalf("a diff capability without a diff function: registered %v (%v)", ok, err)
		}
		if m := s.Messages(); !strings.Contains(m, `the "diff" capability needs diff = function`) {
			t.Errorf("messages:\n%s", m)
		}
		target := filepath.Join(s.Dir, "notes.txt")
		if err := os.WriteFile(target, []byte("a\nb\nc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		chat := toolChat("save", "s1", `{"path": "notes.txt", "text": "a\nB\nc\n"}`)
		mustOpenForeign(t, s, "s.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("s1", "pending", "")))
		got := strings.Join(diffLines(t, s), "\n")
		if !strings.Contains(got, "-b|DiffDelete") || !strings.Contains(got, "+B|DiffAdd") {
			t.Fatalf("preview lines:\n%s", got)
		}
		cursorTo(t, s, "Tool Use:\\*\\* `save`")
		press(t, s, "<CR>")
		waitTabs(t, s, 2)
		var proposal []string
		if err := s.Lua(&proposal, `return vim.api.nvim_buf_get_lines(0, 0, -1, false)`); err != nil {
			t.Fatal(err)
		}
		if strings.Join(proposal, ",") != "a,B,c" {
			t.Fatalf("proposal = %q", proposal)
		}
		if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, 2, 3, false, { "C" })`); err != nil {
			t.Fatal(err)
		}
		press(t, s, ":w<CR>")
		waitTabs(t, s, 1)
		waitIdle(t, s)
		if got := text(t, s); !strings.Contains(got, "status=approved") || !strings.Contains(got, `"text":"a\nB\nC\n"`) {
			t.Fatalf("after the review the chat is:\n%s", got)
		}
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "s1")
		if isErr || !strings.Contains(body, "saved notes.txt") || !strings.Contains(body, "the user reviewed this change and modified it") {
			t.Errorf("result = %q (error %v)", body, isErr)
		}
		waitIdle(t, s)
		if b, _ := os.ReadFile(target); string(b) != "a\nB\nC\n" {
			t.Errorf("notes.txt = %q", b)
		}
	})
}

// TestLuaDiffViewOnly: a Lua tool with a diff function and no review
// function gets a view-only review (the proposal cannot be changed, :w
// approves the call as proposed), and a diff function that throws shows
// its error under the placeholder instead of a diff.
func TestLuaDiffViewOnly(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `
			local tools = require("flemma.tools")
			tools.register("append", {
				description = "Append a line",
				input_schema = { type = "object", properties = { path = { type = "string" }, line = { type = "string" } } },
				diff = function(input, ctx)
					local p = ctx.path.resolve(input.path)
					return { path = input.path, content = table.concat(vim.fn.readfile(p), "\n") .. "\n" .. input.line .. "\n" }
				end,
				execute = function(input, ctx)
					vim.fn.writefile({ input.line }, ctx.path.resolve(input.path), "a")
					return { success = true, output = "appended" }
				end,
			})
			tools.register("broken", {
				description = "Its diff throws",
				input_schema = { type = "object" },
				diff = function() error("no diff today") end,
				execute = function() return { success = true, output = "ran" } end,
			})`); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(s.Dir, "log.txt")
		if err := os.WriteFile(target, []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		chat := toolChat("broken", "x1", `{}`)
		mustOpenForeign(t, s, "x.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("x1", "pending", "")))
		if got := strings.Join(diffLines(t, s), "\n"); !strings.Contains(got, "its diff function failed") || !strings.Contains(got, "no diff today") {
			t.Errorf("a throwing diff function shows:\n%s", got)
		}

		chat = toolChat("append", "a1", `{"path": "log.txt", "line": "two"}`)
		mustOpenForeign(t, s, "a.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("a1", "pending", "")))
		if got := strings.Join(diffLines(t, s), "\n"); !strings.Contains(got, "+two|DiffAdd") {
			t.Fatalf("preview lines:\n%s", got)
		}
		cursorTo(t, s, "Tool Use:\\*\\* `append`")
		press(t, s, "<CR>")
		waitTabs(t, s, 2)
		var view struct {
			Modifiable bool     `msgpack:"modifiable"`
			Lines      []string `msgpack:"lines"`
		}
		if err := s.Lua(&view, `return { modifiable = vim.bo.modifiable, lines = vim.api.nvim_buf_get_lines(0, 0, -1, false) }`); err != nil {
			t.Fatal(err)
		}
		if view.Modifiable || strings.Join(view.Lines, ",") != "one,two" {
			t.Fatalf("view-only proposal = %+v", view)
		}
		waitMessage(t, s, "view only")
		press(t, s, ":w<CR>")
		waitTabs(t, s, 1)
		waitIdle(t, s)
		if got := text(t, s); !strings.Contains(got, "status=approved") || !strings.Contains(got, `{"path": "log.txt", "line": "two"}`) {
			t.Fatalf("after :w the chat is:\n%s", got)
		}
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "a1"); isErr || body != "appended" {
			t.Errorf("result = %q (error %v)", body, isErr)
		}
		waitIdle(t, s)
		if b, _ := os.ReadFile(target); string(b) != "one\ntwo\n" {
			t.Errorf("log.txt = %q", b)
		}
	})
}

// TestDiffReviewNewFile (issue 27 item 8): the review of a write that
// creates its file says so on the empty left side, and the view's names
// carry the file's name, not its folders shortened to letters in the tab
// label ("f//t/p/notes.txt").
func TestDiffReviewNewFile(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		input, _ := json.Marshal(map[string]any{"path": "sub/new.txt", "label": "create", "content": "fresh\n"})
		chat := toolChat("write", "w1", string(input))
		mustOpenForeign(t, s, "n.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("w1", "pending", "")))
		lines := strings.Split(text(t, s), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "**Tool Use:**") {
				if err := s.Nv.Command("normal! " + strconv.Itoa(i+1) + "G"); err != nil {
					t.Fatal(err)
				}
			}
		}
		press(t, s, "<CR>")
		waitTabs(t, s, 2)
		var view struct {
			Names []string `msgpack:"names"`
			Notes []string `msgpack:"notes"`
			Label string   `msgpack:"label"`
		}
		if err := s.Lua(&view, `
			local out = { names = {}, notes = {} }
			local ns = require("flemma.diffview").ns
			for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
				local b = vim.api.nvim_win_get_buf(w)
				table.insert(out.names, vim.api.nvim_buf_get_name(b))
				for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, { details = true })) do
					table.insert(out.notes, m[4].virt_text[1][1])
				end
			end
			out.label = vim.fn.pathshorten(vim.api.nvim_buf_get_name(0))
			return out`); err != nil {
			t.Fatal(err)
		}
		want := []string{"flemma://new.txt (new file, w1)", "flemma://new.txt (proposed, w1)"}
		if strings.Join(view.Names, "|") != strings.Join(want, "|") {
			t.Errorf("view names %q, want %q", view.Names, want)
		}
		if len(view.Notes) != 1 || view.Notes[0] != "new file: sub/new.txt does not exist yet" {
			t.Errorf("left side notes %q, want that the file does not exist yet", view.Notes)
		}
		if !strings.HasSuffix(view.Label, "new.txt (proposed, w1)") {
			t.Errorf("tab label %q", view.Label)
		}
	})
}
