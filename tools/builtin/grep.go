package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// GrepInput is the input of grep (reference §7.5).
type GrepInput struct {
	Glob    *string  `json:"glob" desc:"Only search files whose name matches this glob, e.g. *.go or src/**/*.ts (a leading ! excludes)"`
	Label   string   `json:"label" desc:"A short human-readable label for this operation"`
	Limit   *float64 `json:"limit" desc:"Maximum number of matches to return (default: 100)"`
	Path    *string  `json:"path" desc:"File or directory to search (default: the chat file's directory)"`
	Pattern string   `json:"pattern" desc:"Regular expression to search for, line by line (ripgrep/RE2 syntax; (?i) for case-insensitive)"`
}

// Grep is the grep built-in, implemented in Go: ripgrep's defaults
// (gitignore-aware, hidden and binary files skipped, symlinks not followed)
// and deterministic output sorted by path and line.
func Grep() tools.Tool {
	return tools.Typed(tools.Spec{
		Name:         "grep",
		Capabilities: []string{tools.CapReadsPath},
		Truncates:    true,
		Description: "Search file contents for a regular expression, like ripgrep: .gitignore/.ignore are respected, " +
			"hidden and binary files are skipped. Output lines are path:line:text, sorted by path, each cut at 500 bytes; " +
			"at most limit matches (default 100).",
		Tags:    []string{"filesystem", "readonly", "search"},
		Async:   true,
		Enabled: true,
	}, runGrep)
}

// grepWorkers search files in parallel while one goroutine walks.
const grepWorkers = 2

type grepMatch struct {
	file string // absolute
	line int
	text string
}

func runGrep(ctx context.Context, call tools.Call, in GrepInput) (tools.Output, error) {
	started := time.Now()
	if in.Pattern == "" {
		return tools.Output{}, tools.Failf("No pattern provided")
	}
	m, err := newMatcher(in.Pattern)
	if err != nil {
		return tools.Output{}, err
	}
	limit := 100
	if in.Limit != nil {
		limit = int(math.Max(1, math.Floor(*in.Limit)))
	}
	var globs []fileGlob
	if in.Glob != nil {
		var bad string
		if globs, bad = newFileGlobs(*in.Glob); bad != "" {
			return tools.Output{}, tools.Failf("Invalid glob: %s", *in.Glob)
		}
	}
	input, root, isDir, err := searchRoot(call, in.Path)
	if err != nil {
		return tools.Output{}, err
	}
	sb, _ := call.Env.SandboxFor(call)
	// Only the matches the output can show (one line each) keep their
	// text; the others are counted.
	keep := call.Env.Limits().MaxLines
	matches, total, limited, binaryRoot, err := grepSearch(ctx, root, isDir, sb, call.Env.ExcludeOrDefault(), globs, m, limit, keep)
	if err != nil {
		return tools.Output{}, searchError(input, err)
	}
	if binaryRoot {
		return tools.Output{}, fmt.Errorf("%s is a binary file; grep skips binary files (use read to see its type)", input)
	}
	work := sandbox.CanonicalOr(call.Env.WorkDir(call))
	lines := make([]string, len(matches))
	for i, mt := range matches {
		lines[i] = tools.TruncateLine(displayPath(mt.file, work)+":"+strconv.Itoa(mt.line)+":"+mt.text, tools.MaxLineBytes)
	}
	text := tools.Finish(strings.Join(lines, "\n"), call.Env)
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tools.Output{}, timedOut("Search", text, started, ctx)
		}
		return tools.Output{}, ctx.Err()
	}
	if len(matches) == 0 {
		return tools.Output{Text: "No matches found."}, nil
	}
	t := tools.TruncateHead(text, call.Env.Limits())
	footer := fmt.Sprintf("%d matches", total)
	if limited {
		footer += ", limit reached"
	}
	shown := len(matches)
	if t.Truncated {
		shown = t.OutputLines
	}
	switch {
	case shown < total && t.Truncated && t.By == "bytes":
		footer += fmt.Sprintf("; showing the first %d (%s limit)", shown, tools.FormatSize(int64(call.Env.Limits().MaxBytes)))
	case shown < total:
		footer += fmt.Sprintf("; showing the first %d", shown)
	}
	return tools.Output{Text: t.Content + "\n\n[" + footer + "]"}, nil
}

