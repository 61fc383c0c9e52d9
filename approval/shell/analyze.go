package shell

import (
	"strings"
)

// The deny side: what may a shell text run?
//
// The analysis lexes the command (see lex.go) into simple commands and
// collects, for every command a deny rule might name:
//
//   - candidates: texts a rule's glob is matched against — the whole
//     command, and every simple command with quotes removed, redirections
//     and leading assignments taken out, at every step of unwrapping
//     wrappers (sudo, env, nohup, xargs, ...), in the text and the basename
//     form of the command word. A rule matching one denies. Expansions in a
//     candidate also have a wild form, in which they stand for any text: a
//     rule that matches only some expansion may match (asks). Candidates
//     found in literal text that a shell might read later (here-document
//     bodies, strings holding "$(" ...) are weak: a rule matching one asks.
//   - probes: each command word with its arguments, for rules naming the
//     same program arranged differently (options before a subcommand,
//     flags split or reordered): they ask.
//   - suspects: the arguments (also option values, assignment values and
//     stdin texts) of commands that may run their arguments or input as a
//     command — any command the analyser does not know, and writers of
//     files. A suspect word naming a rule's first word asks.
//   - unverifiable: the command may run something no text shows — a command
//     word built at run time, a script file or stdin given to a shell, code
//     in another language (python -c, awk system(), sed's e), a shell
//     construct that evaluates variable values (${x@P}, arithmetic on
//     values built at run time), unbalanced quoting, nesting deeper than
//     MaxNesting, more than maxWrappers wrappers, a NUL byte, or a command
//     longer than MaxAnalyzeLen. Every deny rule then asks.

// placeholder replaces a command or process substitution in a word; as a
// command word it is dynamic.
const placeholder = "$_"

// maxWrappers bounds the wrappers unwrapped in one simple command.
const maxWrappers = 32

type candidate struct {
	text string // ASCII-lowercased; expansions as written
	wild string // the same with each expansion as wildByte; "" when none
	open bool   // more arguments may be appended at run time (xargs)
	weak bool   // found in text that may or may not run: a match asks
}

type probe struct {
	name, base string   // command word and its basename, lowercased
	sub        string   // a subcommand known by its position (git), or ""
	args       []string // arguments (literal parts), lowercased
	flags      uint64   // short option letters, see flagBit
}

type analysis struct {
	cands        []candidate
	probes       []probe
	sus          []string // lowercased texts that may hold a command word
	anySus       bool     // a suspect built at run time: may hold any word
	unverifiable bool
	abort        bool
	lenient      int     // > 0 while reading text that may never run
	data         []*scmd // commands whose arguments are data
	unknown      bool    // some command may run its arguments or input
	fed          bool    // the command has a pipe, input redirection or here-document

	// Values built at run time, for the constructs that evaluate them.
	assigned    map[string]bool // names the command assigns
	constructor bool            // some value is built at run time
	susRefs     []string        // names expanded into a suspect argument
	sinkNames   []string        // names evaluated as arithmetic
	nameRefs    []string        // names expanded into a variable name
}

func analyze(cmd string) *analysis {
	a := &analysis{}
	if len(cmd) > MaxAnalyzeLen {
		a.unverifiable = true
		cmd = cmd[:MaxAnalyzeLen]
	}
	if strings.IndexByte(cmd, 0) >= 0 {
		a.unverifiable = true // bash drops NUL bytes from script text
	}
	a.add(candidate{text: normalizeBlanks(cmd)})
	l := &lexer{a: a, src: cmd, top: true}
	l.run()
	a.add(candidate{text: string(l.canon)})
	a.finish()
	return a
}

func (a *analysis) finish() {
	if a.abort {
		a.unverifiable = true
	}
	if a.unknown && a.fed {
		// A command that may run what it reads, and input: what the other
		// commands print (echo rm x | mywrap, echo rm x | (mywrap), mywrap
		// < <(echo rm x)) may be a command.
		for _, c := range a.data {
			for _, w := range c.words {
				a.suspectText(w)
			}
			for _, w := range c.stdin {
				a.suspectText(w)
			}
		}
	}
	for _, n := range a.susRefs {
		if a.isAssigned(n) {
			a.anySus = true
			break
		}
	}
	for _, n := range a.nameRefs {
		if a.isAssigned(n) {
			a.unverifiable = true
		}
	}
	if a.constructor {
		for _, n := range a.sinkNames {
			if a.isAssigned(n) {
				a.unverifiable = true
			}
		}
	}
}

