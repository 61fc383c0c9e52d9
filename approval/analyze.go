package approval

import (
	"strings"

	"github.com/google/shlex"
)

// The deny side: find every simple command a shell text may run, so that a
// deny rule matching any of them denies the whole call.
//
// The analysis over-approximates on purpose: splitting too eagerly (inside a
// comment or a quoted here-document, at a case pattern's ')') can only make a
// deny rule match more often. What it cannot see it reports as unverifiable:
// a command word built at run time ($CMD, $(...), `...`, globs, brace
// expansion), unbalanced quotes or substitutions, a shell reading a script
// or stdin, nesting deeper than maxNesting, or a command longer than
// MaxAnalyzeCommandLen.

// placeholder replaces a command or process substitution in the enclosing
// text; as a command word it is dynamic.
const placeholder = "$_"

type candidate struct {
	text string // ASCII-lowercased, blanks normalized
	open bool   // more arguments may be appended at run time (xargs)
}

type analysis struct {
	cands        []candidate
	unverifiable bool
}

func analyze(cmd string) *analysis {
	a := &analysis{}
	if len(cmd) > MaxAnalyzeCommandLen {
		a.unverifiable = true
		cmd = cmd[:MaxAnalyzeCommandLen]
	}
	a.add(normalizeBlanks(cmd), false)
	a.script(cmd, 0)
	return a
}

func (a *analysis) add(text string, open bool) {
	if text == "" {
		return
	}
	text = asciiLower(text)
	if n := len(a.cands); n > 0 && a.cands[n-1].text == text && a.cands[n-1].open == open {
		return
	}
	a.cands = append(a.cands, candidate{text: text, open: open})
}

// matches reports whether the lowercased pattern matches a candidate.
func (a *analysis) matches(lowerPattern string) bool {
	for _, c := range a.cands {
		if globMatchWord(lowerPattern, c.text) {
			return true
		}
		if c.open && globPrefix(lowerPattern, c.text+" ") {
			return true
		}
	}
	return false
}

// script analyses shell text: every simple command in it.
func (a *analysis) script(src string, depth int) {
	if depth > maxNesting {
		a.unverifiable = true
		return
	}
	parts, ok := splitScript(src, false)
	if !ok {
		a.unverifiable = true
	}
	for _, p := range parts {
		a.simple(p, depth)
	}
}

// part is the text of one simple command. A lenient part comes from the
// here-document safety net: it adds candidates but never makes the command
// unverifiable.
type part struct {
	text    string
	lenient bool
}

// simple analyses the text of one simple command.
func (a *analysis) simple(p part, depth int) {
	raw := normalizeBlanks(p.text)
	if raw == "" {
		return
	}
	before := a.unverifiable
	a.add(raw, false)
	words, err := shlex.Split(p.text)
	if err != nil {
		a.unverifiable = true // unbalanced quote or trailing backslash
	}
	a.words(words, depth, false)
	// "function f { rm ...": a brace group starting inside the part.
	for i := 1; i < len(words); i++ {
		if words[i] == "{" {
			a.words(words[i+1:], depth, false)
		}
	}
	if p.lenient {
		a.unverifiable = before
	}
}

// reserved are shell keywords that may precede a command in the same simple
// command text once it has been split at operators.
var reserved = setOf("{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done",
	"while", "until", "esac", "coproc", "function")