// timedOut words a search or find that hit its deadline: the partial output,
// a blank line, then "<what> timed out after N seconds.".
func timedOut(what, partial string, started time.Time, ctx context.Context) error {
	secs := time.Since(started).Seconds()
	if dl, ok := ctx.Deadline(); ok {
		secs = dl.Sub(started).Seconds()
	}
	msg := fmt.Sprintf("%s timed out after %d seconds.", what, int(math.Round(secs)))
	if partial = strings.TrimRight(partial, " \t\r\n"); partial != "" {
		msg = partial + "\n\n" + msg
	}
	return errors.New(msg)
}

// searchError words a search root that could not be opened.
func searchError(input string, err error) error {
	if errors.Is(err, errRootChanged) || errors.Is(err, sandbox.ErrNotFile) {
		return tools.Failf("Cannot search %s: %v", input, err)
	}
	if r := sandbox.FSReason(err); r != "" {
		return tools.Failf("Cannot search %s: %s", input, r)
	}
	return &tools.Internal{Err: err}
}

// grepSearch searches root and returns the first min(limit, keep) matches
// in walk order (path order) and how many there are (at most limit). One
// goroutine walks and hands out batches of files in order, grepWorkers
// goroutines search them, and the results are merged in walk order, so the
// output is deterministic and the search stops as soon as the first limit
// matches are known. Beyond keep, matches are counted, not kept: memory
// does not grow with the limit.
func grepSearch(ctx context.Context, root string, isDir bool, sb *sandbox.Sandbox, exclude []string, globs []fileGlob, m *matcher, limit, keep int) (matches []grepMatch, total int, limited, binaryRoot bool, err error) {
	if !isDir {
		if testHookBeforeOpen != nil {
			testHookBeforeOpen(root)
		}
		d, err := sandbox.OpenRootDir(filepath.Dir(root))
		if err != nil {
			return nil, 0, false, false, walkOpenError(err)
		}
		defer d.Close()
		s := newSearcher(m, keep)
		found, n, binary, err := s.searchFile(d, filepath.Base(root), root, limit+1, nil)
		if err != nil {
			return nil, 0, false, false, walkOpenError(err)
		}
		if binary {
			return nil, 0, false, true, nil
		}
		if n > limit {
			return found[:min(limit, len(found))], limit, true, false, nil
		}
		return found, n, false, false, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// A file to search: its directory stays open (retained) until the file
	// is opened, relative to it.
	type file struct {
		dir       *walkDir
		name, abs string
	}
	type batch struct {
		seq   int
		files []file
	}
	type result struct {
		seq     int
		matches []grepMatch // the first keep of the batch
		count   int         // every match of the batch
	}
	const batchSize = 64
	jobs := make(chan batch, 2*grepWorkers)
	results := make(chan result, 2*grepWorkers)
	release := func(fs []file) {
		for _, f := range fs {
			f.dir.release()
		}
	}

	var wg sync.WaitGroup
	for range grepWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newSearcher(m, keep)
			for b := range jobs {
				var out []grepMatch
				count := 0
				for i, f := range b.files {
					if ctx.Err() != nil {
						release(b.files[i:])
						break
					}
					found, n, binary, _ := s.searchFile(f.dir.fd, f.name, f.abs, limit+1, out)
					f.dir.release()
					if !binary {
						out, count = found, count+n
					}
				}
				results <- result{b.seq, out, count}
			}
		}()
	}
	var rootErr error
	go func() {
		w := &walker{ctx: ctx, sb: sb, exclude: newExcludes(exclude), fileGlobs: globs, root: root}
		cur := batch{}
		w.visit = func(dir *walkDir, name, abs string) bool {
			dir.retain()
			cur.files = append(cur.files, file{dir, name, abs})
			if len(cur.files) == batchSize {
				select {
				case jobs <- cur:
				case <-ctx.Done():
					release(cur.files)
					return false
				}
				cur = batch{seq: cur.seq + 1}
			}
			return true
		}
		if w.walk() && len(cur.files) > 0 {
			select {
			case jobs <- cur:
			case <-ctx.Done():
				release(cur.files)
			}
		} else {
			release(cur.files) // stopped: nobody will open these
		}
		rootErr = w.rootErr
		close(jobs)
		wg.Wait()
		close(results)
	}()

	pending := map[int]result{}
	next := 0
	for r := range results {
		pending[r.seq] = r
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if limited {
				continue
			}
			matches = append(matches, r.matches[:min(len(r.matches), keep-len(matches))]...)
			total += r.count
			if total > limit {
				total, limited = limit, true
				matches = matches[:min(len(matches), limit)]
				cancel()
			}
		}
	}
	return matches, total, limited, false, rootErr
}

