package buffer

import (
	"fmt"
	"strings"
	"testing"
)

// conversation generates a realistic buffer of rounds × 50 lines: each round
// an assistant message (thinking, prose, one tool call) and a @You: message
// (its result and a reply).
func conversation(rounds int) []string {
	var l []string
	for i := range rounds {
		l = append(l, "@Assistant:", "<thinking>")
		for k := range 5 {
			l = append(l, fmt.Sprintf("Step %d of my reasoning about package %d: check the fence rules and positions.", k, i))
		}
		l = append(l, "</thinking>")
		for k := range 8 {
			l = append(l, fmt.Sprintf("Line %d of the answer: the parser keeps `positions` everywhere, see **item %d**.", k, i))
		}
		l = append(l, "",
			fmt.Sprintf("**Tool Use:** `bash` (`toolu_%04d`)", i), "", "```json",
			fmt.Sprintf(`{"command": "go test ./pkg%d/...", "label": "testing package %d", "timeout": 120}`, i, i),
			"```", "",
			"@You:", fmt.Sprintf("**Tool Result:** `toolu_%04d`", i), "", "```")
		for k := range 18 {
			l = append(l, fmt.Sprintf("--- PASS: TestCase%d_%d (0.%02ds)", i, k, k))
		}
		l = append(l, "```", "", "Looks good, carry on with the next package please.", "And keep the output short.", "")
	}
	return l
}

func size(lines []string) int64 {
	n := 0
	for _, s := range lines {
		n += len(s) + 1
	}
	return int64(n)
}

// BenchmarkParse parses a 10,000-line conversation with 200 tool calls.
func BenchmarkParse(b *testing.B) {
	lines := conversation(200)
	if len(lines) != 10000 {
		b.Fatalf("generated %d lines", len(lines))
	}
	if d := Parse(lines); len(d.ToolUses()) != 200 || len(d.ToolResults()) != 200 || len(d.Diagnostics) != 0 {
		b.Fatalf("unexpected document: %d uses, %d results, %v", len(d.ToolUses()), len(d.ToolResults()), d.Diagnostics)
	}
	b.SetBytes(size(lines))
	b.ReportAllocs()
	for b.Loop() {
		Parse(lines)
	}
}

// BenchmarkRender renders the same conversation back.
func BenchmarkRender(b *testing.B) {
	lines := conversation(200)
	d := Parse(lines)
	b.SetBytes(size(lines))
	b.ReportAllocs()
	for b.Loop() {
		Render(d)
	}
}

// BenchmarkPlacePlaceholders places 200 placeholders: 100 assistant
// messages with two parallel calls each, all but the last followed by a
// @You: message the user already typed in.
func BenchmarkPlacePlaceholders(b *testing.B) {
	var l []string
	var ps []Placement
	for i := range 100 {
		l = append(l, "@Assistant:", "Two calls at once.", "")
		for k := range 2 {
			id := fmt.Sprintf("toolu_%03d_%d", i, k)
			l = append(l, fmt.Sprintf("**Tool Use:** `read` (`%s`)", id), "", "```json",
				fmt.Sprintf(`{"path": "file_%d_%d.go", "label": "reading"}`, i, k), "```", "")
			ps = append(ps, Placement{ID: id, Status: []Status{StatusApproved, StatusPending}[k]})
		}
		if i < 99 {
			l = append(l, "@You:", "Thanks, that was useful.", "")
		}
	}
	d := Parse(l)
	if n := len(d.Unresolved()); n != 200 {
		b.Fatalf("%d unresolved", n)
	}
	edits, err := PlacePlaceholders(d, l, ps)
	if err != nil || len(edits) != 100 {
		b.Fatalf("PlacePlaceholders: %d edits, %v", len(edits), err)
	}
	out, _ := Apply(l, edits)
	if n := len(Parse(out).Incomplete()); n != 200 || strings.Count(strings.Join(out, "\n"), "flemma:tool") != 200 {
		b.Fatalf("placed badly")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PlacePlaceholders(d, l, ps); err != nil {
			b.Fatal(err)
		}
	}
}
