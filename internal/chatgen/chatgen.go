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
