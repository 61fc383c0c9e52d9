package shell

import (
	"strings"
)

// interp: an interpreter with inline code or reading stdin runs code the
// analyser cannot read; with a script file it is an ordinary program.
func (a *analysis) interp(base string, sp *interpSpec, args []word) kind {
	if sp.always {
		a.unverify()
		return kUnknown
	}
	script, info := false, false
	i := 0
	for i < len(args) && !script {
		w := args[i]
		if !w.lit {
			a.unverify()
			return kUnknown
		}
		s := w.val
		if s == "-" || len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		if s == "--" {
			break
		}
		switch sp.option(s) {
		case iCode:
			a.unverify()
			return kUnknown
		case iScript:
			script = true
		case iInfo:
			info = true
		case iArg:
			i++
		}
	}
	if i > len(args) {
		i = len(args)
	}
	rest := args[i:]
	if !script && len(rest) > 0 && rest[0].lit && sp.codeSub[rest[0].val] {
		a.unverify() // deno eval
		return kUnknown
	}
	if !script && (len(rest) == 0 || rest[0].lit && rest[0].val == "-") && !info {
		a.unverify() // reads the program from stdin
		return kUnknown
	}
	a.suspectAll(args)
	return kUnknown
}

// What an interpreter's option does.
const (
	iNone   = iota
	iCode   // its value is program text
	iScript // names the program (python -m)
	iInfo   // only prints
	iArg    // its value is the next word
)

// option classifies an option word (a cluster: its first letter that
// matters).
func (sp *interpSpec) option(s string) int {
	if strings.HasPrefix(s, "--") {
		name, _, hasEq := strings.Cut(s[2:], "=")
		switch {
		case sp.codeLong[name]:
			return iCode
		case name == "version" || name == "help":
			return iInfo
		case sp.argLong[name] && !hasEq:
			return iArg
		}
		return iNone
	}
	for j := 1; j < len(s); j++ {
		ch := s[j]
		switch {
		case strings.IndexByte(sp.code, ch) >= 0:
			return iCode
		case strings.IndexByte(sp.script, ch) >= 0:
			return iScript
		case strings.IndexByte(sp.info, ch) >= 0:
			return iInfo
		case strings.IndexByte(sp.args, ch) >= 0:
			if j+1 == len(s) {
				return iArg
			}
			return iNone
		}
	}
	return iNone
}

type interpSpec struct {
	code     string // short options whose value (or the rest) is program text
	script   string // short options naming the program (python -m, php -f)
	args     string // short options taking an argument
	info     string // short options that only print
	codeLong map[string]bool
	argLong  map[string]bool
	codeSub  map[string]bool // subcommands taking program text (deno eval)
	always   bool            // every use asks
}

var interpSpecs = map[string]*interpSpec{
	"python":    {code: "c", script: "m", args: "WX", info: "Vh"},
	"pypy":      {code: "c", script: "m", args: "WX", info: "Vh"},
	"perl":      {code: "eE", args: "I", info: "vVh"},
	"ruby":      {code: "e", args: "IrCEF", info: "vh", argLong: setOf("require")},
	"node":      {code: "ep", args: "r", info: "vh", codeLong: setOf("eval", "print"), argLong: setOf("require", "import", "loader")},
	"nodejs":    {code: "ep", args: "r", info: "vh", codeLong: setOf("eval", "print"), argLong: setOf("require", "import", "loader")},
	"bun":       {code: "ep", info: "vh", codeLong: setOf("eval", "print")},
	"deno":      {code: "e", info: "Vh", codeLong: setOf("eval"), codeSub: setOf("eval", "repl")},
	"php":       {code: "rRBEa", script: "f", args: "cdz", info: "vhi"},
	"lua":       {code: "e", args: "l", info: "v"},
	"luajit":    {code: "e", args: "lj", info: "v"},
	"rscript":   {code: "e", info: "h", codeLong: setOf("eval")},
	"r":         {code: "e", info: "h"},
	"julia":     {code: "eE", info: "vh", codeLong: setOf("eval", "print")},
	"osascript": {code: "e", info: "h"},
	"expect":    {code: "c", script: "f", info: "v"},
	"tclsh":     {},
	"wish":      {},
}
