package shell

import (
	"strings"
)

// editorRuns: editors run commands given with +cmd, -c, --eval, ... and
// read commands from stdin in ex mode.
func (a *analysis) editorRuns(base string, args []word) bool {
	if base == "ex" || base == "gdb" {
		return true
	}
	for _, w := range args {
		s := w.val
		if !w.lit {
			return true
		}
		if strings.HasPrefix(s, "+") {
			return true
		}
		name, _, _ := strings.Cut(s, "=")
		switch name {
		case "-c", "--cmd", "-S", "-s", "-u", "-e", "-E", "-es", "-Es", "-l", "--remote-send", "--remote-expr",
			"--eval", "-eval", "--load", "-load", "-f", "--funcall", "-funcall", "--batch", "-batch",
			"--script", "-script", "-x", "--execute":
			return true
		}
	}
	return false
}

// runEditor: an editor given commands runs them; otherwise it is a program
// like any other.
func (a *analysis) runEditor(x cmdCall) step {
	if a.editorRuns(x.base, x.args) {
		a.unverify()
		return step{k: kUnknown}
	}
	return unknownArgs(a, x)
}

// runStdin: programs that run shell commands found in their input (.shell,
// \!, !cmd) when they have input; nc -e runs a program.
func (a *analysis) runStdin(x cmdCall) step {
	nc := x.base == "nc" || x.base == "ncat" || x.base == "netcat"
	if a.fed || x.c.ins || len(x.c.stdin) > 0 || hasOpt(x.args, 'e') && nc {
		a.unverify()
		return step{k: kUnknown}
	}
	return unknownArgs(a, x)
}
