package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/flemma-dev/flemma/internal/size"
)

// Truncated is the result of TruncateHead or TruncateTail (reference §8.2).
// Line counts split on "\n", so a trailing newline makes a last empty line;
// byte counts charge each kept line its length plus one per separator.
type Truncated struct {
	Content     string
	Truncated   bool
	By          string // "lines" or "bytes" when Truncated
	TotalLines  int
	TotalBytes  int
	OutputLines int
	OutputBytes int
	// LastLinePartial: TruncateTail kept only the end of a last line that
	// alone exceeds MaxBytes.
	LastLinePartial bool
	// FirstLineExceedsLimit: TruncateHead found a first line that alone
	// exceeds MaxBytes, and kept nothing.
	FirstLineExceedsLimit bool
}

// TruncateHead keeps whole lines from the top while both limits hold.
func TruncateHead(text string, l Limits) Truncated {
	l = l.withDefaults()
	total := strings.Count(text, "\n") + 1
	t := Truncated{Content: text, TotalLines: total, TotalBytes: len(text), OutputLines: total, OutputBytes: len(text)}
	if total <= l.MaxLines && len(text) <= l.MaxBytes {
		return t
	}
	t.Truncated = true
	first := text
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		first = text[:i]
	}
	if len(first) > l.MaxBytes {
		t.Content, t.By, t.OutputLines, t.OutputBytes = "", "bytes", 0, 0
		t.FirstLineExceedsLimit = true
		return t
	}
	end, lines := 0, 0 // text[:end] is kept
	t.By = "bytes"
	for pos := 0; ; {
		if lines == l.MaxLines {
			t.By = "lines"
			break
		}
		nl := strings.IndexByte(text[pos:], '\n')
		lineEnd := len(text)
		if nl >= 0 {
			lineEnd = pos + nl
		}
		if lineEnd > l.MaxBytes { // bytes used = lineEnd (separators included)
			break
		}
		end, lines = lineEnd, lines+1
		if nl < 0 {
			break
		}
		pos = lineEnd + 1
	}
	t.Content, t.OutputLines, t.OutputBytes = text[:end], lines, end
	return t
}

// TruncateTail keeps whole lines from the bottom while both limits hold. When
// the last line alone exceeds MaxBytes it keeps that line's last MaxBytes
// bytes, starting at a character boundary.
func TruncateTail(text string, l Limits) Truncated {
	l = l.withDefaults()
	total := strings.Count(text, "\n") + 1
	t := Truncated{Content: text, TotalLines: total, TotalBytes: len(text), OutputLines: total, OutputBytes: len(text)}
	if total <= l.MaxLines && len(text) <= l.MaxBytes {
		return t
	}
	t.Truncated = true
	last := text
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		last = text[i+1:]
	}
	if len(last) > l.MaxBytes {
		start := len(text) - l.MaxBytes
		for start < len(text) && !utf8.RuneStart(text[start]) {
			start++
		}
		t.Content, t.By, t.OutputLines, t.OutputBytes = text[start:], "bytes", 1, len(text)-start
		t.LastLinePartial = true
		return t
	}
	start, lines := len(text), 0 // text[start:] is kept
	t.By = "bytes"
	for pos := len(text); ; {
		if lines == l.MaxLines {
			t.By = "lines"
			break
		}
		nl := strings.LastIndexByte(text[:pos], '\n')
		lineStart := nl + 1
		if len(text)-lineStart > l.MaxBytes {
			break
		}
		start, lines = lineStart, lines+1
		if nl < 0 {
			break
		}
		pos = nl
	}
	t.Content, t.OutputLines, t.OutputBytes = text[start:], lines, len(text)-start
	return t
}

// TruncateLine caps one line at max bytes (MaxLineBytes when max <= 0): the
// longest whole-character prefix that leaves room for "... [truncated]".
func TruncateLine(line string, max int) string {
	if max <= 0 {
		max = MaxLineBytes
	}
	if len(line) <= max {
		return line
	}
	const suffix = "... [truncated]"
	budget := max - len(suffix)
	if budget < 1 {
		budget = 1
	}
	cut := budget
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + suffix
}

// FormatSize formats a byte count the way previews and notices show it
// ("5B", "2.3KB", "1.0MB"); previews use the same function (internal/size).
func FormatSize(n int64) string { return size.Format(n) }

// TruncateWithOverflow truncates text (head or tail first, as direction
// says) and, when anything was cut, saves the full text with save and adds
// the notice of reference §8.3 naming the file. save may be nil, or fail:
// the notice then has no "Full output" part.
func TruncateWithOverflow(text string, tail bool, l Limits, save func(full string) (string, error)) string {
	l = l.withDefaults()
	var t Truncated
	if tail {
		t = TruncateTail(text, l)
	} else {
		t = TruncateHead(text, l)
	}
	if !t.Truncated {
		return text
	}
	full := ""
	if save != nil {
		if p, err := save(text); err == nil && p != "" {
			full = ". Full output: " + p
		}
	}
	limit := FormatSize(int64(l.MaxBytes))
	if t.FirstLineExceedsLimit {
		return fmt.Sprintf("[Output too large: %s in a single line, exceeds %s limit%s]", FormatSize(int64(t.TotalBytes)), limit, full)
	}
	a, b := 1, t.OutputLines
	if tail {
		a, b = t.TotalLines-t.OutputLines+1, t.TotalLines
	}
	var notice string
	switch {
	case t.LastLinePartial:
		notice = fmt.Sprintf("[Showing last %s of line %d%s]", FormatSize(int64(t.OutputBytes)), t.TotalLines, full)
	case t.By == "lines":
		notice = fmt.Sprintf("[Showing lines %d-%d of %d%s]", a, b, t.TotalLines, full)
	default:
		notice = fmt.Sprintf("[Showing lines %d-%d of %d (%s limit)%s]", a, b, t.TotalLines, limit, full)
	}
	return t.Content + "\n\n" + notice
}

// SaveFullOutput writes the full text of a truncated result to
// <dir>/flemma_tool_<buffer path>_<id>.txt (reference §8.3's default name)
// and returns the path. It writes a temporary file and renames it into
// place, so a symlink planted under that name in a shared /tmp is replaced,
// never followed.
func SaveFullOutput(dir string, call Call, text string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	bufPart := strings.ReplaceAll(strings.TrimPrefix(call.Buffer, "/"), "/", "-")
	name := "flemma_tool_" + safeName(bufPart) + "_" + safeName(call.ID) + ".txt"
	f, err := os.CreateTemp(dir, ".flemma_tool_*.tmp")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// safeName keeps a file-name part to letters, digits and ._- so that a tool
// id or buffer name can never leave the output directory.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), ".")
	if len(out) > 100 {
		out = out[len(out)-100:]
	}
	return out
}
