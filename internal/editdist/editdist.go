// Package editdist measures how far a name is from another, for the
// did-you-mean of unknown frontmatter keys and misspelt model names. Pure:
// it imports nothing.
package editdist

// Distance is the Damerau–Levenshtein distance restricted to adjacent
// transpositions of untouched characters (optimal string alignment), on
// bytes. It gives up early, returning bound, once the distance cannot be
// below bound.
func Distance(a, b string, bound int) int {
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
