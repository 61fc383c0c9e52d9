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
func sedRuns(s string) bool { return sedScript(s)&sedExec != 0 }

// What a sed script does besides printing.
type sedEffect uint8

const (
	sedExec  sedEffect = 1 << iota // runs a command (e, s///e), or not understood
	sedWrite                       // writes a file (w, W, s///w)
)

// sedScript reads a sed script for its effects.
func sedScript(s string) sedEffect {
	p := &sedScan{s: s}
	for p.i < len(p.s) && p.eff&sedExec == 0 {
		p.command()
	}
	return p.eff
}

type sedScan struct {
	s   string
	i   int
	eff sedEffect
}

func (p *sedScan) more() bool     { return p.i < len(p.s) }
func (p *sedScan) at(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }
func (p *sedScan) fail()          { p.eff |= sedExec; p.i = len(p.s) }

func (p *sedScan) skipBlank() {
	for p.at(' ') || p.at('\t') {
		p.i++
	}
}

func (p *sedScan) toEOL() {
	for p.more() && p.s[p.i] != '\n' {
		p.i++
	}
}

func (p *sedScan) digits() {
	for p.more() && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
}

// delimited reads text up to the unescaped delimiter d.
func (p *sedScan) delimited(d byte) bool {
	for p.more() {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case d:
			p.i++
			return true
		case '\n':
			if d != '\n' {
				return false
			}
		}
		p.i++
	}
	return false
}

// regexFlags skips the I and M flags of an address.
func (p *sedScan) regexFlags() {
	for p.at('I') || p.at('M') {
		p.i++
	}
}

// address reads one address ($, a line number or step, /re/, \cREc).
func (p *sedScan) address() bool {
	switch {
	case p.at('$'):
		p.i++
	case p.more() && '0' <= p.s[p.i] && p.s[p.i] <= '9':
		for p.more() && ('0' <= p.s[p.i] && p.s[p.i] <= '9' || p.s[p.i] == '~') {
			p.i++
		}
	case p.at('/'):
		p.i++
		if !p.delimited('/') {
			return false
		}
		p.regexFlags()
	case p.at('\\') && p.i+1 < len(p.s):
		d := p.s[p.i+1]
		p.i += 2
		if !p.delimited(d) {
			return false
		}
		p.regexFlags()
	}
	return true
}

// addresses reads "ADDR", "ADDR,ADDR", "ADDR,+N" or "ADDR,~N" and the
// negations after them.
func (p *sedScan) addresses() bool {
	if !p.address() {
		return false
	}
	p.skipBlank()
	if p.at(',') {
		p.i++
		p.skipBlank()
		if p.at('+') || p.at('~') {
			p.i++
		}
		if !p.address() {
			return false
		}
		p.skipBlank()
	}
	for p.at('!') || p.at(' ') || p.at('\t') {
		p.i++
	}
	return true
}

// command reads one command with its addresses.
func (p *sedScan) command() {
	p.skipBlank()
	if !p.more() {
		return
	}
	switch p.s[p.i] {
	case '\n', ';', '}', '{':
		p.i++
		return
	case '#':
		p.toEOL()
		return
	}
	if !p.addresses() || !p.more() {
		p.fail()
		return
	}
	c := p.s[p.i]
	p.i++
	p.verb(c)
}

// verb reads what follows a command letter.
func (p *sedScan) verb(c byte) {
	switch c {
	case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
	case 'l', 'L', 'q', 'Q':
		p.skipBlank()
		p.digits()
	case ':', 'b', 't', 'T', 'v':
		for p.more() && p.s[p.i] != '\n' && p.s[p.i] != ';' {
			p.i++
		}
	case 'a', 'i', 'c':
		p.text()
	case 'r', 'R':
		p.toEOL()
	case 'w', 'W':
		p.eff |= sedWrite
		p.toEOL()
	case 's':
		p.substitute()
	case 'y':
		p.pair()
	default:
		p.fail() // e, and anything not understood
	}
}

// text reads the text of a, i and c to the end of the line; a trailing
// backslash continues it.
func (p *sedScan) text() {
	for p.more() && p.s[p.i] != '\n' {
		if p.s[p.i] == '\\' {
			p.i++
		}
		p.i++
	}
}

// pair reads the two delimited parts of s and y.
func (p *sedScan) pair() bool {
	if !p.more() || p.s[p.i] == '\n' || p.s[p.i] == '\\' {
		p.fail()
		return false
	}
	d := p.s[p.i]
	p.i++
	for range 2 { // the two parts
		if !p.delimited(d) {
			p.fail()
			return false
		}
	}
	return true
}

// substitute reads s/RE/REPLACEMENT/FLAGS: the e flag runs the pattern
// space, the w flag writes a file.
func (p *sedScan) substitute() {
	if !p.pair() {
		return
	}
	for p.more() {
		f := p.s[p.i]
		switch {
		case f == 'e':
			p.fail()
			return
		case f == 'w':
			p.eff |= sedWrite
			p.toEOL()
			return
		case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || '0' <= f && f <= '9':
			p.i++
		default:
			return
		}
	}
}

// The approve side of sed: -i and --in-place write the files, -f reads a
// script the rule cannot see, and the script itself must neither write (w,
// W, s///w) nor run anything (e, s///e).
var sedSpec = &approveSpec{custom: sedApprovable}

var sedOpts = opts(`-n -E -r -s -u -z -l= -e= --quiet --silent --regexp-extended --separate
	--unbuffered --null-data --zero-terminated --line-length= --expression= --posix --debug --sandbox
	--help --version`)

func sedApprovable(args []aword) bool {
	ops, _, ok := sedOpts.check(args)
	if !ok {
		return false
	}
	scripts := sedScripts(args)
	if len(scripts) == 0 && len(ops) > 0 {
		scripts = ops[:1]
	}
	for _, s := range scripts {
		if sedScript(s) != 0 {
			return false
		}
	}
	return true
}

// sedScripts returns the scripts given with -e and --expression.
func sedScripts(args []aword) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case s == "--":
			return out
		case s == "-e" || s == "--expression":
			if i+1 < len(args) {
				out = append(out, args[i+1].s)
				i++
			}
		case len(s) > 2 && s[:2] == "-e":
			out = append(out, s[2:])
		case len(s) > len("--expression=") && s[:len("--expression=")] == "--expression=":
			out = append(out, s[len("--expression="):])
		case len(s) > 2 && s[0] == '-' && s[1] != '-' && s[len(s)-1] == 'e' && i+1 < len(args):
			out = append(out, args[i+1].s) // -ne SCRIPT
			i++
		}
	}
	return out
}

var sedExamples = []example{
	unverifiable("sed 1erm x"),
	approves("sed *", "sed -n 1,5p file", true),
	approves("sed *", "sed -n -e 1p file", true),
	approves("sed *", "sed -i s/a/b/ file", false),
	approves("sed *", "sed --in-place s/a/b/ file", false),
	approves("sed *", "sed -ni 1p file", false),
	approves("sed *", "sed s/a/b/w/tmp/x file", false),
	approves("sed *", "sed -n 1w/tmp/x file", false),
	approves("sed *", "sed 1ecat file", false),
	approves("sed *", "sed s/a/b/e file", false),
	approves("sed *", "sed -f script.sed file", false),
	approves("sed *", "sed -ne 1e file", false),
	approves("sed -i *", "sed -i s/a/b/ file", true), // the rule spells -i
	approves("gsed *", "gsed -n 1p file", true),
}