// matcher is a compiled grep pattern with the fast paths it allows.
type matcher struct {
	re  *regexp.Regexp // matches one line
	reM *regexp.Regexp // (?m) form, to find candidate lines in a whole buffer; nil if the pattern uses \A or \z
	lit []byte         // the pattern is exactly this literal: bytes.Index, no regexp
	req []byte         // every match contains this literal: bytes.Index finds candidate lines
	// fold: every match contains this ASCII literal in some letter case
	// (from (?i)): candidates are found in an ASCII-lower-cased copy.
	fold []byte
	// foldUnsafe: fold holds k or s, which (?i) also matches as the Kelvin
	// sign and the long s; regions holding those are scanned by regexp.
	foldUnsafe bool
	// pattern, for the lineDFA of each searcher (a DFA is not shared
	// between goroutines).
	pattern string
}

func newMatcher(pattern string) (*matcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, tools.Failf("Invalid pattern: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	m := &matcher{re: re, pattern: pattern}
	ast, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return m, nil
	}
	ast = ast.Simplify()
	if ast.Op == syntax.OpLiteral && ast.Flags&syntax.FoldCase == 0 {
		if lit := string(ast.Rune); !strings.Contains(lit, "\n") {
			m.lit = []byte(lit)
			return m, nil
		}
	}
	req, fold := requiredLiteral(ast, false), requiredLiteral(ast, true)
	switch {
	case req != "" && !strings.Contains(req, "\n") && (len(req) >= 3 || len(req) >= len(fold)):
		m.req = []byte(req)
	case fold != "" && !strings.Contains(fold, "\n") && isASCII(fold):
		m.fold = []byte(strings.ToLower(fold))
		m.foldUnsafe = strings.ContainsAny(strings.ToLower(fold), "ks")
	}
	if !usesTextAnchors(ast) {
		m.reM = regexp.MustCompile("(?m:" + pattern + ")")
	}
	return m, nil
}

