package builtin

import (
	"bytes"
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// lineDFA answers "does this line contain a match of the pattern?", the one
// question grep asks of a line, with a lazily built deterministic automaton
// over the pattern's compiled program (regexp/syntax): each byte of the
// text costs one table lookup once the states it passes through are built.
// Go's regexp has no DFA; on a pattern with no literal to look for first
// its NFA scanned about 30 MB/s, five times slower than ripgrep.
//
// Whether a line contains a match does not depend on which match an engine
// prefers, so the answer is regexp's (FuzzLineDFA checks it): the same
// program, runes decoded as regexp decodes them (a byte of malformed UTF-8
// is U+FFFD), the empty-width assertions (^ $ \A \z \b \B) judged from the
// runes on both sides as regexp judges them. A DFA state is the set of
// program positions waiting for the next rune, with the class of the rune
// before them (start of line, word character, other), which is all the
// assertions look at.
//
// A lineDFA is used by one goroutine. It keeps at most dfaMaxStates
// states; past that it starts again with an empty cache, and a pattern
// that keeps filling it (rare: a huge counted repetition) is reported by
// tooBig and searched with regexp instead.
type lineDFA struct {
	prog   *syntax.Prog
	states []*dfaState
	index  map[string]int32 // state key -> position in states
	start  int32
	resets int

	// scratch for building states
	stack   []uint32
	onStack []bool   // positions pushed during close
	marked  []uint32 // the positions set in onStack
	closure []uint32
	next    []uint32
	seen    []bool
	key     []byte
}

// dfaState is a state of the automaton. Its transitions are filled in as
// the text needs them.
type dfaState struct {
	pcs   []uint32 // program positions waiting for a rune (before empty-width closure)
	prev  int8     // the rune before: classStart, classWord or classOther
	ascii [128]int32
	wide  map[rune]int32
	end   int8 // does the line match if it ends here: 0 unknown, 1 yes, 2 no
}

const (
	classStart = iota
	classWord
	classOther

	dfaUnknown = int32(-1)
	dfaMatch   = int32(-2) // a match ends before the rune: the line matches

	dfaMaxStates = 2000
)

// newLineDFA compiles pattern for lineDFA, or returns nil when it cannot
// be (it then is searched with regexp).
func newLineDFA(pattern string) *lineDFA {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil
	}
	d := &lineDFA{prog: prog}
	d.reset()
	return d
}

func (d *lineDFA) reset() {
	n := len(d.prog.Inst)
	d.states, d.index = d.states[:0], map[string]int32{}
	if d.onStack == nil {
		d.onStack, d.seen = make([]bool, n), make([]bool, n)
	}
	d.start = d.intern([]uint32{uint32(d.prog.Start)}, classStart)
}

// tooBig reports whether the cache was reset so often that the automaton
// is not worth it for this pattern.
func (d *lineDFA) tooBig() bool { return d.resets > 8 }

func (d *lineDFA) intern(pcs []uint32, prev int8) int32 {
	d.key = d.key[:0]
	d.key = append(d.key, byte(prev))
	for _, pc := range pcs {
		d.key = append(d.key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24))
	}
	if i, ok := d.index[string(d.key)]; ok {
		return i
	}
	s := &dfaState{pcs: slices.Clone(pcs), prev: prev}
	for i := range s.ascii {
		s.ascii[i] = dfaUnknown
	}
	i := int32(len(d.states))
	d.states = append(d.states, s)
	d.index[string(d.key)] = i
	return i
}

// prevRune stands for a class of runes in syntax.EmptyOpContext.
func prevRune(class int8) rune {
	switch class {
	case classStart:
		return -1
	case classWord:
		return 'a'
	}
	return ' '
}

func classOf(r rune) int8 {
	if syntax.IsWordChar(r) {
		return classWord
	}
	return classOther
}

