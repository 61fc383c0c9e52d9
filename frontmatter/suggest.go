package frontmatter

// maxSuggestLen: names longer than this get no suggestion (the distance is
// quadratic in the length and a long name is no typo).
const maxSuggestLen = 64

// suggest returns the candidate closest to name by optimal-string-alignment
// distance (a transposition costs 1, so "raed" is one step from "read"), or
// "" when none is close: the distance must be at most 3 and at most half the
// length of name (at least 1). Ties go to the earlier candidate.
func suggest(name string, candidates []string) string {
	if len(name) > maxSuggestLen {
		return ""
	}
	limit := min(3, max(1, len(name)/2))
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == name || len(c) > maxSuggestLen {
			continue
		}
		if d := osaDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// osaDistance is the Damerau–Levenshtein distance restricted to adjacent
// transpositions of untouched characters (optimal string alignment), on
// bytes.
func osaDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