// requiredLiteral returns the longest literal that every match of re
// contains, or "": case-sensitive literals, or with fold the literals of
// (?i) parts (which match in any letter case).
func requiredLiteral(re *syntax.Regexp, fold bool) string {
	switch re.Op {
	case syntax.OpLiteral:
		if (re.Flags&syntax.FoldCase != 0) != fold {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0], fold)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0], fold)
		}
	case syntax.OpConcat:
		best := ""
		for _, s := range re.Sub {
			if l := requiredLiteral(s, fold); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// lowerASCIIInto writes b with ASCII letters lower-cased into dst.
func lowerASCIIInto(dst, b []byte) []byte {
	dst = append(dst[:0], b...)
	for i, c := range dst {
		if c-'A' < 26 {
			dst[i] = c + 'a' - 'A'
		}
	}
	return dst
}

func usesTextAnchors(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, s := range re.Sub {
		if usesTextAnchors(s) {
			return true
		}
	}
	return false
}

// searcher searches files with one reusable buffer.
type searcher struct {
	m     *matcher
	keep  int // the matches whose text is kept in an out slice; the rest are counted
	buf   []byte
	lower []byte   // region lower-cased, for m.fold
	dfa   *lineDFA // for a pattern with no literal to look for; nil otherwise
}

// grepMaxLine bounds the part of a line grep searches (and so its buffer):
// a longer line is searched in its first grepMaxLine bytes, the rest of it
// skipped (a match there is not found).
const grepMaxLine = 8 << 20

func newSearcher(m *matcher, keep int) *searcher {
	s := &searcher{m: m, keep: keep, buf: make([]byte, 64*1024)}
	if m.lit == nil {
		s.dfa = newLineDFA(m.pattern)
	}
	return s
}

// searchFile searches the file name in dir (whose path is path) for up to
// max matches: it appends them to out while out holds fewer than s.keep,
// and returns how many it found in all. A symlink or anything but a regular
// file there is not opened. A file with a NUL byte is binary: it is skipped
// (binary is true and out is returned unchanged). The file is read in
// chunks cut at line ends, so its size does not matter; a line longer than
// grepMaxLine is searched in its first grepMaxLine bytes.
func (s *searcher) searchFile(dir sandbox.DirFD, name, path string, max int, out []grepMatch) ([]grepMatch, int, bool, error) {
	if testHookBeforeOpen != nil {
		testHookBeforeOpen(path)
	}
	f, err := dir.OpenRegular(name)
	if err != nil {
		return out, 0, false, err
	}
	defer f.Close()
	start := len(out)
	carry := 0        // bytes of an unfinished line at the start of buf
	lines := 0        // lines before buf[0]
	found := 0        // matches in this file
	skipping := false // in the rest of an overlong line, after its first grepMaxLine bytes
	for found < max {
		if carry == len(s.buf) {
			if len(s.buf) >= grepMaxLine {
				// An overlong line: search what we have of it as the
				// whole line, then skip to its end.
				if !skipping {
					var n int
					out, n = s.scan(s.buf[:carry], path, lines, max-found, out)
					found += n
				}
				skipping, carry = true, 0
			} else {
				nb := make([]byte, min(2*len(s.buf), grepMaxLine))
				copy(nb, s.buf[:carry])
				s.buf = nb
			}
		}
		n, err := f.Read(s.buf[carry:])
		if n < 0 {
			n = 0
		}
		eof := n == 0
		data := s.buf[:carry+n]
		if bytes.IndexByte(data[carry:], 0) >= 0 {
			return out[:start], 0, true, nil
		}
		if skipping {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if eof || err != nil {
					break
				}
				carry = 0
				continue
			}
			// The overlong line ends here; go on after it.
			skipping = false
			lines++
			carry = copy(s.buf, data[i+1:])
			if eof || err != nil {
				data, eof = s.buf[:carry], true
			} else {
				continue
			}
		}
		end := len(data)
		if !eof {
			end = bytes.LastIndexByte(data, '\n') + 1
		}
		if end > 0 {
			var n int
			out, n = s.scan(data[:end], path, lines, max-found, out)
			found += n
			if !eof {
				lines += bytes.Count(data[:end], []byte{'\n'})
			}
		}
		if eof || err != nil {
			break
		}
		carry = copy(s.buf, data[end:])
	}
	return out, found, false, nil
}

// scan finds up to max matching lines in region (whole lines; the last may
// lack its newline) whose first line is number lines+1. It appends them to
// out while out holds fewer than s.keep, and returns how many it found.
// It picks how candidate lines are found; the loops that find them are
// regionLines' methods, each whole (no call through a func value per line).
func (s *searcher) scan(region []byte, path string, lines, max int, out []grepMatch) ([]grepMatch, int) {
	m := s.m
	r := regionLines{region: region, path: path, keep: s.keep, out: out, countedLines: lines}
	dfa := s.dfa
	if dfa != nil && dfa.tooBig() {
		dfa = nil
	}
	useFold := m.fold != nil && !(m.foldUnsafe && hasFoldTraps(region))
	var n int
	switch {
	case m.lit == nil && m.req == nil && !useFold && dfa != nil:
		// No literal to look for (or, with (?i), a region where the
		// literal may be spelt with the Kelvin sign or the long s): the
		// automaton reads every line.
		n = dfa.scanLines(region, max, r.emit)
	case m.lit != nil || m.req != nil || useFold:
		hay, needle := region, m.lit
		if needle == nil {
			needle = m.req
		}
		if useFold {
			s.lower = lowerASCIIInto(s.lower, region)
			hay, needle = s.lower, m.fold
		}
		n = r.scanNeedle(hay, needle, m.lit != nil, dfa, m.re, max)
	case m.reM != nil:
		n = r.scanCandidates(m.reM, m.re, max)
	default:
		n = r.scanEachLine(m.re, max)
	}
	return r.out, n
}

