// Package chatgen generates large, realistic .chat conversations for
// benchmarks: the parser's, the cycle's and the end-to-end ones use the same
// text so their numbers can be compared.
package chatgen

import (
	"fmt"
	"strings"
)

// Options shape a generated conversation.
type Options struct {
	Lines      int  // approximate total number of lines
	Calls      int  // number of tool calls
	Unresolved bool // leave the calls of the last assistant message without results
}

// Conversation returns a conversation of about o.Lines lines with o.Calls
// calculator calls spread over turns. Each turn is a user question with some
// prose, an assistant message with thinking, text and a few tool uses, and
// the results. With Unresolved, the last turn's calls have no results (the
// state right after a model response, ready to be categorized).
func Conversation(o Options) string {
	if o.Calls <= 0 {
		o.Calls = 1
	}
	perTurn := 4
	turns := (o.Calls + perTurn - 1) / perTurn
	// Lines a turn uses without filler: You (3) + Assistant header/thinking (6)
	// + per call 6 (use) + 6 (result) + @You.
	fixed := turns * (10 + perTurn*12)
	filler := 0
	if o.Lines > fixed {
		filler = (o.Lines - fixed) / turns
	}
	var b strings.Builder
	call := 0
	for t := 0; t < turns; t++ {
		last := t == turns-1
		fmt.Fprintf(&b, "@You:\nQuestion %d: please compute a few things for me.\n\n", t)
		b.WriteString("@Assistant:\n<thinking>\nI should use the calculator for each part.\n</thinking>\n\n")
		for i := 0; i < filler; i++ {
			fmt.Fprintf(&b, "Line %d of turn %d: some explanatory prose with `code`, numbers like %d and unicode — ü ✓.\n", i, t, i*7)
		}
		var ids []string
		for k := 0; k < perTurn && call < o.Calls; k++ {
			id := fmt.Sprintf("toolu_%05d", call)
			ids = append(ids, id)
			fmt.Fprintf(&b, "\n**Tool Use:** `calculator` (`%s`)\n\n```json\n{\"expression\": \"%d * %d\", \"label\": null}\n```\n", id, call, k+1)
			call++
		}
		if last && o.Unresolved {
			break
		}
		b.WriteString("\n@You:\n")
		for k, id := range ids {
			fmt.Fprintf(&b, "\n**Tool Result:** `%s`\n\n```\n%d\n```\n", id, k)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Shape names the two extremes the parser benchmarks compare: a
// conversation where tool calls and their output dominate, and one where
// prose does.
type Shape string

// The shapes of Generate.
const (
	ToolHeavy  Shape = "tool-heavy"
	ProseHeavy Shape = "prose-heavy"
)

// Generate returns a conversation of about lines lines of the given shape.
// The text is deterministic. Every call has a result, except none: the
// conversation is complete, as when it is read to be sent.
//
// Tool-heavy: each turn is a short request, an assistant message with a
// short thinking block and three calls (bash, read, edit, with realistic
// JSON inputs), and a @You: message with their results (test output, a
// source file, a one-line confirmation): 80 % of the lines and 86 % of the
// bytes are inside tool blocks.
//
// Prose-heavy: each turn is a question of a paragraph or two, an assistant
// message with thinking and a long Markdown answer (paragraphs, a list,
// inline code, a fenced code example); one turn in four has a call. A
// paragraph is one long line, as models write them: 96 % of the bytes
// are prose (text and thinking).
func Generate(s Shape, lines int) string {
	var b strings.Builder
	g := &gen{b: &b}
	for turn := 0; g.lines < lines; turn++ {
		switch s {
		case ToolHeavy:
			g.toolTurn(turn)
		default:
			g.proseTurn(turn)
		}
	}
	return b.String()
}

type gen struct {
	b     *strings.Builder
	lines int
	call  int
	seed  uint32
}

func (g *gen) line(format string, args ...any) {
	fmt.Fprintf(g.b, format, args...)
	g.b.WriteByte('\n')
	g.lines++
}

// rnd returns a deterministic pseudo-random number in [0, n).
func (g *gen) rnd(n int) int {
	g.seed = g.seed*1664525 + 1013904223
	return int(g.seed>>8) % n
}

var sentences = []string{
	"The parser keeps every position 1-based, so a diagnostic points at the line the user sees.",
	"When the fence is not closed, the block stays text and the problem is reported instead.",
	"I would start with the **smallest** change that makes the failing test pass, then refactor.",
	"The function `ResolveOptions` merges the user's config with the buffer's frontmatter.",
	"That is why the cache is keyed by the content hash and the window width, not by the path.",
	"Note that the approval chain stops at the first resolver that returns a decision.",
	"If the server answers 529, the request is retried with a delay that grows each time.",
	"A goroutine per call is cheap, but the timeout must still cancel the child process.",
	"Unicode works too — café, naïve, 東京, and emoji such as ✓ are counted in bytes.",
	"You can check it with `go test ./buffer/ -run TestParse -v` and compare the goldens.",
	"In short: read the file once, keep the mirror current, and send only what changed.",
	"The sandbox denies writes outside the project root unless the user allowed them.",
}

// paragraph writes n sentences on one line, as models write a paragraph.
func (g *gen) paragraph(n int) {
	var p strings.Builder
	for k := range n {
		if k > 0 {
			p.WriteByte(' ')
		}
		p.WriteString(sentences[g.rnd(len(sentences))])
	}
	g.line("%s", p.String())
}

// sentenceLines writes n sentences, one per line (a file's text).
func (g *gen) sentenceLines(n int) {
	for range n {
		g.line("%s", sentences[g.rnd(len(sentences))])
	}
}

func (g *gen) id() string {
	g.call++
	return fmt.Sprintf("toolu_%05d", g.call)
}

func (g *gen) use(name, id, input string) {
	g.line("**Tool Use:** `%s` (`%s`)", name, id)
	g.line("")
	g.line("```json")
	g.line("%s", input)
	g.line("```")
	g.line("")
}

func (g *gen) toolTurn(turn int) {
	g.line("@You:")
	g.line("Please run the tests of package pkg%d, look at its main file and fix the failing case.", turn)
	g.line("")
	g.line("@Assistant:")
	g.line("<thinking>")
	g.line("I should run the tests first, then read the file and edit the failing function.")
	g.line("</thinking>")
	g.line("")
	g.line("Running the tests of pkg%d and reading its source.", turn)
	g.line("")
	ids := []string{g.id(), g.id(), g.id()}
	g.use("bash", ids[0], fmt.Sprintf(`{"command": "go test ./pkg%d/... 2>&1 | tail -n 20", "label": "testing pkg%d", "timeout": 120}`, turn, turn))
	g.use("read", ids[1], fmt.Sprintf(`{"path": "pkg%d/handler.go", "offset": 1, "limit": 30}`, turn))
	g.use("edit", ids[2], fmt.Sprintf(`{"path": "pkg%d/handler.go", "old_string": "\tif n > limit {\n\t\treturn nil\n\t}", "new_string": "\tif n >= limit {\n\t\treturn errLimit\n\t}", "label": "fix the bound"}`, turn))
	g.line("@You:")
	g.line("**Tool Result:** `%s`", ids[0])
	g.line("")
	g.line("```")
	for k := range 14 {
		g.line("=== RUN   TestHandler_%d/case_%02d", turn, k)
		if k%5 == 4 {
			g.line("    handler_test.go:%d: got %d, want %d", 40+k, k, k+1)
		}
	}
	g.line("FAIL\tgithub.com/example/project/pkg%d\t0.%03ds", turn, 100+g.rnd(900))
	g.line("```")
	g.line("")
	g.line("**Tool Result:** `%s`", ids[1])
	g.line("")
	g.line("````go")
	g.line("package pkg%d", turn)
	g.line("")
	g.line("import (")
	g.line("\t\"errors\"")
	g.line("\t\"fmt\"")
	g.line(")")
	g.line("")
	g.line("var errLimit = errors.New(\"limit reached\")")
	g.line("")
	g.line("// Handler processes up to limit items and reports the first error.")
	g.line("func Handler(items []string, limit int) error {")
	g.line("\tfor n, it := range items {")
	g.line("\t\tif n > limit {")
	g.line("\t\t\treturn nil")
	g.line("\t\t}")
	g.line("\t\tif err := process(it); err != nil {")
	g.line("\t\t\treturn fmt.Errorf(\"item %%d (%%q): %%w\", n, it, err)")
	g.line("\t\t}")
	g.line("\t}")
	g.line("\treturn nil")
	g.line("}")
	g.line("")
	g.line("```inner")
	g.line("a nested fence with fewer backticks is content")
	g.line("```")
	g.line("````")
	g.line("")
	g.line("**Tool Result:** `%s`", ids[2])
	g.line("")
	g.line("```")
	g.line("Edited pkg%d/handler.go: 1 replacement (lines 14-16).", turn)
	g.line("```")
	g.line("")
}

func (g *gen) proseTurn(turn int) {
	g.line("@You:")
	g.paragraph(2 + g.rnd(3))
	g.line("")
	g.paragraph(1 + g.rnd(3))
	g.line("")
	g.line("@Assistant:")
	g.line("<thinking>")
	for range 2 + g.rnd(2) {
		g.paragraph(3 + g.rnd(4))
		g.line("")
	}
	g.line("</thinking>")
	g.line("")
	g.line("## Part %d: what happens", turn)
	g.line("")
	for range 2 + g.rnd(3) {
		g.paragraph(3 + g.rnd(5))
		g.line("")
	}
	for k := range 5 {
		g.line("- **Point %d.** %s", k+1, sentences[g.rnd(len(sentences))])
	}
	g.line("")
	g.paragraph(3 + g.rnd(4))
	g.line("")
	g.line("```go")
	g.line("func example%d(lines []string) int {", turn)
	g.line("\tn := 0")
	g.line("\tfor _, l := range lines {")
	g.line("\t\tif strings.HasPrefix(l, \"@\") { // a role marker in a fence is content")
	g.line("\t\t\tn++")
	g.line("\t\t}")
	g.line("\t}")
	g.line("\treturn n")
	g.line("}")
	g.line("```")
	g.line("")
	for range 1 + g.rnd(3) {
		g.paragraph(2 + g.rnd(5))
		g.line("")
	}
	if turn%4 == 3 {
		id := g.id()
		g.use("read", id, fmt.Sprintf(`{"path": "docs/part%d.md"}`, turn))
		g.line("@You:")
		g.line("**Tool Result:** `%s`", id)
		g.line("")
		g.line("```")
		g.sentenceLines(6)
		g.line("```")
		g.line("")
	}
}
