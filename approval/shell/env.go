package shell

import (
	"strings"
)

// env parses env's options, assignments and -S strings and returns the
// command words.
func (a *analysis) env(args []word, depth int) []word {
	i := 0
	for splices := 0; i < len(args); {
		w := args[i]
		if w.eq >= 0 {
			a.assignment(w)
			i++
			continue
		}
		if e := strings.IndexByte(w.val, '='); e > 0 && !strings.HasPrefix(w.val, "-") {
			// env takes any NAME=VALUE, also names bash would not
			// (BASH_FUNC_ls%%=() { ...; } defines a function for bash).
			a.suspect(w)
			i++
			continue
		}
		if !w.lit {
			if strings.HasPrefix(w.val, "-") {
				a.suspectAll(args)
				i++
				continue
			}
			break
		}
		s := w.val
		if s == "-" {
			i++
			continue
		}
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		split := func(v word) {
			splices++
			if !v.lit || splices > maxWrappers {
				a.unverify()
				args, i = nil, 0
				return
			}
			ws, ok := envSplit(v.val)
			if !ok {
				a.suspectAll([]word{v})
			}
			args = append(ws, args[i:]...)
			i = 0
		}
		if strings.HasPrefix(s, "--") {
			name, val, hasEq := strings.Cut(s[2:], "=")
			full, kind, known := lookupLong(envLong, name)
			switch {
			case !known:
				a.suspectAll(args)
			case full == "split-string":
				if hasEq {
					split(word{val: val, lit: true, eq: -1})
				} else if i < len(args) {
					i++
					split(args[i-1])
				}
			case kind == 1 && !hasEq:
				if i < len(args) {
					a.suspect(args[i])
				}
				i++
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case 'i', '0', 'v':
			case 'u', 'C', 'a':
				if j+1 == len(s) {
					if i < len(args) {
						a.suspect(args[i])
					}
					i++
				}
				j = len(s)
			case 'S':
				if j+1 < len(s) {
					split(word{val: s[j+1:], lit: true, eq: -1})
				} else if i < len(args) {
					i++
					split(args[i-1])
				}
				j = len(s)
			default:
				a.suspectAll(args)
			}
		}
	}
	if i > len(args) {
		return nil
	}
	return args[i:]
}

var envLong = map[string]int{"ignore-environment": 0, "null": 0, "unset": 1, "chdir": 1, "split-string": 1,
	"argv0": 1, "block-signal": 2, "default-signal": 2, "ignore-signal": 2, "list-signal-handling": 0,
	"debug": 0, "help": 0, "version": 0}

// envSplit splits an env -S string the way env does: blanks separate,
// '...' and "..." quote, backslash escapes (\_ is a blank outside quotes,
// \c ends the string), ${NAME} expands, '#' starts a comment. false when
// env would reject the string.
func envSplit(s string) ([]word, bool) {
	var out []word
	var b wordBuf
	b.quoted = -1
	in := false
	ok := true
	end := func() {
		if in {
			out = append(out, b.word())
			b = wordBuf{quoted: -1}
			in = false
		}
	}
	put := func(c byte) { b.byte1(c); in = true }
	escape := func(c byte, quoted bool) bool { // false: stop
		switch c {
		case 'c':
			return false
		case '_':
			if quoted {
				put(' ')
			} else {
				end()
			}
		case 'f':
			put('\f')
		case 'n':
			put('\n')
		case 'r':
			put('\r')
		case 't':
			put('\t')
		case 'v':
			put('\v')
		case '\\', '\'', '"', '#', '$', ' ':
			put(c)
		default:
			ok = false
			put(c)
		}
		return true
	}
	expand := func(i int) int { // at '$'; returns the index after
		if i+1 < len(s) && s[i+1] == '{' {
			if j := strings.IndexByte(s[i:], '}'); j > 0 {
				name := s[i+2 : i+j]
				b.expansion(s[i:i+j+1], true, false)
				b.refs = append(b.refs, name)
				in = true
				return i + j + 1
			}
		}
		ok = false
		put('$')
		return i + 1
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			end()
			i++
		case c == '#' && !in:
			return out, ok
		case c == '\\' && i+1 < len(s):
			if !escape(s[i+1], false) {
				end()
				return out, ok
			}
			i += 2
		case c == '\'':
			in = true
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '\'') {
					i++
				}
				put(s[i])
				i++
			}
			if i >= len(s) {
				ok = false
			}
			i++
		case c == '"':
			in = true
			i++
			for i < len(s) && s[i] != '"' {
				switch {
				case s[i] == '\\' && i+1 < len(s):
					if !escape(s[i+1], true) {
						end()
						return out, ok
					}
					i += 2
				case s[i] == '$':
					i = expand(i)
				default:
					put(s[i])
					i++
				}
			}
			if i >= len(s) {
				ok = false
			}
			i++
		case c == '$':
			i = expand(i)
		default:
			put(c)
			i++
		}
	}
	end()
	return out, ok
}

// The approve side of env: -S and --split-string make a command of a
// string, and NAME=VALUE entries the rule does not spell may name a
// variable some program runs (PAGER, GIT_SSH_COMMAND, LD_PRELOAD, ...).
var envSpec = &approveSpec{wrapper: true, assigns: true, opts: opts(`-i -0 -u= -C= -v --ignore-environment
	--null --unset= --chdir= --debug`)}
