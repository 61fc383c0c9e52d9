package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// A tool of the user's that declares the tag "readonly" is in $readonly,
// and so in the default policy ($default): the model's call to it runs
// without asking, with no preset naming it; the same tool without the tag
// asks (issue 25: presets made of tags).
func TestReadonlyTaggedToolRunsUnderDefault(t *testing.T) {
	f := &fakeAnthropic{turns: []string{
		sse("Counting.", [3]string{"toolu_wc", "word_count", `{"text": "one two three"}`}),
		sse("Three words."),
		sse("Writing.", [3]string{"toolu_ww", "word_write", `{"text": "x"}`}),
	}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `
for _, def in ipairs({ { "word_count", { "text", "readonly" } }, { "word_write", { "text" } } }) do
  require("flemma.tools").register(def[1], {
    description = "Count the words of a text",
    tags = def[2],
    input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
    execute = function(input)
      return { success = true, output = tostring(#vim.split(input.text, " ")) .. " words" }
    end,
  })
end`); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "wc.chat", "@You:\nHow many words?\n")
		press(t, s, "<C-]>")
		got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "Three words.") && strings.HasSuffix(x, "@You:\n") })
		if err != nil {
			t.Fatalf("the readonly-tagged tool did not run by itself:\n%s\nmessages: %s", got, s.Messages())
		}
		if !strings.Contains(got, "3 words") {
			t.Errorf("no result of word_count:\n%s", got)
		}
		appendLines(t, s, "Now write.")
		press(t, s, "<C-]>")
		got, err = s.Wait(20*time.Second, func(x string) bool {
			return strings.Contains(x, "Writing.") && strings.Contains(x, "toolu_ww") && strings.Contains(x, "pending")
		})
		if err != nil {
			t.Fatalf("word_write (no readonly tag) should wait for approval:\n%s\nmessages: %s", got, s.Messages())
		}
	})
}