// words analyses a dequoted word list: strips keywords, assignments and
// wrappers, adding a candidate at every step.
func (a *analysis) words(ws []string, depth int, open bool) {
	for {
		for len(ws) > 0 && (reserved[ws[0]] || isAssignment(ws[0])) {
			ws = ws[1:]
		}
		if len(ws) == 0 {
			return
		}
		a.add(strings.Join(ws, " "), open)
		name := ws[0]
		if strings.ContainsAny(name, "$`*?[{") {
			a.unverifiable = true // the command word is only known at run time
			return
		}
		base := basename(name)
		if base == "" {
			return
		}
		if base != name {
			a.add(strings.Join(append([]string{base}, ws[1:]...), " "), open)
		}
		args := ws[1:]
		switch base {
		case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh":
			if s, ok := shellCommandString(args); ok {
				a.script(s, depth+1)
			} else if !infoOnly(args) {
				a.unverifiable = true // runs a script file or stdin
			}
			return
		case "eval":
			a.script(strings.Join(args, " "), depth+1)
			return
		case "su", "runuser":
			if s, ok := optionValue(args, "-c", "--command"); ok {
				a.script(s, depth+1)
			} else if base == "su" {
				a.unverifiable = true // a login shell reading stdin
			} else {
				ws = skipOptions(args, wrappers["runuser"])
				continue
			}
			return
		case "env":
			if s, rest, ok := envSplitString(args); ok {
				a.script(s+" "+strings.Join(rest, " "), depth+1)
				return
			}
		case "watch":
			rest := skipOptions(args, wrappers["watch"])
			if hasFlag(args, "-x", "--exec") {
				ws = rest
				continue
			}
			if len(rest) > 0 {
				a.script(strings.Join(rest, " "), depth+1)
			}
			return
		case "find":
			for i := 0; i < len(args); i++ {
				switch args[i] {
				case "-exec", "-execdir", "-ok", "-okdir":
					j := i + 1
					for j < len(args) && args[j] != ";" && args[j] != "+" {
						j++
					}
					if depth+1 > maxNesting {
						a.unverifiable = true
						return
					}
					a.words(args[i+1:j], depth+1, false)
					i = j
				}
			}
			return
		case "command":
			if hasFlag(args, "-v", "-V") {
				return // only prints what the name would run
			}
		}
		spec, ok := wrappers[base]
		if !ok {
			return
		}
		ws = skipOptions(args, spec)
		open = open || spec.open
	}
}

// wrapper describes a command that runs the command given in its arguments.
type wrapper struct {
	argOpts     map[string]bool // options that take a separate argument
	positional  int             // operands before the command (timeout's duration)
	assignments bool            // NAME=value operands (env)
	open        bool            // appends arguments read at run time (xargs)
}

func wrap(positional int, argOpts ...string) wrapper {
	return wrapper{argOpts: setOf(argOpts...), positional: positional}
}

var wrappers = map[string]wrapper{
	"sudo": wrap(0, "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group",
		"--host", "--prompt", "--close-from", "--chdir", "--role", "--type", "--other-user", "--command-timeout"),
	"doas":     wrap(0, "-u", "-C"),
	"pkexec":   wrap(0, "--user"),
	"runuser":  wrap(0, "-u", "-g", "-G", "--user", "--group", "--supp-group"),
	"env":      {argOpts: setOf("-u", "--unset", "-C", "--chdir"), assignments: true},
	"nohup":    wrap(0),
	"setsid":   wrap(0),
	"builtin":  wrap(0),
	"command":  wrap(0),
	"exec":     wrap(0, "-a"),
	"time":     wrap(0, "-f", "-o", "--format", "--output"),
	"nice":     wrap(0, "-n", "--adjustment"),
	"timeout":  wrap(1, "-s", "-k", "--signal", "--kill-after"),
	"stdbuf":   wrap(0, "-i", "-o", "-e", "--input", "--output", "--error"),
	"ionice":   wrap(0, "-c", "-n", "-t", "--class", "--classdata"),
	"chroot":   wrap(1, "--userspec", "--groups"),
	"flock":    wrap(1, "-w", "-E", "--timeout", "--conflict-exit-code"),
	"unbuffer": wrap(0),
	"busybox":  wrap(0),
	"strace":   wrap(0, "-o", "-e", "-p", "-s", "-u", "-E", "-P", "-a", "-b", "-I", "-O", "-S", "-X"),
	"ltrace":   wrap(0, "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-n"),
	"watch":    wrap(0, "-n", "--interval", "-d", "-q", "--equexit"),
	"xargs": {argOpts: setOf("-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter",
		"--max-args", "--max-procs", "--max-chars", "--max-lines", "--process-slot-var"), open: true},
}

// skipOptions drops a wrapper's options and operands, returning the command
// words that follow.
func skipOptions(args []string, w wrapper) []string {
	i := 0
	for i < len(args) {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		if w.assignments && isAssignment(arg) {
			i++
			continue
		}
		if len(arg) < 2 || arg[0] != '-' {
			break
		}
		i++
		if w.argOpts[arg] {
			i++ // the option's argument
		}
	}
	for n := 0; n < w.positional && i < len(args); n++ {
		i++
	}
	if i > len(args) {
		return nil
	}
	return args[i:]
}