// shellSet are the parameters the shell itself sets from data the command
// controls.
var shellSet = setOf("_", "@", "*", "REPLY", "OPTARG", "BASH_REMATCH", "BASH_COMMAND", "PWD", "OLDPWD",
	"MAPFILE", "FUNCNAME", "BASH_ARGV", "BASH_SOURCE", "DIRSTACK", "COMP_WORDS", "COMP_LINE",
	"READLINE_LINE", "BASH_EXECUTION_STRING")

func (a *analysis) isAssigned(n string) bool {
	if a.assigned[n] || shellSet[n] {
		return true
	}
	return n != "" && n[0] >= '0' && n[0] <= '9'
}

func (a *analysis) unverify() {
	if a.lenient == 0 {
		a.unverifiable = true
	}
}

func (a *analysis) construct() {
	if a.lenient == 0 {
		a.constructor = true
	}
}

func (a *analysis) assign(name string) {
	if a.lenient > 0 || name == "" {
		return
	}
	if a.assigned == nil {
		a.assigned = map[string]bool{}
	}
	a.assigned[name] = true
}

func (a *analysis) sinkName(n string) {
	if a.lenient == 0 {
		a.sinkNames = append(a.sinkNames, n)
	}
}

// sinkText records the names in arithmetic text.
func (a *analysis) sinkText(s string) {
	if a.lenient > 0 {
		return
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '_' || isAlpha(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || isAlnum(s[j])) {
				j++
			}
			a.sinkNames = append(a.sinkNames, s[i:j])
			i = j
		case '0' <= c && c <= '9':
			for i < len(s) && (s[i] == '_' || isAlnum(s[i])) {
				i++ // a number, also 0x1f and 64#z
			}
		default:
			i++
		}
	}
}

// nameWord checks a word a builtin takes as a variable name (read, printf
// -v, test -v, declare, unset): evaluating a[$(...)] there runs it.
func (a *analysis) nameWord(w word) {
	if w.lit {
		if i := strings.IndexByte(w.val, '['); i >= 0 {
			a.sinkText(w.val[i:])
		}
		return
	}
	if w.taint {
		a.unverify()
		return
	}
	if a.lenient == 0 {
		a.nameRefs = append(a.nameRefs, w.refs...)
	}
}

func (a *analysis) add(c candidate) {
	if c.text == "" {
		return
	}
	c.weak = c.weak || a.lenient > 0
	c.text = asciiLower(c.text)
	if c.wild != "" {
		c.wild = asciiLower(c.wild)
	}
	if n := len(a.cands); n > 0 && a.cands[n-1] == c {
		return
	}
	a.cands = append(a.cands, c)
}

// addWords adds the candidate for a word list, the first word replaced by
// first when first is not "".
func (a *analysis) addWords(first string, ws []word, open bool) {
	n, wild := len(first), false
	for _, x := range ws {
		n += len(x.val) + 1
		wild = wild || !x.lit
	}
	var t strings.Builder
	t.Grow(n)
	t.WriteString(first)
	rest := ws
	if first != "" {
		rest = ws[1:]
	}
	for _, x := range rest {
		if t.Len() > 0 {
			t.WriteByte(' ')
		}
		t.WriteString(x.val)
	}
	c := candidate{text: t.String(), open: open}
	if wild {
		var w strings.Builder
		w.Grow(n)
		w.WriteString(first)
		for _, x := range rest {
			if x.lit {
				if w.Len() > 0 {
					w.WriteByte(' ')
				}
				w.WriteString(x.val)
				continue
			}
			if w.Len() > 0 && !x.lead {
				w.WriteByte(' ')
			}
			w.WriteString(x.wild)
		}
		c.wild = w.String()
	}
	a.add(c)
}

