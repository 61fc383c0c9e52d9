package buffer_test

import (
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
)

func ExampleParse() {
	doc := buffer.Parse([]string{
		"@You:",
		"Run the tests.",
		"",
		"@Assistant:",
		"**Tool Use:** `bash` (`toolu_01`)",
		"",
		"```json",
		`{"command": "make test", "label": "running tests"}`,
		"```",
		"",
		"**Tool Use:** `read` (`toolu_02`)",
		"",
		"```json",
		`{"path": "go.mod"}`,
		"```",
		"",
		"@You:",
		"**Tool Result:** `toolu_01`",
		"",
		"```flemma:tool status=pending",
		"```",
	})
	for _, m := range doc.Messages {
		fmt.Printf("@%s: lines %d-%d, %d segments\n", m.Role, m.StartLine, m.EndLine, len(m.Segments))
	}
	for _, u := range doc.ToolUses() {
		status := "no result"
		if r := doc.Result(u.ID); r != nil {
			status = "placeholder " + string(r.Status)
		}
		fmt.Printf("%s %s (line %d) %v: %s\n", u.Name, u.ID, u.HeaderLine, u.Input()["command"], status)
	}
	fmt.Println("unresolved:", len(doc.Unresolved()), "diagnostics:", len(doc.Diagnostics))
	// Output:
	// @You: lines 1-3, 1 segments
	// @Assistant: lines 4-16, 2 segments
	// @You: lines 17-21, 1 segments
	// bash toolu_01 (line 5) make test: placeholder pending
	// read toolu_02 (line 11) <nil>: no result
	// unresolved: 1 diagnostics: 0
}

func ExampleParse_diagnostics() {
	doc := buffer.Parse([]string{
		"@Assistant:",
		"**Tool Use:** `bash` (`toolu_01`)",
		"```json",
		`{"command": "ls",}`,
		"```",
	})
	for _, d := range doc.Diagnostics {
		fmt.Println(d)
	}
	fmt.Printf("kept as text: %q\n", doc.Messages[0].Segments[0].(*buffer.Text).Value()[:33])
	// Output:
	// 4:18: Failed to parse tool input: JSON parse error: invalid character '}' looking for beginning of object key string
	// kept as text: "**Tool Use:** `bash` (`toolu_01`)"
}

func ExamplePlacePlaceholders() {
	lines := []string{
		"@Assistant:",
		"**Tool Use:** `bash` (`toolu_01`)",
		"",
		"```json",
		`{"command": "make test"}`,
		"```",
	}
	doc := buffer.Parse(lines)
	edits, err := buffer.PlacePlaceholders(doc, lines, []buffer.Placement{{ID: "toolu_01", Status: buffer.StatusPending}})
	if err != nil {
		panic(err)
	}
	// Each edit is one nvim_buf_set_lines call (0-based, end-exclusive).
	for _, e := range edits {
		fmt.Printf("set_lines(%d, %d):\n%s\n", e.Start, e.End, strings.Join(e.Lines, "\n"))
	}
	// Output:
	// set_lines(6, 6):
	//
	// @You:
	//
	// **Tool Result:** `toolu_01`
	//
	// ```flemma:tool status=pending
	// ```
}

func ExampleSetStatus() {
	lines := []string{
		"@Assistant:",
		"**Tool Use:** `bash` (`toolu_01`)",
		"```json",
		`{"command": "make test"}`,
		"```",
		"@You:",
		"**Tool Result:** `toolu_01`",
		"",
		"```flemma:tool status=pending timeout=30",
		"```",
	}
	doc := buffer.Parse(lines)
	e, err := buffer.SetStatus(doc, lines, "toolu_01", buffer.StatusApproved)
	if err != nil {
		panic(err)
	}
	out, _ := buffer.Apply(lines, []buffer.Edit{e})
	fmt.Println(out[8])
	// Output:
	// ```flemma:tool status=approved timeout=30
}

func ExampleSanitize() {
	fmt.Printf("%q\n", buffer.Sanitize("\x1b[32mok\x1b[0m\r\nfetching 10%\rfetching 100%\n"))
	// Output: "ok\nfetching 100%\n"
}
