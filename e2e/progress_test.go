package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// progressMark is the text of the request-progress extmark of buffer 0
// ("" when there is none).
func progressMark(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	var text string
	err := s.Lua(&text, `
		local ns = require("flemma.buf").namespaces().progress
		for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
			local vt = m[4].virt_text
			if vt and vt[1] then return vt[1][1] end
		end
		return ""`)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// TestRequestProgress: while the model has not answered, the buffer shows
// what the request waits for; FlemmaRequestStart/End fire (with the usage,
// readable on Neovim 0.7 from flemma.buf.last_event), the indicator goes
// when the answer is in, and the statusline component counts the tokens.
func TestRequestProgress(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("It is 42.")}}
	eachNvimSend(t, f, `, models = { ["test-model"] = { input_price = 3, output_price = 15 } }`, func(t *testing.T, s *nvimtest.Session) {
		f.mu.Lock()
		f.hold = make(chan struct{})
		hold := f.hold
		f.mu.Unlock()
		mustOpen(t, s, "p.chat", question)
		if err := s.Lua(nil, `
			_G.flemma_events = {}
			for _, p in ipairs({ "FlemmaRequestStart", "FlemmaRequestEnd" }) do
				vim.api.nvim_create_autocmd("User", { pattern = p, callback = function(ev)
					local d = ev.data or require("flemma.buf").last_event
					table.insert(_G.flemma_events, { pattern = p, status = d.status or "", input = d.usage and d.usage.input_tokens or -1 })
				end })
			end`); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(progressMark(t, s), "waiting for anthropic") {
			if time.Now().After(deadline) {
				t.Fatalf("no progress while waiting: %q; messages:\n%s", progressMark(t, s), s.Messages())
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(hold)
		waitText(t, s, "@You:\nWhat is 6*7?\n\n@Assistant:\nIt is 42.\n\n@You:\n")
		deadline = time.Now().Add(10 * time.Second)
		var events []map[string]any
		for {
			if err := s.Lua(&events, `return _G.flemma_events`); err != nil {
				t.Fatal(err)
			}
			if len(events) == 2 && progressMark(t, s) == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("events %v, progress mark %q", events, progressMark(t, s))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if events[0]["pattern"] != "FlemmaRequestStart" || events[1]["pattern"] != "FlemmaRequestEnd" || events[1]["status"] != "ok" || events[1]["input"] != int64(12) {
			t.Errorf("events: %v", events)
		}
		var line string
		if err := s.Lua(&line, `return require("flemma").statusline()`); err != nil {
			t.Fatal(err)
		}
		// 12 input tokens at $3 and 34 output at $15 per million.
		if line != "anthropic test-model · 12 in · 34 out · $0.0005" {
			t.Errorf("statusline = %q", line)
		}
		var buf int
		if err := s.Lua(&buf, `return vim.api.nvim_get_current_buf()`); err != nil {
			t.Fatal(err)
		}
		if st := hostText(t, s, "flemma.status", buf); !strings.Contains(st, "this buffer, this session: 1 responses · 12 input · 34 output tokens · $0.0005") {
			t.Errorf(":Flemma status lacks the session's totals:\n%s", st)
		}
		// :Flemma switch changes what it names.
		if err := s.Nv.Command("Flemma switch openai gpt-4o"); err != nil {
			t.Fatal(err)
		}
		deadline = time.Now().Add(10 * time.Second)
		for !strings.HasPrefix(line, "openai gpt-4o · ") {
			if time.Now().After(deadline) {
				t.Fatalf("statusline after :Flemma switch = %q; messages:\n%s", line, s.Messages())
			}
			time.Sleep(10 * time.Millisecond)
			if err := s.Lua(&line, `return require("flemma").statusline()`); err != nil {
				t.Fatal(err)
			}
		}
	})
}
