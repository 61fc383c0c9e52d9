package shell

import (
	"strings"
)

// shell analyses sh/bash/... with their arguments: -c STRING is analysed as
// a script, a script file is unverifiable, and so is stdin unless it is
// here-documents or here-strings.
func (a *analysis) shell(args []word, c *scmd, depth int, open, piped bool) kind {
	cflag, sflag := false, false
	i := 0
options:
	for i < len(args) {
		w := args[i]
		if !w.lit {
			a.unverify()
			return kUnknown
		}
		s := w.val
		switch {
		case s == "--" || s == "-":
			i++
			break options
		case strings.HasPrefix(s, "--command="):
			a.codeString(word{val: s[len("--command="):], lit: true, eq: -1}, depth)
			return kUnknown
		case s == "--command":
			if i+1 < len(args) {
				a.codeString(args[i+1], depth)
			} else {
				a.unverify()
			}
			return kUnknown
		case s == "--rcfile" || s == "--init-file":
			a.unverify() // sources a file
			i += 2
		case s == "--version" || s == "--help":
			return kData
		case strings.HasPrefix(s, "--"):
			i++
		case len(s) > 1 && (s[0] == '-' || s[0] == '+'):
			i++
			for j := 1; j < len(s); j++ {
				switch s[j] {
				case 'c':
					cflag = cflag || s[0] == '-'
				case 's':
					sflag = true
				case 'o', 'O':
					i++ // -o OPTION
				}
			}
		default:
			break options
		}
	}
	rest := args[min(i, len(args)):]
	if cflag {
		if len(rest) == 0 {
			a.unverify() // the string comes from elsewhere (xargs)
			return kUnknown
		}
		a.codeString(rest[0], depth)
		return kUnknown
	}
	a.shellStdin(rest, c, depth, open, piped, sflag)
	return kUnknown
}

// shellStdin: a shell without -c runs a script file, or reads commands
// from stdin, which only here-documents and here-strings show.
func (a *analysis) shellStdin(rest []word, c *scmd, depth int, open, piped, sflag bool) {
	if len(rest) > 0 && !sflag || open {
		a.unverify() // runs a script file
		return
	}
	if piped || len(c.stdin) == 0 || c.ins {
		a.unverify()
		return
	}
	for _, w := range c.stdin {
		a.codeString(w, depth)
	}
}

// su and runuser: -c STRING is a script; runuser -u USER runs the command
// that follows; anything else starts a shell. run reports that rest is a
// command to analyse.
func (a *analysis) su(base string, args []word, depth int) (rest []word, run bool) {
	var operands []word
	user, code, info := false, false, false
	shellOK := true
	for i := 0; i < len(args); i++ {
		w := args[i]
		s := w.val
		if !w.lit || s == "-" || len(s) < 2 || s[0] != '-' {
			operands = append(operands, w)
			continue
		}
		if s == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		class := suOption(s)
		var v word
		var has bool
		if class != suInfo && class != suOther {
			v, has = suValue(args, &i)
		}
		switch class {
		case suCode:
			if has {
				a.codeString(v, depth)
				code = true
			}
		case suShell:
			shellOK = shellOK && !(has && (!v.lit || commands[basename(asciiLower(v.val))].kind != cShell))
		case suUser:
			user = true
		case suInfo:
			info = true
		}
	}
	if !shellOK {
		a.unverify() // the "shell" is some other program
	}
	if base == "runuser" && user {
		return operands, true
	}
	if !code && !info {
		a.unverify() // a shell reading stdin or a script
	}
	return nil, false
}

// The options of su and runuser, by what they do.
const (
	suOther = iota
	suCode  // -c, --command, --session-command: a script
	suShell // -s, --shell: the program that runs it
	suUser  // -u, --user: runuser runs a command as USER
	suArg   // another option taking a value
	suInfo  // -h, -V: only prints
)

func suOption(s string) int {
	name, _, _ := strings.Cut(s, "=")
	switch {
	case name == "-c" || name == "--command" || name == "--session-command" || strings.HasPrefix(s, "-c"):
		return suCode
	case name == "-s" || name == "--shell" || strings.HasPrefix(s, "-s"):
		return suShell
	case name == "-u" || name == "--user" || strings.HasPrefix(s, "-u"):
		return suUser
	case name == "-g" || name == "--group" || name == "-G" || name == "--supp-group" ||
		name == "-w" || name == "--whitelist-environment" || len(s) == 2 && strings.IndexByte("gGw", s[1]) >= 0:
		return suArg
	case name == "-h" || name == "--help" || name == "-V" || name == "--version":
		return suInfo
	}
	return suOther
}

// suValue returns the value of the option args[*i]: after '=', attached
// to a short option, or the next word (advancing *i).
func suValue(args []word, i *int) (word, bool) {
	s := args[*i].val
	if _, val, hasEq := strings.Cut(s, "="); hasEq {
		return word{val: val, lit: true, eq: -1}, true
	}
	if strings.HasPrefix(s, "--") || len(s) == 2 {
		if *i+1 < len(args) {
			*i++
			return args[*i], true
		}
		return word{}, false
	}
	return word{val: s[2:], lit: true, eq: -1}, true
}

// sg GROUP [-c] COMMAND runs COMMAND with /bin/sh -c; without one it
// starts a shell.
func (a *analysis) sg(args []word, depth int) {
	if len(args) > 0 && args[0].lit && args[0].val == "-" {
		args = args[1:]
	}
	if len(args) > 1 && args[1].lit && args[1].val == "-c" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) < 2 {
		a.unverify()
		return
	}
	a.joinCode(args[1:], depth)
}

// runSu: runuser -u USER goes on with the command; su -c reads a script.
func (a *analysis) runSu(x cmdCall) step {
	rest, run := a.su(x.base, x.args, x.depth)
	if !run {
		return step{k: kUnknown}
	}
	return x.then(rest)
}

// runScript: script -c COMMAND runs a shell command; without it a shell
// reading stdin.
func (a *analysis) runScript(x cmdCall) step {
	if s, ok := optionValue(x.args, "-c", "--command"); ok {
		a.codeString(s, x.depth)
	} else {
		a.unverify() // starts a shell reading stdin
	}
	return step{k: kUnknown}
}
