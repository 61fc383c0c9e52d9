package buffer

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/chatgen"
)

// checkParseFrom checks that ParseFrom of b from the parse of a, whose
// first same lines are b's, is Parse(b), and that a further ParseFrom from
// that result (a chain, as the host keeps one) is too.
func checkParseFrom(t *testing.T, a, b []string, same int) {
	t.Helper()
	want := Parse(b)
	got := ParseFrom(Parse(a), b, same)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseFrom (same=%d) differs from Parse:\n--- ParseFrom\n%s\n--- Parse\n%s", same, dump(got), dump(want))
	}
	again := ParseFrom(got, a, same)
	if !reflect.DeepEqual(again, Parse(a)) {
		t.Fatalf("ParseFrom back to the first text (same=%d) differs from Parse", same)
	}
}

// splice returns a[:i] + ins + a[j:] (i, j clamped) and the length of the
// prefix it keeps.
func splice(a []string, i, j int, ins []string) ([]string, int) {
	i, j = min(max(i, 0), len(a)), min(max(j, 0), len(a))
	j = max(i, j)
	b := append(append(append([]string(nil), a[:i]...), ins...), a[j:]...)
	return b, i
}

// FuzzParseFrom: any text, any splice, ParseFrom of the result is Parse.
func FuzzParseFrom(f *testing.F) {
	for _, path := range chatFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		n := strings.Count(string(data), "\n")
		f.Add(string(data), n/2, n/2+3, "@You:\n\n**Tool Result:** `x`\n")
		f.Add(string(data), n-2, n, "")
	}
	for _, c := range formatCases {
		lines := c.lines
		if lines == nil {
			lines = chat(c.in)
		}
		f.Add(strings.Join(lines, "\n"), len(lines)/2, len(lines), "```\n@Assistant:")
	}
	f.Fuzz(func(t *testing.T, data string, i, j int, ins string) {
		a := strings.Split(data, "\n")
		var insLines []string
		if ins != "" {
			insLines = strings.Split(ins, "\n")
		}
		b, same := splice(a, i, j, insLines)
		checkParseFrom(t, a, b, same)
	})
}

// TestParseFromEdits runs the check on every testdata file and on the
// generated conversations, cut and spliced at many lines, with the edits
// of a press (placeholders inserted at the end, a response appended).
func TestParseFromEdits(t *testing.T) {
	texts := map[string][]string{}
	for _, path := range chatFiles(t) {
		texts[path] = readLines(t, path)
	}
	conv := chatgen.Conversation(chatgen.Options{Lines: 1500, Calls: 30, Unresolved: true})
	texts["chatgen"] = strings.Split(strings.TrimSuffix(conv, "\n"), "\n")
	texts["tool-heavy"] = strings.Split(chatgen.Generate(chatgen.ToolHeavy, 800), "\n")
	inserts := [][]string{
		nil,
		{"@You:", "", "**Tool Result:** `toolu_x`", "", "```flemma:tool status=pending", "```"},
		{"@Assistant:", "more", "```", "@You:", "inside a fence"},
		{"<thinking>", "@You:"},
		{"</thinking>", "**Tool Use:** `bash` (`toolu_y`)", "", "```json", `{"command": "ls"}`, "```"},
		{"<!-- flemma:summary: s -->", "sum", "<!-- /flemma:summary -->"},
	}
	for name, a := range texts {
		step := max(1, len(a)/40)
		for i := 0; i <= len(a); i += step {
			for k, ins := range inserts {
				b, same := splice(a, i, i+k%3, ins)
				checkParseFrom(t, a, b, same)
				if t.Failed() {
					t.Fatalf("%s: splice at %d, insert %d", name, i, k)
				}
			}
		}
	}
	// The messages above the change are shared, not parsed again.
	a := texts["chatgen"]
	prev := Parse(a)
	b, same := splice(a, len(a)-3, len(a), inserts[1])
	if got := ParseFrom(prev, b, same); got.Messages[0] != prev.Messages[0] || got.Messages[len(prev.Messages)-3] != prev.Messages[len(prev.Messages)-3] {
		t.Fatal("ParseFrom parsed again the messages above the change")
	}
}

// BenchmarkParseFrom is a press's parse of the 10,000-line conversation of
// e2e/BenchmarkCategorize10k after a change at its end (placeholders
// inserted), from the parse before the change, against a whole Parse.
func BenchmarkParseFrom(b *testing.B) {
	conv := chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 200, Unresolved: true})
	a := strings.Split(strings.TrimSuffix(conv, "\n"), "\n")
	next, same := splice(a, len(a), len(a), []string{"", "@You:", "", "**Tool Result:** `toolu_x`", "", "```flemma:tool status=pending", "```"})
	prev := Parse(a)
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Parse(next)
		}
	})
	b.Run("from", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ParseFrom(prev, next, same)
		}
	})
}
