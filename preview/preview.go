package preview

import (
	"github.com/mattn/go-runewidth"

	"github.com/flemma-dev/flemma/internal/size"
)

// Options adjusts one Format call. The zero value is ready to use.
type Options struct {
	// EOL stands for a line break inside the preview: the eol entry of
	// Neovim's 'listchars'. Empty means "↵". Control characters in it are
	// dropped (and an EOL that is nothing else means "↵").
	EOL string

	// Custom, when set, is the tool's own formatter: the caller wraps a Lua
	// format_preview(input, max_length). Format calls it at most once, with
	// maxLen = width − the cells of "<tool>: " (never below 0). When it
	// returns ok, its text is the summary as is: cleaned (line breaks become
	// EOL, tabs a space, controls dropped) and cut to fit, but not trimmed.
	// When it returns !ok (no formatter, or the Lua function failed), the
	// built-in or generic summary is used instead.
	Custom func(maxLen int) (summary string, ok bool)

	// AmbiguousWide counts East Asian ambiguous-width characters (among them
	// "…" and many symbols) as two cells, as Neovim does with
	// 'ambiwidth'=double. The default, false, is Neovim's default "single".
	AmbiguousWide bool
}

// Format returns the one-line preview of a call of tool with input, at most
// width display cells wide: "<tool>: <summary>", for instance
//
//	bash: $ make test  # running tests
//	read: src/config.lua  +0,50  # reading config
//	write: output.txt (2.3KB)  # saving log
//	my_tool: path="./src", query="foo", opts={a, b, +2 more}
//
// The summary comes from opts.Custom when that answers, else from the
// built-in formatter for tool (see the package documentation), else from the
// generic key=value form. An empty summary (for instance an empty input)
// gives the tool name alone, without a colon.
//
// The result is a single line of valid UTF-8: line breaks become opts.EOL,
// tabs a space, control characters vanish. If it is wider than width it is
// cut on a grapheme boundary and ends in "…". width <= 0 gives "".
//
// Format only reads input, never keeps it, and is safe for concurrent use.
// Its cost is bounded by width, not by the size of input's strings: only a
// prefix of the line a few times wider than width is ever built.
func Format(tool string, input map[string]any, width int, opts Options) string {
	budget := 4*width + 64
	if width > 1<<24 {
		budget = 0 // unlimited
	}
	return format(tool, input, width, opts, budget)
}

// format is Format with the first byte budget given (<= 0: unlimited), so
// tests can compare the budgeted path with building the whole line.
func format(tool string, input map[string]any, width int, opts Options, budget int) string {
	if width <= 0 {
		return ""
	}
	cells := narrowCells
	if opts.AmbiguousWide {
		cells = wideCells
	}
	r := renderer{input: input, eol: cleanEOL(opts.EOL)}
	if isASCII(tool) {
		r.name = tool
	} else {
		name := line{eol: r.eol}
		name.text(tool)
		r.name = string(name.buf)
	}
	if opts.Custom != nil {
		prefix := r.name
		if prefix != "" {
			prefix += ": "
		}
		r.custom, r.useCustom = opts.Custom(max(0, width-cellWidth(prefix, cells)))
	}
	switch f, ok := builtins[tool]; {
	case r.useCustom:
		r.summary = func(l *line, _ map[string]any) { l.text(r.custom) }
	case ok:
		r.summary = f
	default:
		r.summary = generic
	}

	// Build only a prefix of the line, budget bytes long. If that prefix is
	// already wider than width, cutting it gives exactly what cutting the
	// whole line would: a prefix that stops mid-cluster is never wider than
	// the full line up to the same point, and the cut falls before the last
	// (possibly partial) cluster. Otherwise (long runs of runes that take no
	// cell of their own) try again with a larger budget, up to hardCap; a
	// line that fits is always built whole.
	hardCap := budget // unlimited stays unlimited
	if budget > 0 {
		hardCap = max(budget, maxCellBytes*(width+1))
	}
	for {
		b, over := r.render(budget)
		if !over {
			return fitBytes(b, width, cells)
		}
		s := string(b)
		if cellWidth(s, cells) > width {
			return fit(s, width, cells)
		}
		if budget >= hardCap {
			// maxCellBytes per cell and still within width: give up on finding
			// the exact cut and mark this one.
			return cutMarked(s, width, cells)
		}
		budget = min(budget*4, hardCap)
	}
}

// maxCellBytes bounds the work for a line whose text takes almost no cells:
// the line is given up as unmeasurable after this many bytes per cell of
// width. A cell of real text holds a few runes (the marks written per cell
// are capped at maxMarks); this is for the clusters that no cap catches
// (Hangul leading jamo chain into one two-cell cluster without end).
const maxCellBytes = 128

// renderer writes one preview line; it may be asked to more than once with
// growing budgets.
type renderer struct {
	name      string // tool name, cleaned
	input     map[string]any
	eol       string
	custom    string
	useCustom bool
	summary   func(*line, map[string]any)
	probed    bool // empty is known
	empty     bool // the summary is empty
}

func (r *renderer) render(budget int) (b []byte, over bool) {
	if !r.probed {
		// An empty summary leaves the name alone, without ": ". Decide that
		// up front (a one-byte probe), so every budget builds a prefix of
		// the same line.
		probe := line{budget: 1, eol: r.eol}
		r.summary(&probe, r.input)
		r.empty, r.probed = len(probe.buf) == 0, true
	}
	l := line{budget: budget, eol: r.eol}
	if budget > 0 {
		l.buf = make([]byte, 0, budget+8)
	}
	l.text(r.name)
	if r.name != "" && !r.empty {
		l.raw(": ")
	}
	if !r.empty {
		r.summary(&l, r.input)
	}
	return l.buf, l.over
}

// fitBytes is fit for a line held in a buffer Format owns, cutting printable
// ASCII in place.
func fitBytes(b []byte, w int, c *runewidth.Condition) string {
	if isASCIIBytes(b) {
		if len(b) <= w {
			return string(b)
		}
		tw := c.StringWidth(ellipsis)
		if w < tw {
			return string(b[:w])
		}
		return string(append(b[:w-tw], ellipsis...))
	}
	return fit(string(b), w, c)
}

func isASCIIBytes(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// FormatSize renders a byte count the way the Lua plugin's format_size does
// (and the truncation notices expect): below 1024 "<n>B", then one decimal
// with KB, MB or GB, binary multiples, no space: 5 → "5B", 1536 → "1.5KB",
// 51200 → "50.0KB", 12345 → "12.1KB", 3<<20 → "3.0MB". Sizes of 1 TiB and
// more stay in GB; negative counts print as "<n>B".
func FormatSize(n int64) string { return size.Format(n) }