// close computes the positions reachable from s.pcs without consuming a
// rune, given the empty-width context ctx, into d.closure. It reports
// whether a match is among them.
func (d *lineDFA) close(s *dfaState, ctx syntax.EmptyOp) bool {
	d.closure = d.closure[:0]
	d.stack = append(d.stack[:0], s.pcs...)
	for _, pc := range s.pcs {
		d.onStack[pc] = true
	}
	d.marked = append(d.marked[:0], s.pcs...)
	matched := false
	for len(d.stack) > 0 {
		pc := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		in := &d.prog.Inst[pc]
		push := func(pc uint32) {
			if !d.onStack[pc] {
				d.onStack[pc] = true
				d.marked = append(d.marked, pc)
				d.stack = append(d.stack, pc)
			}
		}
		switch in.Op {
		case syntax.InstMatch:
			matched = true
		case syntax.InstAlt, syntax.InstAltMatch:
			push(in.Out)
			push(in.Arg)
		case syntax.InstCapture, syntax.InstNop:
			push(in.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^ctx == 0 {
				push(in.Out)
			}
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			d.closure = append(d.closure, pc)
		}
	}
	for _, pc := range d.marked {
		d.onStack[pc] = false
	}
	d.marked = d.marked[:0]
	return matched
}

func matchRune(in *syntax.Inst, r rune) bool {
	switch in.Op {
	case syntax.InstRune1:
		return r == in.Rune[0]
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return in.MatchRune(r)
}

// step returns the state after rune r from state i, or dfaMatch.
func (d *lineDFA) step(i int32, r rune) int32 {
	s := d.states[i]
	if d.close(s, syntax.EmptyOpContext(prevRune(s.prev), r)) {
		return dfaMatch
	}
	d.next = d.next[:0]
	add := func(pc uint32) {
		if !d.seen[pc] {
			d.seen[pc] = true
			d.next = append(d.next, pc)
		}
	}
	for _, pc := range d.closure {
		if in := &d.prog.Inst[pc]; matchRune(in, r) {
			add(in.Out)
		}
	}
	add(uint32(d.prog.Start)) // unanchored: a match may start at the next position
	for _, pc := range d.next {
		d.seen[pc] = false
	}
	slices.Sort(d.next)
	if len(d.states) >= dfaMaxStates {
		d.resets++
		pcs := slices.Clone(d.next)
		d.reset()
		return d.intern(pcs, classOf(r))
	}
	return d.intern(d.next, classOf(r))
}

// endMatch reports whether a line ending in state i matches.
func (d *lineDFA) endMatch(i int32) bool {
	s := d.states[i]
	if s.end == 0 {
		s.end = 2
		if d.close(s, syntax.EmptyOpContext(prevRune(s.prev), -1)) {
			s.end = 1
		}
	}
	return s.end == 1
}

// matchLine reports whether line (without its "\n") contains a match.
func (d *lineDFA) matchLine(line []byte) bool {
	st := d.start
	for i := 0; i < len(line); {
		c := line[i]
		var t int32
		if c < utf8.RuneSelf {
			s := d.states[st]
			if t = s.ascii[c]; t == dfaUnknown {
				// After a reset s is no longer in the table: the
				// transition stored in it is never read.
				t = d.step(st, rune(c))
				s.ascii[c] = t
			}
			i++
		} else {
			r, size := utf8.DecodeRune(line[i:])
			s := d.states[st]
			var ok bool
			if t, ok = s.wide[r]; !ok {
				t = d.step(st, r)
				if s.wide == nil {
					s.wide = map[rune]int32{}
				}
				s.wide[r] = t
			}
			i += size
		}
		if t == dfaMatch {
			return true
		}
		st = t
	}
	return d.endMatch(st)
}

// scanLines calls emit with the start and end of each line of region that
// contains a match (without its "\n", and without a "\r" before it, as
// grep matches lines), up to max lines, and returns how many.
func (d *lineDFA) scanLines(region []byte, max int, emit func(ls, le int)) int {
	n := 0
	for pos := 0; pos < len(region) && n < max; {
		le := bytes.IndexByte(region[pos:], '\n')
		if le < 0 {
			le = len(region)
		} else {
			le += pos
		}
		line := region[pos:le]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if d.matchLine(line) {
			emit(pos, le)
			n++
		}
		pos = le + 1
	}
	return n
}
