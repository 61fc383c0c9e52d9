package shell

import (
	"strings"
)

// env parses env's options, assignments and -S strings and returns the
// command words.
func (a *analysis) env(args []word, depth int) []word {
	e := &envRead{a: a, args: args}
	for e.i < len(e.args) && e.next() {
	}
	if e.i > len(e.args) {
		return nil
	}
	return e.args[e.i:]
}

// envRead walks env's words; -S splices the words of its string in.
type envRead struct {
	a       *analysis
	args    []word
	i       int
	splices int
}

// next reads the word at e.i; false when it is the command.
func (e *envRead) next() bool {
	a, w := e.a, e.args[e.i]
	switch {
	case w.eq >= 0:
		a.assignment(w)
	case strings.IndexByte(w.val, '=') > 0 && !strings.HasPrefix(w.val, "-"):
		// env takes any NAME=VALUE, also names bash would not
		// (BASH_FUNC_ls%%=() { ...; } defines a function for bash).
		a.suspect(w)
	case !w.lit && strings.HasPrefix(w.val, "-"):
		a.suspectAll(e.args)
	case !w.lit:
		return false
	case w.val == "-":
	case w.val == "--":
		e.i++
		return false
	case len(w.val) < 2 || w.val[0] != '-':
		return false
	case strings.HasPrefix(w.val, "--"):
		e.i++
		e.long(w.val)
		return true
	default:
		e.i++
		e.short(w.val)
		return true
	}
	e.i++
	return true
}

// split splices the words of an -S string in place of what was read.
func (e *envRead) split(v word) {
	e.splices++
	if !v.lit || e.splices > maxWrappers {
		e.a.unverify()
		e.args, e.i = nil, 0
		return
	}
	ws, ok := envSplit(v.val)
	if !ok {
		e.a.suspectAll([]word{v})
	}
	e.args = append(ws, e.args[e.i:]...)
	e.i = 0
}

// value is the next word, the value of an option.
func (e *envRead) value() (word, bool) {
	if e.i < len(e.args) {
		e.i++
		return e.args[e.i-1], true
	}
	e.i++
	return word{}, false
}

func (e *envRead) long(s string) {
	name, val, hasEq := strings.Cut(s[2:], "=")
	full, kind, known := lookupLong(envLong, name)
	switch {
	case !known:
		e.a.suspectAll(e.args)
	case full == "split-string" && hasEq:
		e.split(word{val: val, lit: true, eq: -1})
	case full == "split-string":
		if e.i < len(e.args) {
			v, _ := e.value()
			e.split(v)
		}
	case kind == 1 && !hasEq:
		if v, ok := e.value(); ok {
			e.a.suspect(v)
		}
	}
}

func (e *envRead) short(s string) {
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case 'i', '0', 'v':
		case 'u', 'C', 'a':
			if j+1 == len(s) {
				if v, ok := e.value(); ok {
					e.a.suspect(v)
				}
			}
			return
		case 'S':
			if j+1 < len(s) {
				e.split(word{val: s[j+1:], lit: true, eq: -1})
			} else if e.i < len(e.args) {
				v, _ := e.value()
				e.split(v)
			}
			return
		default:
			e.a.suspectAll(e.args)
		}
	}
}

var envLong = map[string]int{"ignore-environment": 0, "null": 0, "unset": 1, "chdir": 1, "split-string": 1,
	"argv0": 1, "block-signal": 2, "default-signal": 2, "ignore-signal": 2, "list-signal-handling": 0,
	"debug": 0, "help": 0, "version": 0}

// envSplit splits an env -S string the way env does: blanks separate,
// '...' and "..." quote, backslash escapes (\_ is a blank outside quotes,
// \c ends the string), ${NAME} expands, '#' starts a comment. false when
// env would reject the string.
func envSplit(s string) ([]word, bool) {
	e := &envSplitter{s: s, ok: true, b: wordBuf{quoted: -1}}
	for e.i < len(s) && !e.stop {
		e.next()
	}
	if !e.comment {
		e.end()
	}
	return e.out, e.ok
}

type envSplitter struct {
	s       string
	i       int
	out     []word
	b       wordBuf
	in      bool // a word is open
	ok      bool
	stop    bool // \c or a comment ended the string
	comment bool
}

func (e *envSplitter) end() {
	if e.in {
		e.out = append(e.out, e.b.word())
		e.b = wordBuf{quoted: -1}
		e.in = false
	}
}

func (e *envSplitter) put(c byte) { e.b.byte1(c); e.in = true }

// next reads what starts at e.i outside quotes.
func (e *envSplitter) next() {
	s := e.s
	c := s[e.i]
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
		e.end()
		e.i++
	case c == '#' && !e.in:
		e.stop, e.comment = true, true
	case c == '\\' && e.i+1 < len(s):
		e.escape(s[e.i+1], false)
		e.i += 2
	case c == '\'':
		e.squote()
	case c == '"':
		e.dquote()
	case c == '$':
		e.expand()
	default:
		e.put(c)
		e.i++
	}
}

// envEscapes are the escapes env -S decodes to one byte.
var envEscapes = map[byte]byte{'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\',
	'\'': '\'', '"': '"', '#': '#', '$': '$', ' ': ' '}

// escape decodes \c; \c ends the string.
func (e *envSplitter) escape(c byte, quoted bool) {
	switch {
	case c == 'c':
		e.end()
		e.stop = true
	case c == '_' && quoted:
		e.put(' ')
	case c == '_':
		e.end()
	default:
		v, known := envEscapes[c]
		if !known {
			e.ok = false
			v = c
		}
		e.put(v)
	}
}

// expand reads ${NAME} at e.i.
func (e *envSplitter) expand() {
	s, i := e.s, e.i
	if i+1 < len(s) && s[i+1] == '{' {
		if j := strings.IndexByte(s[i:], '}'); j > 0 {
			e.b.expansion(s[i:i+j+1], true, false)
			e.b.refs = append(e.b.refs, s[i+2:i+j])
			e.in = true
			e.i = i + j + 1
			return
		}
	}
	e.ok = false
	e.put('$')
	e.i = i + 1
}

func (e *envSplitter) squote() {
	s := e.s
	e.in = true
	e.i++
	for e.i < len(s) && s[e.i] != '\'' {
		if s[e.i] == '\\' && e.i+1 < len(s) && (s[e.i+1] == '\\' || s[e.i+1] == '\'') {
			e.i++
		}
		e.put(s[e.i])
		e.i++
	}
	e.ok = e.ok && e.i < len(s)
	e.i++
}

func (e *envSplitter) dquote() {
	s := e.s
	e.in = true
	e.i++
	for e.i < len(s) && s[e.i] != '"' && !e.stop {
		switch {
		case s[e.i] == '\\' && e.i+1 < len(s):
			e.escape(s[e.i+1], true)
			e.i += 2
		case s[e.i] == '$':
			e.expand()
		default:
			e.put(s[e.i])
			e.i++
		}
	}
	if e.stop {
		return
	}
	e.ok = e.ok && e.i < len(s)
	e.i++
}

// The approve side of env: -S and --split-string make a command of a
// string, -C and --chdir run it elsewhere (git there reads another
// repository's configuration, which may run programs), and NAME=VALUE
// entries the rule does not spell may name a variable some program runs
// (PAGER, GIT_SSH_COMMAND, LD_PRELOAD, ...).
var envSpec = &approveSpec{wrapper: true, assigns: true, opts: opts(`-i -0 -u= -v --ignore-environment
	--null --unset= --debug !-C= !--chdir= !-S= !--split-string= !-a= !--argv0=`)}
