package shell

import (
	"strings"
)

// sed: the e command and the e flag of s run commands; scripts from files
// cannot be read. Options are looked for among all arguments (GNU sed
// permutes them: "sed p -e '1e cmd' f" runs cmd).
func (a *analysis) sed(args []word) {
	var scripts, operands []word
	sandbox := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		s := w.val
		if !w.lit || len(s) < 2 || s[0] != '-' {
			operands = append(operands, w)
			continue
		}
		if s == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		next := func() word {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return word{}
		}
		if strings.HasPrefix(s, "--") {
			name, val, hasEq := strings.Cut(s[2:], "=")
			full, kind, known := lookupLong(sedLong, name)
			switch {
			case !known:
				a.unverify()
			case full == "expression":
				if hasEq {
					scripts = append(scripts, word{val: val, lit: true, eq: -1})
				} else {
					scripts = append(scripts, next())
				}
			case full == "file":
				a.unverify()
			case full == "sandbox":
				sandbox = true
			case kind == 1 && !hasEq:
				next()
			}
			continue
		}
	cluster:
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case 'n', 'r', 'E', 's', 'u', 'z':
			case 'i':
				break cluster // -i[SUFFIX]
			case 'e', 'f', 'l':
				var v word
				if j+1 < len(s) {
					v = word{val: s[j+1:], lit: true, eq: -1}
				} else {
					v = next()
				}
				switch s[j] {
				case 'e':
					scripts = append(scripts, v)
				case 'f':
					a.unverify()
				}
				break cluster
			default:
				a.unverify()
			}
		}
	}
	if len(scripts) == 0 && len(operands) > 0 {
		scripts = operands[:1]
	}
	if sandbox {
		return
	}
	for _, w := range scripts {
		if sedRuns(a.codeText(w)) {
			a.unverify()
		}
	}
}

var sedLong = map[string]int{"quiet": 0, "silent": 0, "debug": 0, "expression": 1, "file": 1,
	"follow-symlinks": 0, "in-place": 2, "line-length": 1, "null-data": 0, "zero-terminated": 0,
	"posix": 0, "regexp-extended": 0, "separate": 0, "sandbox": 0, "unbuffered": 0, "binary": 0,
	"help": 0, "version": 0}

// sedRuns reports whether a sed script may run a command: an e command, an
// e flag on s, or anything it cannot parse.
func sedRuns(s string) bool {
	i := 0
	skipBlank := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	toEOL := func() {
		for i < len(s) && s[i] != '\n' {
			i++
		}
	}
	// delimited reads text up to the unescaped delimiter d.
	delimited := func(d byte) bool {
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case d:
				i++
				return true
			case '\n':
				if d != '\n' {
					return false
				}
			}
			i++
		}
		return false
	}
	address := func() bool {
		switch {
		case i < len(s) && s[i] == '$':
			i++
		case i < len(s) && '0' <= s[i] && s[i] <= '9':
			for i < len(s) && ('0' <= s[i] && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < len(s) && s[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < len(s) && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	for i < len(s) {
		skipBlank()
		if i >= len(s) {
			break
		}
		switch s[i] {
		case '\n', ';', '}', '{':
			i++
			continue
		case '#':
			toEOL()
			continue
		}
		if !address() {
			return true
		}
		skipBlank()
		if i < len(s) && s[i] == ',' {
			i++
			skipBlank()
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				return true
			}
			skipBlank()
		}
		for i < len(s) && (s[i] == '!' || s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return true
		}
		c := s[i]
		i++
		switch c {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			skipBlank()
			for i < len(s) && '0' <= s[i] && s[i] <= '9' {
				i++
			}
		case ':', 'b', 't', 'T', 'v':
			for i < len(s) && s[i] != '\n' && s[i] != ';' {
				i++
			}
		case 'a', 'i', 'c':
			// text to the end of the line; a trailing backslash continues it
			for i < len(s) && s[i] != '\n' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		case 'r', 'R', 'w', 'W':
			toEOL()
		case 's':
			if i >= len(s) || s[i] == '\n' || s[i] == '\\' {
				return true
			}
			d := s[i]
			i++
			if !delimited(d) || !delimited(d) {
				return true
			}
			for i < len(s) {
				f := s[i]
				switch {
				case f == 'e':
					return true
				case f == 'w':
					toEOL()
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || '0' <= f && f <= '9':
					i++
					continue
				}
				break
			}
		case 'y':
			if i >= len(s) || s[i] == '\n' || s[i] == '\\' {
				return true
			}
			d := s[i]
			i++
			if !delimited(d) || !delimited(d) {
				return true
			}
		default:
			return true // e, and anything not understood
		}
	}
	return false
}