func (a *analysis) addProbe(name, base, sub string, args []word) {
	p := probe{name: name, base: base, sub: sub}
	if len(args) > 0 {
		p.args = make([]string, 0, len(args))
	}
	for _, w := range args {
		s := asciiLower(w.literalParts())
		p.args = append(p.args, s)
		if len(s) > 1 && s[0] == '-' && s[1] != '-' {
			for i := 1; i < len(s) && isAlnum(s[i]); i++ {
				p.flags |= flagBit(s[i])
			}
		}
	}
	a.probes = append(a.probes, p)
}

func flagBit(c byte) uint64 {
	switch {
	case 'a' <= c && c <= 'z':
		return 1 << (c - 'a')
	case '0' <= c && c <= '9':
		return 1 << (26 + c - '0')
	}
	return 0
}

// addSus records a text that may hold the command that runs, and the text
// a shell would make of it later: r\m, "r"m and r${x}m are all rm.
func (a *analysis) addSus(s string) {
	if s == "" {
		return
	}
	s = asciiLower(s)
	a.sus = append(a.sus, s)
	if strings.ContainsAny(s, "\\'\"$`") {
		if n := shellNormal(s); n != s {
			a.sus = append(a.sus, n)
		}
	}
}

// shellNormal drops quotes, backslashes and expansions ($x, ${...},
// $(...), `...`) from text a shell may parse later.
func shellNormal(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\'', '"':
		case '`':
			if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
				i += j + 1
			}
		case '$':
			switch {
			case i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '('):
				open, close := s[i+1], byte('}')
				if open == '(' {
					close = ')'
				}
				depth := 0
				j := i + 1
				for ; j < len(s); j++ {
					if s[j] == open {
						depth++
					} else if s[j] == close {
						if depth--; depth == 0 {
							break
						}
					}
				}
				i = j
			default:
				for i+1 < len(s) && (s[i+1] == '_' || isAlnum(s[i+1])) {
					i++
				}
			}
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// suspect records an argument that may name the command that runs.
func (a *analysis) suspect(w word) {
	a.addSus(w.literalParts())
	for _, e := range w.elems {
		a.suspect(e)
	}
	if w.lit {
		return
	}
	if w.taint {
		a.anySus = true
		return
	}
	a.susRefs = append(a.susRefs, w.refs...)
}

// suspectText records only the literal parts of a word.
func (a *analysis) suspectText(w word) {
	a.addSus(w.literalParts())
}

func (a *analysis) suspectAll(ws []word) {
	for _, w := range ws {
		a.suspect(w)
	}
}

func (a *analysis) suspectCmd(c *scmd) {
	a.suspectAll(c.words)
	a.suspectAll(c.stdin)
}

// script analyses shell text that a shell parses again (sh -c, eval, ...).
func (a *analysis) script(src string, depth int) {
	if depth > MaxNesting {
		a.unverify()
		return
	}
	l := &lexer{a: a, src: src, depth: depth}
	l.run()
}

// lenientScript reads text that may or may not be shell code: everything
// it finds asks at most, and it is never unverifiable.
func (a *analysis) lenientScript(src string, depth int) {
	if depth > MaxNesting || src == "" {
		return
	}
	a.lenient++
	a.script(src, depth)
	a.lenient--
}

// What a command does with its arguments and stdin, for pipelines.
type kind uint8

const (
	kNone    kind = iota
	kData         // arguments are data, stdin is data
	kUnknown      // may run its arguments or its input
)

// pipeline analyses the stages of one pipeline.
func (a *analysis) pipeline(stages []*scmd, depth int) {
	for _, c := range stages {
		k := a.command(c, depth, c.stage > 0)
		switch k {
		case kData:
			a.data = append(a.data, c)
		case kUnknown:
			a.unknown = true
		}
	}
}