// shellCommandString finds the command string of sh -c STRING (also -xc,
// -lc, --command STRING for fish).
func shellCommandString(args []string) (string, bool) {
	c := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			if c && i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case strings.HasPrefix(arg, "--command="):
			return strings.TrimPrefix(arg, "--command="), true
		case arg == "--command":
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case arg == "--rcfile" || arg == "--init-file" || arg == "-o" || arg == "+o" || arg == "-O" || arg == "+O":
			i++
		case strings.HasPrefix(arg, "--"):
		case len(arg) > 1 && (arg[0] == '-' || arg[0] == '+'):
			if arg[0] == '-' && strings.IndexByte(arg, 'c') > 0 {
				c = true
			}
		default:
			if c {
				return arg, true
			}
			return "", false
		}
	}
	return "", false
}

// infoOnly: the shell is asked only for --version or --help.
func infoOnly(args []string) bool {
	return hasFlag(args, "--version", "--help")
}

func hasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		for _, f := range flags {
			if a == f {
				return true
			}
		}
	}
	return false
}

// optionValue finds "-c VALUE", "--command VALUE" or "--command=VALUE".
func optionValue(args []string, short, long string) (string, bool) {
	for i, a := range args {
		switch {
		case a == short || a == long:
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case strings.HasPrefix(a, long+"="):
			return a[len(long)+1:], true
		}
	}
	return "", false
}

