package sandbox

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// foldPath is the form in which paths and deny globs are compared: NFKC
// normalised (so decomposed, full-width and compatibility forms of a letter
// are one letter), without invisible format characters (zero-width spaces
// and joiners, soft hyphens, bidi marks), lower-cased. A filesystem that is
// case-insensitive or normalises Unicode (macOS) would open `~/.SSH/ID_RSA`
// or a decomposed `.ssh` as the real key, so the deny rules must not be
// dodged by spelling.
func foldPath(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	s = norm.NFKC.String(s)
	s = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
	return norm.NFKC.String(s)
}
