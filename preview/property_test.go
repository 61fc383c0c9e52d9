package preview

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// pieces random strings are made of: ASCII, Latin with accents (precomposed
// and combining), CJK, emoji (plain, ZWJ sequences, flags, skin tones, tag
// sequence), line breaks of every kind, tabs, controls, bidi controls,
// ambiguous-width symbols, invalid UTF-8, quotes and backslashes.
var pieces = []string{
	"a", "Z", "0", " ", "  ", "-", "/", ".", "$", "#", "=", ",", "{", "[", "…", "↵",
	"é", "e\u0301", "\u0301", "\u0301\u0302\u0303", "ñ", "ß", "Ω", "ж",
	"日", "本語", "ｶ", "한", "ᄀᄀ", "\u3000", "，",
	"🎉", "👨‍👩‍👧", "👍🏽", "🇯🇵", "🇫", "🏴󠁧󠁢󠁥󠁮󠁧󠁿", "❤️", "\u200d", "\ufe0f",
	"\n", "\r\n", "\r", "\u2028", "\u0085", "\t",
	"\x00", "\x07", "\x1b[31m", "\x7f", "\u009b", "\u202e", "\u2066", "\u200b", "\u00ad",
	"±", "①", "α",
	"\xff", "\xe6\x97", "\xc3",
	`"`, `\`, `\"`,
}

func randString(r *rand.Rand, maxPieces int) string {
	var b strings.Builder
	for n := r.IntN(maxPieces + 1); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

var fieldNames = []string{
	"command", "label", "timeout", "path", "offset", "limit", "content", "oldText", "newText",
	"pattern", "glob", "max_depth", "expression", "delay", "query", "x", "",
}

func randValue(r *rand.Rand, depth int) any {
	switch r.IntN(10) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return float64(r.IntN(2000) - 1000)
	case 3:
		return r.NormFloat64() * 1e6
	case 4:
		if depth > 0 {
			a := make([]any, r.IntN(4))
			for i := range a {
				a[i] = randValue(r, depth-1)
			}
			return a
		}
		return "leaf"
	case 5:
		if depth > 0 {
			return randInput(r, depth-1)
		}
		return 7
	case 6:
		return randString(r, 200) // long
	default:
		return randString(r, 12)
	}
}

func randInput(r *rand.Rand, depth int) map[string]any {
	if r.IntN(20) == 0 {
		return nil
	}
	in := map[string]any{}
	for n := r.IntN(6); n > 0; n-- {
		var k string
		if r.IntN(3) == 0 {
			k = randString(r, 3)
		} else {
			k = fieldNames[r.IntN(len(fieldNames))]
		}
		in[k] = randValue(r, depth)
	}
	return in
}

func randTool(r *rand.Rand) string {
	tools := BuiltinTools()
	if r.IntN(3) > 0 {
		return tools[r.IntN(len(tools))]
	}
	return randString(r, 4)
}

func randOptions(r *rand.Rand) Options {
	var o Options
	switch r.IntN(4) {
	case 0:
		o.EOL = "$"
	case 1:
		o.EOL = randString(r, 2)
	}
	o.AmbiguousWide = r.IntN(4) == 0
	if r.IntN(4) == 0 {
		s, ok := randString(r, 30), r.IntN(3) > 0
		o.Custom = func(int) (string, bool) { return s, ok }
	}
	return o
}

// TestFormatProperties checks, for random tools, inputs, options and widths
// 1..120, that the line fits, is one line of valid UTF-8 without controls,
// and that the budgeted construction agrees with building the whole line.
func TestFormatProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(2024, 7))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		tool, in, opts := randTool(r), randInput(r, 2), randOptions(r)
		for _, w := range []int{1 + r.IntN(4), 1 + r.IntN(120), 1 + r.IntN(120)} {
			got := Format(tool, in, w, opts)
			if t.Failed() {
				return
			}
			what := describeInput(i, tool, in, w, opts)
			checkLine(t, what, got, w, opts.AmbiguousWide)
			if !opts.AmbiguousWide && !runewidth.DefaultCondition.EastAsianWidth {
				if sw := runewidth.StringWidth(got); sw > w {
					t.Errorf("%s: runewidth.StringWidth = %d > %d", what, sw, w)
				}
			}
			if strings.ContainsAny(got, "\n\r\t") || !utf8.ValidString(got) {
				t.Errorf("%s: %q is not one clean line", what, got)
			}
			if whole := format(tool, in, w, opts, 0); got != whole {
				t.Errorf("%s:\n  budgeted %q\n  whole    %q", what, got, whole)
			}
			if tiny := format(tool, in, w, opts, 1); got != tiny {
				t.Errorf("%s:\n  budgeted    %q\n  budget 1 up %q", what, got, tiny)
			}
		}
	}
}

func describeInput(i int, tool string, in map[string]any, w int, o Options) string {
	b, err := json.Marshal(in)
	if err != nil {
		b = []byte(err.Error())
	}
	return "case " + itoa(i) + " Format(" + quote(tool) + ", " + string(b) + ", " + itoa(w) +
		", EOL=" + quote(o.EOL) + " wide=" + map[bool]string{true: "y", false: "n"}[o.AmbiguousWide] +
		" custom=" + map[bool]string{true: "y", false: "n"}[o.Custom != nil] + ")"
}

func itoa(i int) string { return strconv.Itoa(i) }

func quote(s string) string { return strconv.Quote(s) }

// TestWidthMonotone checks that a wider window never shows less: the line
// at width w is a prefix of the line at width w+1, up to the "…".
func TestWidthMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(99, 1))
	for range 500 {
		tool, in, opts := randTool(r), randInput(r, 1), randOptions(r)
		prev := ""
		// Under ambiwidth=double a 1-cell line cannot hold "…" and is cut
		// without it, so start where the marker fits.
		start := 1
		if opts.AmbiguousWide {
			start = 2
		}
		for w := start; w <= 90; w++ {
			got := Format(tool, in, w, opts)
			if p := strings.TrimSuffix(prev, ellipsis); !strings.HasPrefix(got, p) {
				t.Fatalf("Format(%q, %v, %d) = %q does not extend the line at width %d, %q", tool, in, w, got, w-1, prev)
			}
			prev = got
		}
	}
}
