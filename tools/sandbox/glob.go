package sandbox

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

type GlobKind uint8

// ClassifyGlob finds the fast forms of a base-name glob.
func ClassifyGlob(p string) (GlobKind, string) {
	const meta = `*?[{\`
	switch {
	case !strings.ContainsAny(p, meta):
		return GlobLit, p
	case p[0] == '*' && !strings.ContainsAny(p[1:], meta):
		return GlobSuffix, p[1:]
	case p[len(p)-1] == '*' && !strings.ContainsAny(p[:len(p)-1], meta):
		return GlobPrefix, p[:len(p)-1]
	}
	return GlobAny, ""
}

func MatchGlob(kind GlobKind, lit, pat, s string) bool {
	switch kind {
	case GlobLit:
		return s == lit
	case GlobSuffix:
		return strings.HasSuffix(s, lit)
	case GlobPrefix:
		return strings.HasPrefix(s, lit)
	}
	ok, _ := doublestar.Match(pat, s)
	return ok
}

const (
	GlobAny    GlobKind = iota // general doublestar match
	GlobLit                    // exact name
	GlobSuffix                 // *lit
	GlobPrefix                 // lit*
)
