package tools

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/flemma-dev/flemma/internal/size"
	"github.com/flemma-dev/flemma/tools/sandbox"
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
	name := fullOutputName(call)
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

// Spool writes the output of a command, as it comes, to the file that
// becomes its full output when the result is truncated (issue 26 #6: the
// file named by a notice held 16 MiB of a 200 MB output, and the notice
// counted the lines of what was kept in memory). Complete lines go through
// Finish (control sequences stripped, secrets redacted), so the file holds
// what the model could be shown; only the first sandbox.FullOutputCap
// bytes of the output are kept, and Capped says so. It counts every byte
// and line the command wrote, exactly. Not safe for concurrent use (the
// caller serialises Write).
type Spool struct {
	env      *Env
	dir, tmp string
	f        *os.File
	pending  []byte // the start of a line not yet finished
	kept     int64  // bytes of output given to the file
	total    int64  // bytes of output seen
	newlines int64
	trailNL  int64 // newlines in the run of trailing whitespace
	content  bool  // something other than whitespace was seen
	err      error
}

// spoolPending bounds a line kept back for Finish: a longer one is written
// in pieces.
const spoolPending = 1 << 20

// NewSpool starts a spool in dir (created 0700 when missing); without a
// usable dir it only counts.
func NewSpool(dir string, env *Env) *Spool {
	s := &Spool{env: env, dir: dir}
	if dir == "" {
		dir = os.TempDir()
		s.dir = dir
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.err = err
		return s
	}
	f, err := os.CreateTemp(dir, ".flemma_tool_*.tmp") // 0600
	if err != nil {
		s.err = err
		return s
	}
	s.f, s.tmp = f, f.Name()
	return s
}

// Write counts p and adds it to the file while under the cap.
func (s *Spool) Write(p []byte) (int, error) {
	n := len(p)
	s.total += int64(n)
	s.newlines += int64(bytes.Count(p, []byte{'\n'}))
	last := bytes.LastIndexFunc(p, func(r rune) bool { return r != ' ' && r != '\t' && r != '\r' && r != '\n' })
	if last >= 0 {
		s.content = true
		s.trailNL = int64(bytes.Count(p[last:], []byte{'\n'}))
	} else {
		s.trailNL += int64(bytes.Count(p, []byte{'\n'}))
	}
	if s.f == nil || s.kept >= sandbox.FullOutputCap {
		return n, nil
	}
	if room := sandbox.FullOutputCap - s.kept; int64(len(p)) > room {
		p = p[:room]
	}
	s.kept += int64(len(p))
	s.pending = append(s.pending, p...)
	cut := bytes.LastIndexByte(s.pending, '\n') + 1
	if cut == 0 && len(s.pending) >= spoolPending {
		cut = len(s.pending)
	}
	if cut > 0 {
		s.flush(s.pending[:cut])
		s.pending = append(s.pending[:0], s.pending[cut:]...)
	}
	return n, nil
}

func (s *Spool) flush(b []byte) {
	if s.err != nil || len(b) == 0 {
		return
	}
	if _, err := s.f.WriteString(Finish(string(b), s.env)); err != nil {
		s.err = err
	}
}

// Totals are the exact bytes and lines of the whole output (lines as
// TruncateTail counts them once trailing whitespace is trimmed; 0 for an
// output of whitespace only).
func (s *Spool) Totals() (bytes, lines int64) {
	if !s.content {
		return s.total, 0
	}
	return s.total, s.newlines - s.trailNL + 1
}

// Capped reports whether the file holds only the start of the output:
// the bytes kept and the output's size.
func (s *Spool) Capped() (capped bool, kept, total int64) {
	return s.total > s.kept, s.kept, s.total
}

// Keep closes the file and moves it into place as the full output of call
// (named as SaveFullOutput names it) and returns its path.
func (s *Spool) Keep(call Call) (string, error) {
	if s.f == nil {
		if s.err == nil {
			s.err = errors.New("no full output file")
		}
		return "", s.err
	}
	s.flush(s.pending)
	s.pending = nil
	err := s.err
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	if err != nil {
		os.Remove(s.tmp)
		return "", err
	}
	path := filepath.Join(s.dir, fullOutputName(call))
	if err := os.Rename(s.tmp, path); err != nil {
		os.Remove(s.tmp)
		return "", err
	}
	return path, nil
}

// Discard closes and removes the file (the result was not truncated).
func (s *Spool) Discard() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
		os.Remove(s.tmp)
	}
}

// TruncateTailOf presents the end of an output too large to keep whole in
// memory: tail is its last part (Finish applied), lines and size the
// whole output's exact totals, full the path of the saved output ("" when
// there is none) and note what the file lacks ("" when it is complete).
// The lines shown are numbered in the whole output.
func TruncateTailOf(tail string, l Limits, lines, size int64, full, note string) string {
	l = l.withDefaults()
	t := TruncateTail(tail, l)
	fullPart := ""
	if full != "" {
		fullPart = ". Full output: " + full
		if note != "" {
			fullPart = ". Full output (" + note + "): " + full
		}
	}
	if t.LastLinePartial {
		return t.Content + "\n\n" + fmt.Sprintf("[Showing last %s of line %d of %s%s]", FormatSize(int64(t.OutputBytes)), lines, FormatSize(size), fullPart)
	}
	a := lines - int64(t.OutputLines) + 1
	return t.Content + "\n\n" + fmt.Sprintf("[Showing lines %d-%d of %d (%s in all)%s]", a, lines, lines, FormatSize(size), fullPart)
}

// fullOutputName is the file name of call's full output.
func fullOutputName(call Call) string {
	bufPart := strings.ReplaceAll(strings.TrimPrefix(call.Buffer, "/"), "/", "-")
	return "flemma_tool_" + safeName(bufPart) + "_" + safeName(call.ID) + ".txt"
}
