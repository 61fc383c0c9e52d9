package shell

import (
	"strings"
)

// normalizeBlanks trims ASCII spaces and tabs and collapses every run of
// them into one space.
func normalizeBlanks(s string) string {
	s = strings.Trim(s, " \t")
	if !strings.Contains(s, "\t") && !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	blank := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' {
			blank = true
			continue
		}
		if blank {
			b.WriteByte(' ')
			blank = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

func basename(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// globMatchWord is globMatch plus the rule that "P *" also matches "P".
func globMatchWord(pattern, s string) bool {
	if globMatch(pattern, s) {
		return true
	}
	return strings.HasSuffix(pattern, " *") && globMatch(pattern[:len(pattern)-2], s)
}

// globMatch matches s against a pattern where '*' matches any run of bytes.
// It backtracks only to the last star, so it runs in O(len(p)·len(s)) at
// worst and usually linear time.
func globMatch(p, s string) bool {
	px, sx := 0, 0
	star, mark := -1, 0
	for sx < len(s) {
		switch {
		case px < len(p) && p[px] == '*':
			star, mark = px, sx
			px++
		case px < len(p) && p[px] == s[sx]:
			px++
			sx++
		case star >= 0:
			px = star + 1
			mark++
			sx = mark
		default:
			return false
		}
	}
	for px < len(p) && p[px] == '*' {
		px++
	}
	return px == len(p)
}

// globIntersectWord is globIntersect plus the rule that "P *" also matches
// "P".
func globIntersectWord(pattern, t string) bool {
	if globIntersect(pattern, t) {
		return true
	}
	return strings.HasSuffix(pattern, " *") && globIntersect(pattern[:len(pattern)-2], t)
}

// globIntersect reports whether some text matches both the pattern p, where
// '*' matches any run of bytes, and t, where wildByte stands for any run of
// bytes (text known only at run time). O(len(p)·len(t)).
func globIntersect(p, t string) bool {
	n := len(p)
	var buf [2 * 65]bool
	var cur, next []bool
	if n < 65 {
		cur, next = buf[:n+1], buf[65:65+n+1]
	} else {
		cur, next = make([]bool, n+1), make([]bool, n+1)
	}
	// closure adds the moves that consume no byte of t at position j: a
	// star matching nothing, or t's wild byte standing for p's next byte.
	closure := func(row []bool, j int) {
		wild := j < len(t) && t[j] == wildByte
		for i := 0; i < n; i++ {
			if row[i] && (p[i] == '*' || wild) {
				row[i+1] = true
			}
		}
	}
	cur[0] = true
	closure(cur, 0)
	for j := 0; j < len(t); j++ {
		clear(next)
		live := false
		for i := 0; i <= n; i++ {
			if !cur[i] {
				continue
			}
			switch {
			case t[j] == wildByte || i < n && p[i] == '*':
				// the wild byte ends here, or the star takes t[j]
				next[i] = true
				live = true
			case i < n && p[i] == t[j]:
				next[i+1] = true
				live = true
			}
		}
		if !live {
			return false
		}
		closure(next, j+1)
		cur, next = next, cur
	}
	return cur[n]
}

// globPrefix reports whether some string that starts with t matches p: the
// command t may receive more arguments at run time (xargs).
func globPrefix(p, t string) bool {
	cur := make([]bool, len(p)+1)
	next := make([]bool, len(p)+1)
	closure := func(set []bool) {
		for i := 0; i < len(p); i++ {
			if set[i] && p[i] == '*' {
				set[i+1] = true
			}
		}
	}
	cur[0] = true
	closure(cur)
	for j := 0; j < len(t); j++ {
		clear(next)
		live := false
		for i := 0; i < len(p); i++ {
			if !cur[i] {
				continue
			}
			if p[i] == '*' {
				next[i] = true
				live = true
			} else if p[i] == t[j] {
				next[i+1] = true
				live = true
			}
		}
		if !live {
			return false
		}
		closure(next)
		cur, next = next, cur
	}
	for _, ok := range cur {
		if ok {
			return true
		}
	}
	return false
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