// command analyses one simple command.
func (a *analysis) command(c *scmd, depth int, piped bool) kind {
	for _, w := range c.words {
		if w.taint {
			a.construct()
		}
	}
	ws := c.words
	if c.hdr == hdrFor {
		// for NAME [in WORDS]; select NAME [in WORDS]
		a.data = append(a.data, c)
		if len(ws) > 1 {
			a.assign(ws[1].val)
			for _, w := range ws[2:] {
				if !w.lit {
					a.construct() // NAME takes values built at run time
				}
			}
		}
		return kData
	}
	a.addWords("", ws, false)
	for len(ws) > 0 && ws[0].lit && ws[0].eq < 0 && reserved[ws[0].val] {
		ws = ws[1:]
	}
	if len(ws) > 0 && ws[0].lit {
		switch ws[0].val {
		case "((":
			return kData
		case "[[":
			a.cond(ws[1:])
			return kData
		}
	}
	k := a.words(ws, c, depth, false, piped)
	// "coproc NAME { ...", "function f { ...": a brace group inside.
	for i := 1; i < len(ws); i++ {
		if ws[i].lit && ws[i].val == "{" {
			a.words(ws[i+1:], c, depth, false, piped)
		}
	}
	if k == kData && writesFile(c) {
		a.suspectCmd(c) // what it writes may be run later
	}
	return k
}

func writesFile(c *scmd) bool {
	for _, o := range c.outs {
		if !o.lit {
			return true
		}
		switch o.val {
		case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
			continue
		}
		if strings.HasPrefix(o.val, "/dev/fd/") {
			continue
		}
		return true
	}
	return false
}

// assignments processes and strips the leading NAME=value words.
func (a *analysis) assignments(ws []word) []word {
	for len(ws) > 0 && ws[0].eq >= 0 {
		a.assignment(ws[0])
		ws = ws[1:]
	}
	return ws
}

// specialVars are shell variables whose value bash runs.
var specialVars = setOf("PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND")

// cmdEnvVars are environment variables whose value programs run as a
// command or load as code.
var cmdEnvVars = setOf("GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
	"GIT_ASKPASS", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "PAGER", "MANPAGER", "EDITOR", "VISUAL",
	"SSH_ASKPASS", "SUDO_ASKPASS", "LESSOPEN", "LESSCLOSE", "BROWSER", "RSYNC_RSH", "CVS_RSH",
	"LD_PRELOAD", "LD_AUDIT", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "PYTHONSTARTUP", "TAR_OPTIONS",
	"SUDO_EDITOR", "FCEDIT")

func (a *analysis) assignment(w word) {
	name, value, ok := w.assignment()
	if !ok {
		return
	}
	a.assign(name)
	if i := strings.IndexByte(w.val[:w.eq], '['); i >= 0 {
		a.sinkText(w.val[i:w.eq])
	}
	switch {
	case name == "BASH_ENV" || name == "ENV":
		a.unverify() // a shell started later sources the file
	case name == "BASH_CMDS" || name == "BASH_ALIASES":
		a.unverify() // BASH_CMDS[ls]=/bin/rm: a name now runs another program
	case (specialVars[name] || cmdEnvVars[name]) && w.exp:
		// A value some program runs, built at run time.
		if w.taint {
			a.unverify()
		} else if a.lenient == 0 {
			a.nameRefs = append(a.nameRefs, w.refs...)
		}
	}
	if w.exp {
		a.construct()
	}
	// The value may be the command something runs later (X=rm; $X);
	// where it is used is checked there.
	known := value
	if w.exp {
		known = strings.ReplaceAll(w.wild[strings.IndexByte(w.wild, '=')+1:], "\x00", " ")
	}
	a.addSus(known)
	for _, e := range w.elems {
		a.addSus(e.literalParts())
		if !e.lit {
			a.construct()
		}
	}
}

// cond looks at the words of [[ ... ]]: arithmetic comparisons evaluate
// their operands, -v evaluates a variable name.
func (a *analysis) cond(ws []word) {
	arith := false
	for i, w := range ws {
		if !w.lit {
			continue
		}
		switch w.val {
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			arith = true
		case "-v":
			if i+1 < len(ws) {
				a.nameWord(ws[i+1])
			}
		}
	}
	if !arith {
		return
	}
	for _, w := range ws {
		if w.lit {
			a.sinkText(w.val)
		} else {
			for _, r := range w.refs {
				a.sinkName(r)
			}
		}
	}
}

// words analyses a command's words: the command word decides how its
// arguments are read (its family's function in kindRun). Wrappers loop
// with the command they run.
func (a *analysis) words(ws []word, c *scmd, depth int, open, piped bool) kind {
	for n := 0; ; n++ {
		if n > maxWrappers {
			a.unverify()
			return kUnknown
		}
		ws = a.assignments(ws)
		x, k, ok := a.commandWord(ws, c, depth, open, piped)
		if !ok {
			return k
		}
		s := kindRun[x.h.kind](a, x)
		if !s.more {
			return s.k
		}
		ws, open = s.next, s.open
	}
}

