package frontmatter

// A Lua 5.1 pattern matcher (the algorithm of lstrlib.c, written afresh in
// Go) that checks the deadline as it works. gopher-lua's own matcher never
// looks at the context, so string.find(string.rep("a", 30), string.rep("a*",
// 30) .. "b") would run for hours inside one VM instruction.

const (
	maxCaptures = 32
	// maxMatchDepth bounds the matcher's recursion (Lua 5.2's MAXCCALLS).
	maxMatchDepth = 200
	// tickMask: the deadline is checked every tickMask+1 steps.
	tickMask = 1023

	capUnfinished = -1
	capPosition   = -2
)

// matchError is raised (panicked) by the matcher for a malformed pattern; the
// caller turns it into a Lua error.
type matchError string

type capture struct {
	init, len int
}

type matcher struct {
	src, pat string
	level    int
	capture  [maxCaptures]capture
	depth    int
	steps    int
	// check is called every tickMask+1 steps; it raises a Lua error when the
	// deadline has passed.
	check func()
}

func (m *matcher) reset() {
	m.level = 0
	m.depth = 0
}

func (m *matcher) tick() {
	m.steps++
	if m.steps&tickMask == 0 && m.check != nil {
		m.check()
	}
}

// p returns the pattern byte at i, or 0 past the end (C's terminating NUL).
func (m *matcher) p(i int) byte {
	if i < len(m.pat) {
		return m.pat[i]
	}
	return 0
}

// s returns the subject byte at i, or 0 past the end.
func (m *matcher) s(i int) byte {
	if i < len(m.src) {
		return m.src[i]
	}
	return 0
}

func (m *matcher) classEnd(p int) int {
	c := m.p(p)
	p++
	switch c {
	case '%':
		if p >= len(m.pat) {
			panic(matchError("malformed pattern (ends with '%')"))
		}
		return p + 1
	case '[':
		if m.p(p) == '^' {
			p++
		}
		for { // look for a ']'; the first character is never the end
			if p >= len(m.pat) {
				panic(matchError("malformed pattern (missing ']')"))
			}
			c := m.pat[p]
			p++
			if c == '%' && p < len(m.pat) {
				p++
			}
			if m.p(p) == ']' {
				break
			}
		}
		return p + 1
	default:
		return p
	}
}

func isalpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isdigit(c byte) bool { return c >= '0' && c <= '9' }
func islower(c byte) bool { return c >= 'a' && c <= 'z' }
func isupper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isspace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func iscntrl(c byte) bool { return c < 32 || c == 127 }
func ispunct(c byte) bool { return c > 32 && c < 127 && !isalpha(c) && !isdigit(c) }
func isxdigit(c byte) bool {
	return isdigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func matchClass(c, cl byte) bool {
	var res bool
	lower := cl | 0x20
	switch lower {
	case 'a':
		res = isalpha(c)
	case 'c':
		res = iscntrl(c)
	case 'd':
		res = isdigit(c)
	case 'l':
		res = islower(c)
	case 'p':
		res = ispunct(c)
	case 's':
		res = isspace(c)
	case 'u':
		res = isupper(c)
	case 'w':
		res = isalpha(c) || isdigit(c)
	case 'x':
		res = isxdigit(c)
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if isupper(cl) {
		return !res
	}
	return res
}

// matchBracketClass matches c against the set between p ('[') and ec (']').
func (m *matcher) matchBracketClass(c byte, p, ec int) bool {
	sig := true
	if m.p(p+1) == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		m.tick()
		if m.p(p) == '%' {
			p++
			if matchClass(c, m.p(p)) {
				return sig
			}
		} else if m.p(p+1) == '-' && p+2 < ec {
			p += 2
			if m.p(p-2) <= c && c <= m.p(p) {
				return sig
			}
		} else if m.p(p) == c {
			return sig
		}
	}
	return !sig
}

func (m *matcher) singleMatch(si, p, ep int) bool {
	if si >= len(m.src) {
		return false
	}
	c := m.src[si]
	switch m.p(p) {
	case '.':
		return true
	case '%':
		return matchClass(c, m.p(p+1))
	case '[':
		return m.matchBracketClass(c, p, ep-1)
	default:
		return m.p(p) == c
	}
}

// match returns the end of the match of pattern position p at subject
// position si, or -1.
func (m *matcher) match(si, p int) int {
	m.depth++
	if m.depth > maxMatchDepth {
		panic(matchError("pattern too complex"))
	}
	defer func() { m.depth-- }()
	for {
		m.tick()
		if p >= len(m.pat) {
			return si
		}
		switch m.pat[p] {
		case '(':
			if m.p(p+1) == ')' {
				return m.startCapture(si, p+2, capPosition)
			}
			return m.startCapture(si, p+1, capUnfinished)
		case ')':
			return m.endCapture(si, p+1)
		case '%':
			switch m.p(p + 1) {
			case 'b':
				si = m.matchBalance(si, p+2)
				if si == -1 {
					return -1
				}
				p += 4
				continue
			case 'f':
				p += 2
				if m.p(p) != '[' {
					panic(matchError("missing '[' after '%f' in pattern"))
				}
				ep := m.classEnd(p)
				var prev byte
				if si > 0 {
					prev = m.src[si-1]
				}
				if m.matchBracketClass(prev, p, ep-1) || !m.matchBracketClass(m.s(si), p, ep-1) {
					return -1
				}
				p = ep
				continue
			default:
				if isdigit(m.p(p + 1)) {
					si = m.matchCapture(si, m.p(p+1))
					if si == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		case '$':
			if p+1 == len(m.pat) {
				if si == len(m.src) {
					return si
				}
				return -1
			}
		}
		// default: a single character class, maybe with a quantifier
		ep := m.classEnd(p)
		ok := m.singleMatch(si, p, ep)
		switch m.p(ep) {
		case '?':
			if ok {
				if res := m.match(si+1, ep+1); res != -1 {
					return res
				}
			}
			p = ep + 1
			continue
		case '*':
			return m.maxExpand(si, p, ep)
		case '+':
			if !ok {
				return -1
			}
			return m.maxExpand(si+1, p, ep)
		case '-':
			return m.minExpand(si, p, ep)
		default:
			if !ok {
				return -1
			}
			si++
			p = ep
		}
	}
}

func (m *matcher) maxExpand(si, p, ep int) int {
	i := 0
	for m.singleMatch(si+i, p, ep) {
		m.tick()
		i++
	}
	for ; i >= 0; i-- {
		if res := m.match(si+i, ep+1); res != -1 {
			return res
		}
	}
	return -1
}

func (m *matcher) minExpand(si, p, ep int) int {
	for {
		if res := m.match(si, ep+1); res != -1 {
			return res
		}
		if !m.singleMatch(si, p, ep) {
			return -1
		}
		si++
	}
}

func (m *matcher) startCapture(si, p, what int) int {
	if m.level >= maxCaptures {
		panic(matchError("too many captures"))
	}
	m.capture[m.level] = capture{init: si, len: what}
	m.level++
	res := m.match(si, p)
	if res == -1 {
		m.level--
	}
	return res
}

func (m *matcher) endCapture(si, p int) int {
	l := m.captureToClose()
	m.capture[l].len = si - m.capture[l].init
	res := m.match(si, p)
	if res == -1 {
		m.capture[l].len = capUnfinished
	}
	return res
}

func (m *matcher) captureToClose() int {
	for l := m.level - 1; l >= 0; l-- {
		if m.capture[l].len == capUnfinished {
			return l
		}
	}
	panic(matchError("invalid pattern capture"))
}

func (m *matcher) matchBalance(si, p int) int {
	if p+1 >= len(m.pat) {
		panic(matchError("unbalanced pattern"))
	}
	if si >= len(m.src) || m.src[si] != m.pat[p] {
		return -1
	}
	b, e := m.pat[p], m.pat[p+1]
	cont := 1
	for si++; si < len(m.src); si++ {
		m.tick()
		switch m.src[si] {
		case e:
			cont--
			if cont == 0 {
				return si + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

func (m *matcher) matchCapture(si int, l byte) int {
	idx := m.checkCapture(l)
	n := m.capture[idx].len
	init := m.capture[idx].init
	if len(m.src)-si >= n && m.src[init:init+n] == m.src[si:si+n] {
		return si + n
	}
	return -1
}

func (m *matcher) checkCapture(l byte) int {
	idx := int(l) - '1'
	if idx < 0 || idx >= m.level || m.capture[idx].len == capUnfinished {
		panic(matchError("invalid capture index"))
	}
	return idx
}

// captureValue is one capture: a substring, or a 1-based position when pos is
// set.
type captureValue struct {
	str   string
	pos   int
	isPos bool
}

// getCapture returns capture i of a match from s to e (capture 0 is the whole
// match when the pattern has no captures).
func (m *matcher) getCapture(i, s, e int) captureValue {
	if i >= m.level {
		if i == 0 {
			return captureValue{str: m.src[s:e]}
		}
		panic(matchError("invalid capture index"))
	}
	c := m.capture[i]
	switch c.len {
	case capUnfinished:
		panic(matchError("unfinished capture"))
	case capPosition:
		return captureValue{pos: c.init + 1, isPos: true}
	}
	return captureValue{str: m.src[c.init : c.init+c.len]}
}
