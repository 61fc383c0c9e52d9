package frontmatter

import (
	"sync/atomic"

	"github.com/flemma-dev/flemma/internal/editdist"
)

// maxSuggestLen: names longer than this get no suggestion (the distance is
// quadratic in the length and a long name is no typo).
const maxSuggestLen = 64

// suggestCalls counts the suggestion searches (tests check that only shown
// diagnostics pay for one).
var suggestCalls atomic.Int64

// suggest returns the candidate closest to name by optimal-string-alignment
// distance (a transposition costs 1, so "raed" is one step from "read"), or
// "" when none is close: the distance must be at most 3 and at most half the
// length of name (at least 1). Ties go to the earlier candidate.
func suggest(name string, candidates []string) string {
	suggestCalls.Add(1)
	if len(name) > maxSuggestLen {
		return ""
	}
	limit := min(3, max(1, len(name)/2))
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == name || len(c) > maxSuggestLen {
			continue
		}
		if diff := len(c) - len(name); diff >= bestD || -diff >= bestD {
			continue // the distance is at least the difference in length
		}
		if d := editdist.Distance(name, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