// cmdCall is one command word with its arguments, as words hands it to the
// family that knows the program.
type cmdCall struct {
	c           *scmd
	depth       int
	open        bool // xargs appends arguments read at run time
	piped       bool
	lname, base string // the command word and its basename, lowercased
	h           handler
	args        []word
}

// step is a family's answer: the kind of the command, or (more) the words
// of the command it runs next.
type step struct {
	k    kind
	next []word
	more bool
	open bool // xargs appends arguments to next
}

func done(k kind) step { return step{k: k} }

// then goes on with the command next, which runs as x does.
func (x cmdCall) then(next []word) step { return step{next: next, more: true, open: x.open} }

func unknownArgs(a *analysis, x cmdCall) step {
	// A command the analyser does not know: any argument, and its input,
	// may be a command it runs.
	a.suspectAll(x.args)
	a.suspectAll(x.c.stdin)
	return done(kUnknown)
}

// commandWord reads the command word of ws and records its candidates and
// probe; ok is false when the command ends here with kind k.
func (a *analysis) commandWord(ws []word, c *scmd, depth int, open, piped bool) (cmdCall, kind, bool) {
	if len(ws) == 0 {
		if open {
			a.unverify() // the command comes from the input (xargs env)
		}
		return cmdCall{}, kNone, false
	}
	a.addWords("", ws, open)
	name := ws[0]
	if !name.lit || name.tilde && !strings.Contains(name.val, "/") {
		a.unverify() // the command word is only known at run time
		return cmdCall{}, kUnknown, false
	}
	lname := asciiLower(name.val)
	base := basename(lname)
	if base == "" {
		return cmdCall{}, kNone, false
	}
	if base != lname {
		a.addWords(base, ws, open)
	}
	h := lookup(base)
	if h.kind != cGit {
		a.addProbe(lname, base, "", ws[1:])
	}
	if open && codeArgs[h.kind] {
		// xargs appends its input to a command whose arguments may be
		// code or options (GNU tools take options after operands).
		a.unverify()
		return cmdCall{}, kUnknown, false
	}
	return cmdCall{c: c, depth: depth, open: open, piped: piped, lname: lname, base: base, h: h, args: ws[1:]}, 0, true
}

// lookup finds the handler of a command's basename (python3.12 is python).
func lookup(base string) handler {
	h, ok := commands[base]
	if !ok {
		h = commands[strings.TrimRight(base, "0123456789.")]
	}
	return h
}

func nameOf(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		return s[:i]
	}
	return s
}

// codeArgs are the kinds of commands whose arguments may be code.
var codeArgs = map[cmdKind]bool{cFind: true, cAwk: true, cSed: true, cMake: true, cTrap: true,
	cAlias: true, cSsh: true, cSu: true, cSg: true, cScript: true, cEditor: true, cStdin: true,
	cOptAsk: true, cCrontab: true}

// codeString analyses a word that a shell will parse as a script.
func (a *analysis) codeString(w word, depth int) {
	if !w.lit {
		a.unverify() // its value is parsed again: anything may run
		return
	}
	a.script(w.val, depth+1)
}

// joinCode analyses words joined with spaces as a script (watch, ssh, sg).
func (a *analysis) joinCode(ws []word, depth int) {
	parts := make([]string, 0, len(ws))
	for _, w := range ws {
		if !w.lit {
			a.unverify()
			return
		}
		parts = append(parts, w.val)
	}
	a.script(strings.Join(parts, " "), depth+1)
}

func (a *analysis) eval(args []word, depth int, open bool) {
	if open {
		a.unverify()
		return
	}
	a.joinCode(args, depth)
}

// denyPattern is a deny rule's pattern prepared for matching.
type denyPattern struct {
	p     string   // ASCII-lowercased pattern
	words []string // its words
	key   string   // the first word that is not only stars; "" when none
	// keyIn: the key holds a byte that separates words, so it is looked
	// for inside suspect texts rather than compared with their words.
	keyIn string
}

