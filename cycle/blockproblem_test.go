package cycle

import (
	"strings"
	"testing"
)

// A placeholder whose header the user edited out of shape is text: <C-]>
// adds a new placeholder for the call and says which line could not be
// read, instead of nothing (issue 27 item 8).
func TestPressNamesAnUnreadableBlock(t *testing.T) {
	use := "@You:\nhi\n\n@Assistant:\nok\n\n**Tool Use:** `calculator` (`c1`)\n\n```json\n{\"expression\": \"1+1\"}\n```\n\n@You:\n\n"
	for _, tc := range []struct{ name, tail, want string }{
		{"result header", "**Tool Result:** c1\n\n```flemma:tool status=approved\n```\n", "Line 15: Not a tool result header, so this block is text: the form is **Tool Result:** `ID`"},
		{"open fence", "**Tool Result:** `c1`\n\n```flemma:tool status=approved\n", "Line 15: Unclosed fenced code block in tool result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, noSandbox())
			env.ed.load(1, "", env.dir, use+tc.tail)
			phase, msg := env.press(1)
			if phase != "categorize" || !strings.Contains(msg, tc.want) {
				t.Errorf("press: %s %q, want categorize and %q", phase, msg, tc.want)
			}
		})
	}
}
