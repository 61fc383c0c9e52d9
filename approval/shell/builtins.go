package shell

import (
	"strings"
)

func (a *analysis) trap(args []word, depth int) {
	for i, w := range args {
		if w.lit && strings.HasPrefix(w.val, "-") && w.val != "-" {
			if w.val == "--" {
				args = args[i+1:]
				break
			}
			continue
		}
		args = args[i:]
		break
	}
	if len(args) < 2 {
		return // trap -p, trap SIGNAL (reset)
	}
	if args[0].lit && (args[0].val == "-" || args[0].val == "" || isNumber(args[0].val)) {
		return
	}
	a.codeString(args[0], depth)
}

func (a *analysis) read(base string, args []word, depth int) {
	a.construct()
	names := 0
	for i := 0; i < len(args); i++ {
		w := args[i]
		s := w.val
		if w.lit && len(s) > 1 && s[0] == '-' {
			for j := 1; j < len(s); j++ {
				if strings.IndexByte(readArgs[base], s[j]) < 0 {
					continue
				}
				var v word
				if j+1 < len(s) {
					v = word{val: s[j+1:], lit: true, eq: -1}
				} else if i+1 < len(args) {
					i++
					v = args[i]
				}
				switch {
				case s[j] == 'a' && base == "read":
					a.nameWord(v)
					a.assign(nameOf(v.val))
					names++
				case s[j] == 'C':
					a.codeString(v, depth) // mapfile's callback
				}
				break
			}
			continue
		}
		if base == "getopts" && i == 0 {
			continue // the option string
		}
		a.nameWord(w)
		a.assign(nameOf(w.val))
		names++
	}
	switch {
	case base == "read" && names == 0:
		a.assign("REPLY")
	case base == "getopts":
		a.assign("OPTARG")
	}
}

var readArgs = map[string]string{"read": "adinNptu", "mapfile": "dnOsuCc", "readarray": "dnOsuCc", "getopts": ""}

func (a *analysis) declare(args []word) {
	integer := false
	for _, w := range args {
		s := w.val
		if w.lit && len(s) > 1 && (s[0] == '-' || s[0] == '+') {
			if strings.IndexByte(s, 'f') >= 0 || strings.IndexByte(s, 'F') >= 0 {
				return // function names
			}
			integer = integer || s[0] == '-' && strings.IndexByte(s, 'i') >= 0
			continue
		}
		if w.eq >= 0 {
			a.assignment(w)
			if integer {
				name, value, _ := w.assignment()
				a.sinkName(name)
				a.sinkText(value)
			}
			continue
		}
		a.nameWord(w)
		a.assign(nameOf(w.val))
		if integer {
			a.sinkName(nameOf(w.val))
		}
	}
}

// isAssignment: NAME=value, NAME+=value or NAME[i]=value.
func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	name := w[:eq]
	name = strings.TrimSuffix(name, "+")
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		name = name[:i]
	}
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// runAlias reads alias values as scripts.
func (a *analysis) runAlias(x cmdCall) step {
	for _, w := range x.args {
		if i := strings.IndexByte(w.val, '='); i > 0 {
			if !w.lit {
				a.unverify()
				continue
			}
			a.script(w.val[i+1:], x.depth+1)
		}
	}
	return step{k: kData}
}

// runOptAsk: hash -p PATH NAME, enable -f FILE NAME bind a name to
// something else.
func (a *analysis) runOptAsk(x cmdCall) step {
	if hasOpt(x.args, x.h.letter) {
		a.unverify()
	}
	return step{k: kData}
}

// runCrontab: installing a crontab schedules commands for later.
func (a *analysis) runCrontab(x cmdCall) step {
	if !hasOpt(x.args, 'l') && !hasOpt(x.args, 'r') {
		a.unverify()
	}
	return step{k: kData}
}

// runPrintf: printf -v NAME assigns a value built at run time.
func (a *analysis) runPrintf(x cmdCall) step {
	if args := x.args; len(args) > 1 && args[0].lit && args[0].val == "-v" {
		a.construct()
		a.nameWord(args[1])
		a.assign(nameOf(args[1].val))
	}
	return step{k: kData}
}

// runLet evaluates its arguments as arithmetic.
func (a *analysis) runLet(x cmdCall) step {
	for _, w := range x.args {
		a.sinkText(w.val)
	}
	return step{k: kData}
}

// runTest: test -v NAME evaluates a variable name.
func (a *analysis) runTest(x cmdCall) step {
	for i, w := range x.args {
		if w.lit && w.val == "-v" && i+1 < len(x.args) {
			a.nameWord(x.args[i+1])
		}
	}
	return step{k: kData}
}

// runUnset: unset evaluates the names it is given.
func (a *analysis) runUnset(x cmdCall) step {
	for _, w := range x.args {
		if !strings.HasPrefix(w.val, "-") {
			a.nameWord(w)
		}
	}
	return step{k: kData}
}
