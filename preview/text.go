package preview

import (
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Units: everything in this file that says "width" means display cells as
// go-runewidth counts them (one grapheme cluster = the width of its first
// non-zero-width rune; CJK and emoji = 2, combining marks = 0); everything that
// says "budget" or "len" means bytes of UTF-8. This is the only file that
// converts between the two.

// ellipsis marks a cut line. It is one cell wide, two under ambiwidth=double.
const ellipsis = "…"

// defaultEOL stands for a line break when Options.EOL is empty (Neovim's
// default has no eol entry in 'listchars').
const defaultEOL = "↵"

// The two width conditions Format may use. They are built here rather than
// taken from runewidth.DefaultCondition, which runewidth sets from the
// process locale (LANG, RUNEWIDTH_EASTASIAN) at init: a preview must depend
// on Neovim's 'ambiwidth', passed in Options, not on the host's environment.
// Neither condition builds a lookup table, so both are safe for concurrent use.
var (
	narrowCells = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}
	wideCells   = &runewidth.Condition{EastAsianWidth: true, StrictEmojiNeutral: true}
)

// line accumulates one sanitised preview line up to a byte budget.
//
// Every rune written through text is cleaned: line breaks become eol, tabs a
// space, control and bidi-control characters are dropped, invalid UTF-8
// becomes U+FFFD. Once len(buf) reaches budget, further writes are ignored and
// over is set; because writes stop on a rune boundary, buf is then a prefix of
// the full line (see Format for why a prefix is enough).
type line struct {
	buf    []byte
	budget int // bytes; <= 0 means unlimited
	eol    string
	over   bool

	// marks counts the runes that extend the cell before them (see isMark,
	// and whatever follows a ZWJ) written since the last rune that starts a
	// cell; past maxMarks they are dropped, so "zalgo" text or a million
	// U+200B cannot turn one cell into megabytes.
	marks    int
	afterZWJ bool
}

// maxMarks bounds a run of marks. Real text needs far fewer: the longest
// emoji sequences have 6 (tag flags), stacked diacritics 3 or 4.
const maxMarks = 16

// full reports whether the budget is exhausted.
func (l *line) full() bool {
	if l.over {
		return true
	}
	if l.budget > 0 && len(l.buf) >= l.budget {
		l.over = true
	}
	return l.over
}

// raw appends trusted ASCII (separators, punctuation) without cleaning.
func (l *line) raw(s string) {
	for i := 0; i < len(s); i++ {
		if l.full() {
			return
		}
		l.buf = append(l.buf, s[i])
	}
	l.marks, l.afterZWJ = 0, false
}

// text appends s, cleaned.
func (l *line) text(s string) { l.clean(s, false) }

// quoted appends s, cleaned, between double quotes, with inner quotes escaped
// as \" (backslashes are left alone, as in the Lua plugin).
func (l *line) quoted(s string) {
	l.raw(`"`)
	l.clean(s, true)
	l.raw(`"`)
}

func (l *line) clean(s string, escQuote bool) {
	invalid := false // collapse a run of invalid bytes into one U+FFFD
	for i := 0; i < len(s); {
		if l.full() {
			return
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if !invalid {
				l.base("\uFFFD")
			}
			invalid = true
			i++
			continue
		}
		invalid = false
		i += size
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				i++
			}
			l.base(l.eol)
		case r == '\n' || r == 0x85 || r == 0x2028 || r == 0x2029:
			l.base(l.eol)
		case r == '\t':
			l.base(" ")
		case r == '"' && escQuote:
			l.base(`\"`)
		case dropped(r):
		case r < 0x300: // printable Latin: one cell, never joins
			l.buf = utf8.AppendRune(l.buf, r)
			l.marks, l.afterZWJ = 0, false
		case l.afterZWJ || isMark(r):
			l.afterZWJ = r == 0x200d
			if l.marks++; l.marks <= maxMarks {
				l.buf = utf8.AppendRune(l.buf, r)
			}
		default:
			l.buf = utf8.AppendRune(l.buf, r)
			l.marks, l.afterZWJ = 0, false
		}
	}
}

// isMark reports runes that extend the cell before them rather than start
// their own: zero-width runes, combining marks (spacing ones too), format
// characters (joiners, tags) and emoji skin-tone modifiers.
func isMark(r rune) bool {
	return narrowCells.RuneWidth(r) == 0 ||
		unicode.In(r, unicode.M, unicode.Cf) ||
		(r >= 0x1f3fb && r <= 0x1f3ff)
}

// base appends text that takes cells, ending any run of zero-width runes.
func (l *line) base(s string) {
	l.buf = append(l.buf, s...)
	l.marks, l.afterZWJ = 0, false
}

// dropped reports runes that never reach the preview: C0 and C1 controls and
// DEL (the line breaks and tab among them are handled before), and the
// bidirectional controls, which could make a command display differently from
// what will run (a preview exists to be approved).
func dropped(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // ALM, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	}
	return false
}

// cleanEOL returns the glyph that stands for a line break: opts.EOL cleaned of
// anything that is itself a line break or control, or "↵" if nothing is left.
func cleanEOL(s string) string {
	if s == "" {
		return defaultEOL
	}
	l := line{eol: ""}
	l.text(s)
	if len(l.buf) == 0 {
		return defaultEOL
	}
	return string(l.buf)
}

// isASCII reports whether s is printable ASCII only, where every byte is one
// grapheme of one cell and width is len(s).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// cellWidth is the display width of s under c.
func cellWidth(s string, c *runewidth.Condition) int {
	if isASCII(s) {
		return len(s)
	}
	return c.StringWidth(s)
}

// fit cuts s to at most w cells. A cut line ends in "…"; the cut falls on a
// grapheme boundary, so no rune and no cluster (e + combining accent, ZWJ
// emoji, flag) is split, and a wide character that would straddle the limit
// is dropped whole. w <= 0 gives "". When even "…" does not fit (w = 1 with
// ambiwidth=double) the text is cut without a marker.
func fit(s string, w int, c *runewidth.Condition) string {
	if w <= 0 {
		return ""
	}
	if isASCII(s) {
		if len(s) <= w {
			return s
		}
		tw := c.StringWidth(ellipsis)
		if w < tw {
			return s[:w]
		}
		return s[:w-tw] + ellipsis
	}
	if c.StringWidth(s) <= w {
		return s
	}
	if w < c.StringWidth(ellipsis) {
		return c.Truncate(s, w, "")
	}
	return c.Truncate(s, w, ellipsis)
}

// cutMarked cuts s to w cells and marks the cut with "…" whether or not s
// already fits: s is known to be only the start of a longer line.
func cutMarked(s string, w int, c *runewidth.Condition) string {
	tw := c.StringWidth(ellipsis)
	if w < tw {
		return fit(s, w, c)
	}
	return c.Truncate(s, w-tw, "") + ellipsis
}