// hasFoldTraps reports whether region holds the Kelvin sign or the long s,
// which (?i) matches as k and s: a lower-cased ASCII copy would miss them.
func hasFoldTraps(region []byte) bool {
	return bytes.Contains(region, []byte("\u212a")) || bytes.Contains(region, []byte("\u017f"))
}

// regionLines is the state of one scan: the region searched, the matches
// kept so far, and the line number of region[counted] (line numbers are
// counted only up to a kept match, never for the whole region).
type regionLines struct {
	region       []byte
	path         string
	keep         int // out holds at most keep matches; the rest are counted by the caller
	out          []grepMatch
	counted      int // an offset in region
	countedLines int // the lines before region[counted], the file's whole
}

// emit keeps the line region[ls:le] as a match while out holds fewer than
// keep.
func (r *regionLines) emit(ls, le int) {
	if len(r.out) >= r.keep {
		return // counted by the caller (n), not kept
	}
	r.countedLines += bytes.Count(r.region[r.counted:ls], []byte{'\n'})
	r.counted = ls
	text := r.region[ls:le]
	if len(text) > 0 && text[len(text)-1] == '\r' {
		text = text[:len(text)-1]
	}
	if len(text) > tools.MaxLineBytes {
		text = text[:tools.MaxLineBytes+1] // TruncateLine cuts it properly later
	}
	r.out = append(r.out, grepMatch{file: r.path, line: r.countedLines + 1, text: string(text)})
}

// lineAt is the start and end (before its "\n") of the line of region
// holding region[i].
func lineAt(region []byte, i int) (int, int) {
	ls := bytes.LastIndexByte(region[:i], '\n') + 1
	le := bytes.IndexByte(region[i:], '\n')
	if le < 0 {
		le = len(region)
	} else {
		le += i
	}
	return ls, le
}

// scanNeedle finds the lines of the region that hold needle (looked for in
// hay: the region, or its lower-cased copy) and match the pattern: by
// dfa if there is one, else by re; exact says needle is the whole pattern,
// so a line holding it matches.
func (r *regionLines) scanNeedle(hay, needle []byte, exact bool, dfa *lineDFA, re *regexp.Regexp, max int) int {
	n := 0
	for pos := 0; pos < len(r.region) && n < max; {
		i := bytes.Index(hay[pos:], needle)
		if i < 0 {
			break
		}
		ls, le := lineAt(r.region, pos+i)
		if exact || lineMatches(dfa, re, trimCR(r.region[ls:le])) {
			r.emit(ls, le)
			n++
		}
		pos = le + 1
	}
	return n
}

// lineMatches reports whether a candidate line matches the whole pattern.
func lineMatches(dfa *lineDFA, re *regexp.Regexp, line []byte) bool {
	if dfa != nil {
		return dfa.matchLine(line)
	}
	return re.Match(line)
}

// scanCandidates finds candidate lines with reM, the (?m) form of the
// pattern run over the whole region, and keeps those re matches.
func (r *regionLines) scanCandidates(reM, re *regexp.Regexp, max int) int {
	n := 0
	for pos := 0; pos < len(r.region) && n < max; {
		loc := reM.FindIndex(r.region[pos:])
		if loc == nil {
			break
		}
		ls, le := lineAt(r.region, pos+loc[0])
		if re.Match(trimCR(r.region[ls:le])) {
			r.emit(ls, le)
			n++
		}
		pos = le + 1
	}
	return n
}

// scanEachLine matches re against every line of the region.
func (r *regionLines) scanEachLine(re *regexp.Regexp, max int) int {
	n := 0
	for pos := 0; pos < len(r.region) && n < max; {
		le := bytes.IndexByte(r.region[pos:], '\n')
		if le < 0 {
			le = len(r.region)
		} else {
			le += pos
		}
		if re.Match(trimCR(r.region[pos:le])) {
			r.emit(pos, le)
			n++
		}
		pos = le + 1
	}
	return n
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}
