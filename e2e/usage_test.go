package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// cached is an answer whose usage reports 36 prompt tokens read from the
// cache beside 12 input tokens: a 75% hit.
func cached(text string) string {
	return strings.Replace(sse(text), `"input_tokens":12`, `"cache_read_input_tokens":36,"input_tokens":12`, 1)
}

// Usage and context (issue 27, "what users of the peers reach for"): the
// estimate of the next send against the model's window on demand and in a
// statusline component, the cache hit rate and the session's cost after a
// response, and a send that would not fit the window held with by how much
// and what to do.
func TestUsageAndContext(t *testing.T) {
	f := &fakeAnthropic{turns: []string{cached("First."), cached("Second.")}}
	models := `, models = { ["test-model"] = { context_window = 4000, input_price = 3, output_price = 15, cache_read_price = 0.3 } }`
	eachNvimSend(t, f, models, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "u.chat", question)
		context := func() string {
			var c string
			if err := s.Lua(&c, `return require("flemma").context()`); err != nil {
				t.Fatal(err)
			}
			return c
		}
		if c := context(); c != "" {
			t.Errorf("context() before any estimate: %q", c)
		}
		press(t, s, ":Flemma usage:estimate<CR>")
		waitMessage(t, s, "% of the 4.0k window of test-model (an estimate: about 4 bytes of text a token).")
		if m := regexp.MustCompile(`≈ ([0-9.]+k?) tokens, (\d+)% of the 4\.0k window`).FindStringSubmatch(s.Messages()); m == nil {
			t.Errorf("usage:estimate said:\n%s", s.Messages())
		} else if c := context(); c != "≈"+m[1]+"/4.0k "+m[2]+"%" {
			t.Errorf("context() = %q after the estimate %v", c, m)
		}

		press(t, s, "<C-]>")
		if _, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "First.") }); err != nil {
			t.Fatalf("no answer: %s", s.Messages())
		}
		waitIdle(t, s)
		waitMessage(t, s, "anthropic: 12 input · 34 output tokens · cache 36 read, 0 written (75% hit) · $0.")
		if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, -1, -1, false, { "And again?" })`); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		if _, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "Second.") }); err != nil {
			t.Fatalf("no second answer: %s", s.Messages())
		}
		waitIdle(t, s)
		waitMessage(t, s, "(75% hit) · $0.0006 · session $0.0011")
		var line string
		if err := s.Lua(&line, `return require("flemma").statusline()`); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, " · 75% cached · $0.0011") {
			t.Errorf("statusline: %q", line)
		}
		// After a response the component holds the next send's estimate.
		if _, err := s.Wait(5*time.Second, func(string) bool { return strings.HasSuffix(context(), "%") }); err != nil {
			t.Errorf("context() after the answers: %q", context())
		}

		// A send that would not fit: held, with how much over and what to do.
		if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, -1, -1, false, { string.rep("A long question. ", 1500) })`); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		waitMessage(t, s, "more than test-model's 4,000-token window: the provider will likely refuse it, so it was not sent. :Flemma compact summarizes the conversation first, or delete turns")
		waitIdle(t, s)
		f.mu.Lock()
		n := len(f.bodies)
		f.mu.Unlock()
		if n != 2 {
			t.Errorf("%d requests: the send over the window went", n)
		}
		press(t, s, ":Flemma usage:estimate<CR>")
		waitMessage(t, s, "over the window: :Flemma compact summarizes the conversation")
	})
}