// envSplitString finds env -S STRING / --split-string=STRING, which env
// splits into a command line itself.
func envSplitString(args []string) (string, []string, bool) {
	for i, a := range args {
		switch {
		case a == "-S" || a == "--split-string":
			if i+1 < len(args) {
				return args[i+1], args[i+2:], true
			}
			return "", nil, false
		case strings.HasPrefix(a, "--split-string="):
			return a[len("--split-string="):], args[i+1:], true
		case strings.HasPrefix(a, "-S"):
			return a[2:], args[i+1:], true
		case !strings.HasPrefix(a, "-") && !isAssignment(a):
			return "", nil, false
		}
	}
	return "", nil, false
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

// Frame kinds of the splitter.
const (
	kindTop      = iota
	kindParen    // ( ... ) subshell or f() definition
	kindSubst    // $( ... ), <( ... ), >( ... )
	kindBacktick // ` ... `
)

type frame struct {
	buf   []byte
	kind  int
	arith bool // inside (( )) or $(( )): "<<" is a shift there
	// quote is 0 (unquoted), '"' (double quotes) or 'h' (unquoted
	// here-document body: like double quotes but '"' is literal).
	quote byte
}

type heredoc struct {
	delim     string
	quoted    bool // body is literal
	stripTabs bool // <<-
}

// splitScript splits shell text into the texts of the simple commands it
// runs. Command and process substitutions become parts of their own and leave
// placeholder in the enclosing text; subshell parentheses end the part before
// them. With body set, src is an unquoted here-document body: only the
// substitutions inside it are commands. ok is false when a quote, backtick or
// substitution is unbalanced or a here-document has no delimiter.
func splitScript(src string, body bool) (parts []part, ok bool) {
	ok = true
	top := &frame{kind: kindTop}
	if body {
		top.quote = 'h'
	}
	stack := []*frame{top}
	var pending []heredoc

	emit := func(f *frame) {
		if len(f.buf) > 0 {
			if !(body && f == top) {
				parts = append(parts, part{text: string(f.buf)})
			}
			f.buf = f.buf[:0]
		}
	}
	push := func(kind int, arith bool) {
		arith = arith || stack[len(stack)-1].arith
		stack = append(stack, &frame{kind: kind, arith: arith})
	}
	pop := func() *frame {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		emit(f)
		return stack[len(stack)-1]
	}

	for i := 0; i < len(src); i++ {
		f := stack[len(stack)-1]
		c := src[i]
		next := byte(0)
		if i+1 < len(src) {
			next = src[i+1]
		}
		if c == '\\' {
			switch {
			case next == '\n':
				i++ // line continuation
			case next != 0:
				f.buf = append(f.buf, c, next)
				i++
			default:
				f.buf = append(f.buf, c)
			}
			continue
		}
		if f.quote != 0 {
			switch {
			case c == '"' && f.quote == '"':
				f.quote = 0
				f.buf = append(f.buf, c)
			case c == '$' && next == '(':
				push(kindSubst, i+2 < len(src) && src[i+2] == '(')
				i++
			case c == '`':
				push(kindBacktick, false)
			default:
				f.buf = append(f.buf, c)
			}
			continue
		}
		switch c {
		case '\'':
			j := strings.IndexByte(src[i+1:], '\'')
			if j < 0 {
				ok = false
				f.buf = append(f.buf, src[i:]...)
				i = len(src)
				continue
			}
			f.buf = append(f.buf, src[i:i+j+2]...)
			i += j + 1
		case '"':
			f.quote = '"'
			f.buf = append(f.buf, c)
		case '#':
			if n := len(f.buf); n == 0 || f.buf[n-1] == ' ' || f.buf[n-1] == '\t' {
				j := strings.IndexByte(src[i:], '\n')
				if j < 0 {
					i = len(src)
				} else {
					i += j - 1 // the newline itself is handled next
				}
				continue
			}
			f.buf = append(f.buf, c)
		case '$', '<', '>':
			switch {
			case next == '(':
				push(kindSubst, c == '$' && i+2 < len(src) && src[i+2] == '(')
				i++
			case c == '<' && next == '<' && i+2 < len(src) && src[i+2] == '<':
				f.buf = append(f.buf, "<<<"...) // here-string: its word stays in this part
				i += 2
			case c == '<' && next == '<' && !f.arith:
				h, end, good := readHeredoc(src, i+2)
				if !good {
					ok = false
				} else {
					pending = append(pending, h)
				}
				f.buf = append(f.buf, src[i:end]...)
				i = end - 1
			default:
				f.buf = append(f.buf, c)
			}
		case '`':
			if f.kind == kindBacktick {
				parent := pop()
				parent.buf = append(parent.buf, placeholder...)
			} else {
				push(kindBacktick, false)
			}
		case '(':
			emit(f)
			push(kindParen, next == '(')
		case ')':
			switch f.kind {
			case kindSubst:
				parent := pop()
				parent.buf = append(parent.buf, placeholder...)
			case kindParen:
				emit(pop())
			default:
				emit(f)
			}
		case '\n':
			emit(f)
			if len(pending) > 0 {
				var bodies []string
				bodies, i = readBodies(src, i+1, pending)
				for k, b := range bodies {
					if !pending[k].quoted {
						// Substitutions in an unquoted body run.
						p, good := splitScript(b, true)
						parts = append(parts, p...)
						ok = ok && good
					}
					// Safety net: the body also read as script, in case
					// the "<<" was not a here-document after all. These
					// parts only add candidates: prose has apostrophes.
					p, _ := splitScript(b, false)
					for _, x := range p {
						x.lenient = true
						parts = append(parts, x)
					}
				}
				pending = pending[:0]
			}
		case ';', '&', '|', '\r':
			emit(f)
		default:
			f.buf = append(f.buf, c)
		}
	}
	if len(stack) > 1 || stack[0].quote == '"' {
		ok = false
	}
	for len(stack) > 1 {
		pop()
	}
	emit(top)
	return parts, ok
}

// readHeredoc reads the delimiter word after "<<" starting at i; end is the
// index just past it.
func readHeredoc(src string, i int) (h heredoc, end int, ok bool) {
	if i < len(src) && src[i] == '-' {
		h.stripTabs = true
		i++
	}
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	var delim []byte
	for i < len(src) {
		c := src[i]
		if strings.IndexByte(" \t\n;&|<>()", c) >= 0 {
			break
		}
		switch c {
		case '\'', '"':
			h.quoted = true
			j := strings.IndexByte(src[i+1:], c)
			if j < 0 {
				return h, len(src), false
			}
			delim = append(delim, src[i+1:i+1+j]...)
			i += j + 2
			continue
		case '\\':
			h.quoted = true
			if i+1 < len(src) {
				delim = append(delim, src[i+1])
			}
			i += 2
			continue
		}
		delim = append(delim, c)
		i++
	}
	if i > len(src) {
		i = len(src)
	}
	h.delim = string(delim)
	return h, i, h.delim != ""
}

// readBodies consumes the bodies of the pending here-documents starting at
// index i (just after the newline that ends their command line). It returns
// the bodies and the index of the last byte consumed.
func readBodies(src string, i int, pending []heredoc) (bodies []string, last int) {
	last = i - 1
	for _, h := range pending {
		start := i
		bodyEnd := len(src)
		for i < len(src) {
			j := strings.IndexByte(src[i:], '\n')
			lineEnd := len(src)
			if j >= 0 {
				lineEnd = i + j
			}
			line := src[i:lineEnd]
			if h.stripTabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				bodyEnd = i
				i = lineEnd + 1
				break
			}
			i = lineEnd + 1
		}
		if i > len(src) {
			i = len(src)
		}
		if start > bodyEnd {
			start = bodyEnd
		}
		last = i - 1
		bodies = append(bodies, src[start:bodyEnd])
	}
	return bodies, last
}