func newDenyPattern(lower string) *denyPattern {
	d := &denyPattern{p: lower, words: strings.Split(lower, " ")}
	for _, w := range d.words {
		if strings.Trim(w, "*") != "" {
			d.key = w
			break
		}
	}
	for i := 0; i < len(d.key); i++ {
		if c := d.key[i]; c != '*' && !subwordByte(c) {
			d.keyIn = "*" + d.key + "*"
			break
		}
	}
	return d
}

// denies reports whether the rule certainly matches: its glob matches a
// candidate's text (or, for xargs, the text with arguments appended).
func (a *analysis) denies(d *denyPattern) bool {
	for _, c := range a.cands {
		if !c.weak && c.matches(d) {
			return true
		}
	}
	return false
}

func (c *candidate) matches(d *denyPattern) bool {
	return globMatchWord(d.p, c.text) || c.open && globPrefix(d.p, c.text+" ")
}

// mayMatch reports whether the command may run something the rule names:
// a weak candidate matches, some value of the expansions in a candidate
// makes it match, a probe names the same program with the rule's words
// among its arguments, or a suspect word names the rule's first word.
func (a *analysis) mayMatch(d *denyPattern) bool {
	if d.key == "" {
		return false // the pattern is only stars: it matched already
	}
	if a.anySus {
		return true
	}
	for i := range a.cands {
		c := &a.cands[i]
		if c.weak && c.matches(d) {
			return true
		}
		if c.wild != "" || c.open {
			t := c.wild
			if t == "" {
				t = c.text
			}
			if c.open {
				t += "\x00"
			}
			if globIntersectWord(d.p, t) {
				return true
			}
		}
	}
	for i := range a.probes {
		if a.probes[i].loose(d) {
			return true
		}
	}
	for _, s := range a.sus {
		if d.keyIn != "" {
			if globMatch(d.keyIn, s) {
				return true
			}
			continue
		}
		if eachSub(s, func(w string) bool { return globMatch(d.key, w) || globMatch(d.key, basename(w)) }) {
			return true
		}
	}
	return false
}

// loose: the command word matches the rule's first word (and a subcommand
// known by position its second), and every other word of the rule that is
// not only stars is found among the arguments, or for a short-flag cluster
// such as -rf its letters among the short options.
func (p *probe) loose(d *denyPattern) bool {
	if len(d.words) < 2 {
		return false
	}
	if !globMatch(d.words[0], p.name) && !globMatch(d.words[0], p.base) {
		return false
	}
	rest := d.words[1:]
	need := false
	if p.sub != "" {
		if strings.Trim(rest[0], "*") != "" {
			if !globMatch(rest[0], p.sub) {
				return false
			}
			need = true
		}
		rest = rest[1:]
	}
	for _, w := range rest {
		if strings.Trim(w, "*") == "" {
			continue
		}
		need = true
		if !p.has(w) {
			return false
		}
	}
	return need
}

func (p *probe) has(w string) bool {
	if bits, ok := flagCluster(w); ok && bits&p.flags == bits {
		return true
	}
	for _, s := range p.args {
		if globMatch(w, s) || eachSub(s, func(x string) bool { return globMatch(w, x) }) {
			return true
		}
	}
	return false
}

// flagCluster returns the letters of a pattern word such as -rf or -rf*.
func flagCluster(w string) (uint64, bool) {
	w = strings.TrimRight(w, "*")
	if len(w) < 2 || w[0] != '-' || w[1] == '-' {
		return 0, false
	}
	var bits uint64
	for i := 1; i < len(w); i++ {
		if !isAlnum(w[i]) {
			return 0, false
		}
		bits |= flagBit(w[i])
	}
	return bits, true
}

// subwordByte: bytes that make up the words compared with a rule's first
// word; any other byte separates them ("--exec=rm", "rm;x", "'rm x'").
func subwordByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '.' || c == '/' || c == '-'
}

// eachSub calls f with each word of s until f returns true.
func eachSub(s string, f func(string) bool) bool {
	for i := 0; i < len(s); {
		for i < len(s) && !subwordByte(s[i]) {
			i++
		}
		j := i
		for j < len(s) && subwordByte(s[j]) {
			j++
		}
		if j > i && f(s[i:j]) {
			return true
		}
		i = j
	}
	return false
}
