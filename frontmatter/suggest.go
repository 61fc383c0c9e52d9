package frontmatter

import "sync/atomic"

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
		if d := osaDistance(name, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// osaDistance is the Damerau–Levenshtein distance restricted to adjacent
// transpositions of untouched characters (optimal string alignment), on
// bytes. It gives up early, returning bound, once the distance cannot be
// below bound.
func osaDistance(a, b string, bound int) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		// A transposition reaches back two rows, so stop only when both
		// this row and the previous one are out of reach.
		if rowMin >= bound && minOf(prev) >= bound {
			return bound
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], bound)
}

func minOf(xs []int) int {
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}
