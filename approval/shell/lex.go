package shell

import (
	"strings"
	"unicode/utf8"
)

// The shell lexer of the deny side: it splits shell text into simple
// commands the way bash does — words with quotes removed, redirections
// taken out, here-documents attached — and hands each to the analysis.
// Command and process substitutions are analysed where they stand; strings
// that a shell will parse again (sh -c, eval, backticks) are lexed again,
// at most MaxNesting deep.
//
// Where bash's grammar is not followed exactly the lexer errs towards
// finding more commands, never fewer: an operator it does not know splits,
// a construct it cannot close makes the command unverifiable.

// wildByte stands, in the wild form of a word or candidate, for text only
// known at run time (an expansion). A command containing NUL is
// unverifiable, so the byte never stands for itself.
const wildByte = 0

// maxSubstNesting bounds $( ... ) nesting, which is lexed in place and so
// costs no extra work per level, only stack.
const maxSubstNesting = 100

// word is one shell word after quote removal.
type word struct {
	val string // value; expansions appear as written, substitutions as placeholder
	// wild is val with each expansion replaced by wildByte; "" when lit.
	wild string
	lit  bool // no expansion, glob or brace expansion: val is exactly what runs
	// exp: a parameter expansion, substitution or arithmetic expansion
	// occurs (lit counts globs and braces too).
	exp bool
	// taint: the value may be built at run time from data the command
	// itself controls — a substitution, a glob or brace expansion, a
	// parameter expansion with an operator, $"..." — as opposed to plain
	// references to variables, whose values refs names.
	taint bool
	lead  bool     // starts with an unquoted expansion: may produce no word at all
	tilde bool     // starts with an unquoted '~'
	eq    int      // index in val of the '=' of an assignment word, or -1
	refs  []string // names of the parameters it expands
	elems []word   // the elements of a compound assignment NAME=( ... )
}

// assignment reports whether w is NAME=value (NAME+=, NAME[i]=) and returns
// the name (without subscript) and the value text.
func (w *word) assignment() (name, value string, ok bool) {
	if w.eq < 0 {
		return "", "", false
	}
	name = strings.TrimSuffix(w.val[:w.eq], "+")
	if i := strings.IndexByte(name, '['); i > 0 {
		name = name[:i]
	}
	return name, w.val[w.eq+1:], true
}

// literalParts is the word's text with the expansions left out: what is
// known of it before it runs.
func (w *word) literalParts() string {
	if w.lit {
		return w.val
	}
	return strings.ReplaceAll(w.wild, "\x00", " ")
}

type wordBuf struct {
	val, wild   []byte
	exp, pat    bool
	taint       bool
	lead, tilde bool
	// quoted is len(val) at the first quote, escape or expansion: the
	// '=' of an assignment must come before it. -1 when none.
	quoted    int
	refs      []string
	braceOpen int  // unquoted '{' not yet closed
	braceList bool // unquoted ',' or ".." inside an open brace
	bracket   bool // unquoted '[' seen
	elems     []word
}

func (b *wordBuf) byte1(c byte) {
	b.val = append(b.val, c)
	if b.wild != nil {
		b.wild = append(b.wild, c)
	}
}

// bytes appends literal text.
func (b *wordBuf) bytes(s string) {
	b.val = append(b.val, s...)
	if b.wild != nil {
		b.wild = append(b.wild, s...)
	}
}

func (b *wordBuf) mark() {
	if b.quoted < 0 {
		b.quoted = len(b.val)
	}
}

// expansion appends an expansion written as text.
func (b *wordBuf) expansion(text string, quoted, taint bool) {
	if len(b.val) == 0 && !quoted {
		b.lead = true
	}
	b.mark()
	if b.wild == nil {
		b.wild = append(make([]byte, 0, len(b.val)+8), b.val...)
	}
	b.val = append(b.val, text...)
	b.wild = append(b.wild, wildByte)
	b.exp = true
	b.taint = b.taint || taint
}

func (b *wordBuf) pattern() {
	b.pat = true
}

func (b *wordBuf) word() word {
	w := word{val: string(b.val), exp: b.exp, lead: b.lead, tilde: b.tilde, refs: b.refs, eq: -1, elems: b.elems}
	w.lit = !b.exp && !b.pat
	w.taint = b.taint || b.pat
	if !w.lit {
		if b.wild != nil {
			w.wild = string(b.wild)
		} else {
			w.wild = w.val
		}
	}
	if e := strings.IndexByte(w.val, '='); e > 0 && (b.quoted < 0 || e < b.quoted) && isAssignment(w.val[:e+1]) {
		w.eq = e
		if !b.exp {
			// Assignments undergo neither globbing nor brace expansion.
			w.lit, w.taint, w.wild = true, b.taint, ""
		}
	}
	return w
}

// scmd is one simple command as lexed.
type scmd struct {
	words []word
	outs  []word // targets of redirections that write a file
	stdin []word // here-strings and here-document bodies
	ins   bool   // stdin redirected from a file or descriptor
	pipe  int    // pipeline number within its script
	stage int    // position in the pipeline
	head  bool   // only reserved words so far: the next word is in command position
	hdr   int    // hdrCase, hdrFor: the command is a compound command's header
	arith bool   // for (( ... ))
}

const (
	hdrNone = iota
	hdrCase
	hdrFor
)

type heredoc struct {
	delim     string
	quoted    bool // body is literal
	stripTabs bool // <<-
	cmd       *scmd
}

type lexer struct {
	a     *analysis
	src   string
	i     int
	depth int  // re-parsing depth (sh -c, eval, backticks)
	nest  int  // in-place $( ... ) nesting
	stop  bool // a $( ... ) body: ends at an unmatched ')'
	ended bool // the ')' was found
	top   bool // record the canonical text of the whole command
	canon []byte

	cmds    []*scmd
	cur     *scmd
	pipe    int
	stage   int
	parens  int
	cases   []bool // open case commands; true while patterns are read
	cond    bool   // inside [[ ... ]]
	pending []*heredoc
	scratch []byte // reused for the bytes of the word being read
}

// reserved words, recognized in command position.
var reserved = setOf("{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done",
	"while", "until", "coproc", "function", "in")

func (l *lexer) cmd() *scmd {
	if l.cur == nil {
		l.cur = &scmd{pipe: l.pipe, stage: l.stage, head: true}
	}
	return l.cur
}

func (l *lexer) canonAdd(s string) {
	if !l.top {
		return
	}
	if len(l.canon) > 0 {
		l.canon = append(l.canon, ' ')
	}
	l.canon = append(l.canon, s...)
}

// flush ends the current simple command.
func (l *lexer) flush() {
	if c := l.cur; c != nil {
		l.cur = nil
		if c.hdr == hdrCase {
			return // case WORD in: data
		}
		if len(c.words) > 0 || len(c.outs) > 0 || len(c.stdin) > 0 {
			l.cmds = append(l.cmds, c)
		}
	}
}

// op ends the current simple command at a control operator.
func (l *lexer) op(text string) {
	if text == "\n" {
		if c := l.cur; c != nil && c.hdr == hdrCase {
			return // case WORD <newline> in
		}
	} else {
		l.canonAdd(text)
	}
	l.flush()
	switch text {
	case "|", "|&":
		l.a.fed = true
		l.stage++
	default:
		l.pipe++
		l.stage = 0
	}
	switch text {
	case ";;", ";&", ";;&":
		if n := len(l.cases); n > 0 {
			l.cases[n-1] = true
		}
	}
}

func (l *lexer) addWord(w word) {
	c := l.cmd()
	l.canonAdd(w.val)
	if c.head && w.lit && w.eq < 0 {
		switch w.val {
		case "case":
			c.hdr = hdrCase
			c.head = false
			c.words = append(c.words, w)
			return
		case "for", "select":
			c.hdr = hdrFor
			c.head = false
			c.words = append(c.words, w)
			return
		case "[[":
			l.cond = true
			c.head = false
			c.words = append(c.words, w)
			return
		case "esac":
			if n := len(l.cases); n > 0 {
				l.cases = l.cases[:n-1]
			}
			return
		}
		if reserved[w.val] {
			c.words = append(c.words, w)
			return
		}
	}
	if c.hdr == hdrFor && w.lit && w.eq < 0 && w.val == "do" && (len(c.words) == 2 || c.arith) {
		// for NAME do ...; for ((...)) do ...: no ';' needed before do
		l.flush()
		l.cmd().words = append(l.cmd().words, w)
		return
	}
	c.head = false
	if l.cond && w.lit && w.val == "]]" {
		l.cond = false
	}
	if c.hdr == hdrCase && len(c.words) == 2 {
		if w.lit && w.val == "in" {
			l.cur = nil
			l.cases = append(l.cases, true)
			return
		}
		c.hdr = hdrNone // not "case WORD in": read it as a command
	}
	c.words = append(c.words, w)
}

// run lexes until the end of the source (or the ')' of a $( ... ) body) and
// then analyses the commands found.
func (l *lexer) run() {
	for l.i < len(l.src) && !l.a.abort {
		c := l.src[l.i]
		if n := len(l.cases); n > 0 && l.cases[n-1] && l.cur == nil {
			l.pattern(c)
			continue
		}
		if l.cond {
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				l.i++
			} else {
				l.wordOrSkip()
			}
			continue
		}
		if l.step(c) {
			return // the ')' of a $( ... ) body
		}
	}
	l.flush()
	if l.stop && !l.ended {
		l.a.unverify() // $( without its ')'
	}
	if l.cond || len(l.cases) > 0 {
		l.a.unverify() // [[ or case not closed
	}
	if len(l.pending) > 0 {
		l.bodies() // here-documents on the last line: empty bodies
	}
	l.finish()
}

// step lexes what starts with c; true when it ended a $( ... ) body.
func (l *lexer) step(c byte) bool {
	next := byte(0)
	if l.i+1 < len(l.src) {
		next = l.src[l.i+1]
	}
	switch c {
	case ' ', '\t':
		l.i++
	case '\\':
		if next == '\n' {
			l.i += 2
			return false
		}
		l.wordOrRedirect()
	case '\n':
		l.i++
		l.op("\n")
		l.bodies()
	case '\r':
		l.i++
		l.op(";")
	case ';', '&', '|':
		l.control()
	case '(':
		if next == '(' && l.arithCommand() {
			return false
		}
		l.i++
		l.op("(")
		l.parens++
	case ')':
		return l.closeParen()
	case '<', '>':
		if next == '(' {
			l.wordOrRedirect()
			return false
		}
		l.redirect()
	case '#':
		l.comment()
	default:
		l.wordOrRedirect()
	}
	return false
}

// controlOps are the control operators, longest first.
var controlOps = []string{";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|"}

// control reads a control operator (or the redirection &>).
func (l *lexer) control() {
	rest := l.src[l.i:]
	if strings.HasPrefix(rest, "&>") {
		l.redirect()
		return
	}
	for _, op := range controlOps {
		if strings.HasPrefix(rest, op) {
			l.i += len(op)
			l.op(op)
			return
		}
	}
}

// closeParen reads a ')': the end of a $( ... ) body (true), or of a
// subshell.
func (l *lexer) closeParen() bool {
	l.i++
	if l.stop && l.parens == 0 {
		l.ended = true
		l.flush()
		l.finish()
		return true
	}
	if l.parens > 0 {
		l.parens--
	}
	l.op(")")
	return false
}

// finish analyses the commands lexed, pipeline by pipeline.
func (l *lexer) finish() {
	cmds := l.cmds
	l.cmds = nil
	for len(cmds) > 0 {
		n := 1
		for n < len(cmds) && cmds[n].pipe == cmds[0].pipe {
			n++
		}
		l.a.pipeline(cmds[:n], l.depth)
		cmds = cmds[n:]
	}
}

func (l *lexer) comment() {
	j := strings.IndexByte(l.src[l.i:], '\n')
	if j < 0 {
		l.i = len(l.src)
	} else {
		l.i += j // the newline is handled next
	}
}

// pattern reads case patterns up to their ')'.
func (l *lexer) pattern(c byte) {
	n := len(l.cases)
	switch c {
	case ' ', '\t', '\r', '(', '|', ';', '&':
		l.i++
	case '\n':
		l.i++
		l.bodies()
	case ')':
		l.i++
		l.cases[n-1] = false
	case '#':
		l.comment()
	default:
		start := l.i
		w, ok := l.word()
		if !ok {
			if l.i == start {
				l.i++
			}
			return
		}
		if w.lit && w.val == "esac" {
			l.cases = l.cases[:n-1]
		}
	}
}

// wordOrRedirect lexes a word, or a redirection whose file descriptor is
// written before it (2>x, {fd}>x).
func (l *lexer) wordOrRedirect() {
	src := l.src
	j := l.i
	for j < len(src) && '0' <= src[j] && src[j] <= '9' {
		j++
	}
	if j == l.i && j < len(src) && src[j] == '{' {
		k := j + 1
		for k < len(src) && (src[k] == '_' || isAlnum(src[k])) {
			k++
		}
		if k > j+1 && k < len(src) && src[k] == '}' {
			j = k + 1
		}
	}
	if j > l.i && j < len(src) && (src[j] == '<' || src[j] == '>') && !(j+1 < len(src) && src[j+1] == '(') {
		l.i = j
		l.redirect()
		return
	}
	l.wordOrSkip()
}

// wordOrSkip lexes a word at l.i, or skips a byte no word starts with.
func (l *lexer) wordOrSkip() {
	start := l.i
	if w, ok := l.word(); ok {
		l.addWord(w)
	} else if l.i == start {
		l.i++
	}
}

var redirOps = []string{"&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"}

// redirect lexes a redirection operator and its target.
func (l *lexer) redirect() {
	var op string
	for _, o := range redirOps {
		if strings.HasPrefix(l.src[l.i:], o) {
			op = o
			break
		}
	}
	c := l.cmd()
	if op == "<<" || op == "<<-" {
		h, end, ok := readHeredoc(l.src, l.i+2)
		l.canonAdd(l.src[l.i:end])
		l.i = end
		if !ok {
			l.a.unverify()
			return
		}
		h.cmd = c
		l.pending = append(l.pending, &h)
		l.a.fed = true
		return
	}
	l.i += len(op)
	l.canonAdd(op)
	for l.i < len(l.src) {
		if c := l.src[l.i]; c == ' ' || c == '\t' {
			l.i++
		} else if c == '\\' && l.i+1 < len(l.src) && l.src[l.i+1] == '\n' {
			l.i += 2
		} else {
			break
		}
	}
	w, ok := l.word()
	if !ok {
		return // a syntax error: nothing runs
	}
	l.canonAdd(w.val)
	switch op {
	case "<<<":
		c.stdin = append(c.stdin, w)
		l.a.fed = true
	case "<":
		c.ins = true
		l.a.fed = true
	case "<&":
		c.ins = c.ins || !(w.lit && w.val == "-")
	case ">", ">>", ">|", "&>", "&>>", "<>":
		c.outs = append(c.outs, w)
		c.ins = c.ins || op == "<>"
	case ">&":
		if !(w.lit && (w.val == "-" || strings.Trim(w.val, "0123456789-") == "")) {
			c.outs = append(c.outs, w)
		}
	}
}

// bodies reads the bodies of the pending here-documents, starting at l.i
// (just after a newline).
func (l *lexer) bodies() {
	if len(l.pending) == 0 {
		return
	}
	bodies, last := readBodies(l.src, l.i, l.pending)
	l.i = last + 1
	for k, h := range l.pending {
		b := bodies[k]
		var w word
		if h.quoted {
			w = word{val: b, lit: true, eq: -1}
		} else {
			sub := &lexer{a: l.a, src: b, depth: l.depth, nest: l.nest}
			w = sub.body()
		}
		h.cmd.stdin = append(h.cmd.stdin, w)
		// Read as a script too, in case the text reaches a shell some
		// other way: what it finds can only make the call ask.
		l.a.lenientScript(b, l.depth+1)
	}
	l.pending = l.pending[:0]
}

// body reads an unquoted here-document body: like double quotes, but '"'
// is an ordinary byte.
func (l *lexer) body() word {
	b := wordBuf{quoted: -1}
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch c {
		case '\\':
			if l.i+1 < len(l.src) && strings.IndexByte("$`\\\n", l.src[l.i+1]) >= 0 {
				if l.src[l.i+1] != '\n' {
					b.byte1(l.src[l.i+1])
				}
				l.i += 2
				continue
			}
			b.byte1(c)
			l.i++
		case '$':
			l.dollar(&b, true)
		case '`':
			l.backtick(&b, true)
		default:
			b.byte1(c)
			l.i++
		}
	}
	return b.word()
}

// word lexes one word at l.i; false when there is none (an operator, a
// blank or the end).
func (l *lexer) word() (word, bool) {
	// The scratch buffer is the word's while it is read (compound calls
	// word again for the elements of NAME=( ... )).
	b := wordBuf{quoted: -1, val: l.scratch[:0]}
	l.scratch = nil
	defer func() { l.scratch = b.val[:0] }()
	start := l.i
	src := l.src
loop:
	for l.i < len(src) {
		c := src[l.i]
		switch c {
		case ' ', '\t', '\n', '\r':
			break loop
		case ';', '&', '|', '(', ')', '<', '>':
			if !l.inWordOperator(&b, c, start) {
				break loop
			}
		case '\\':
			l.escape(&b)
		case '\'':
			l.squote(&b)
		case '"':
			b.mark()
			l.i++
			l.dquote(&b)
		case '$':
			l.dollar(&b, false)
		case '`':
			l.backtick(&b, false)
		default:
			l.wordByte(&b, c, start)
		}
	}
	if l.i == start {
		return word{}, false
	}
	w := b.word()
	if w.lit && w.eq < 0 && w.val == "" && b.quoted < 0 {
		return word{}, false
	}
	l.literalCode(w.literalParts())
	for _, e := range w.elems {
		l.literalCode(e.literalParts())
	}
	return w, true
}

// inWordOperator reads an operator byte that belongs to the word: inside
// [[ ]], the "(" of NAME=( ... ) or of an extglob, a process substitution.
// false: the operator ends the word.
func (l *lexer) inWordOperator(b *wordBuf, c byte, start int) bool {
	src := l.src
	if l.cond && !(b.quoted < 0 && string(b.val) == "]]") {
		b.byte1(c)
		l.i++
		return true
	}
	if c == '(' {
		if n := len(b.val); n > 0 && b.quoted < 0 && (b.val[n-1] == '=' && isAssignment(string(b.val))) {
			l.compound(b)
			return true
		}
		if l.i > start && strings.IndexByte("@!+*?", src[l.i-1]) >= 0 &&
			!(l.i-1 == start && src[start] == '!' && (l.cur == nil || l.cur.head)) {
			// "!(" in command position is "! (": negation, subshell
			l.extglob(b)
			return true
		}
	}
	if (c == '<' || c == '>') && l.i+1 < len(src) && src[l.i+1] == '(' {
		l.i += 2
		l.subst()
		b.expansion(placeholder, false, true)
		return true
	}
	return false
}

// escape reads a backslash and what it quotes (a line continuation is
// dropped).
func (l *lexer) escape(b *wordBuf) {
	src := l.src
	switch {
	case l.i+1 >= len(src):
		b.mark()
		b.byte1('\\')
		l.i++
	case src[l.i+1] == '\n':
		l.i += 2 // line continuation
	default:
		b.mark()
		b.byte1(src[l.i+1])
		l.i += 2
	}
}

// squote reads a single-quoted string.
func (l *lexer) squote(b *wordBuf) {
	src := l.src
	b.mark()
	j := strings.IndexByte(src[l.i+1:], '\'')
	if j < 0 {
		l.a.unverify()
		b.bytes(src[l.i+1:])
		l.i = len(src)
		return
	}
	b.bytes(src[l.i+1 : l.i+1+j])
	l.i += j + 2
}

// wordByte reads an unquoted byte, noting globs, brace expansions, a
// leading tilde and zsh's =cmd.
func (l *lexer) wordByte(b *wordBuf, c byte, start int) {
	next := byte(0)
	if l.i+1 < len(l.src) {
		next = l.src[l.i+1]
	}
	switch c {
	case '*', '?':
		b.pattern()
	case '[':
		b.bracket = true
	case ']':
		if b.bracket {
			b.pattern()
		}
	case '{':
		b.braceOpen++
	case ',':
		b.braceList = b.braceList || b.braceOpen > 0
	case '.':
		b.braceList = b.braceList || b.braceOpen > 0 && next == '.'
	case '}':
		if b.braceOpen > 0 {
			b.braceOpen--
			if b.braceList {
				b.pattern()
			}
		}
	case '~':
		b.tilde = b.tilde || l.i == start
	case '=':
		if l.i == start && isAlpha(next) {
			b.pattern() // zsh: =cmd is the path of cmd
		}
	}
	b.byte1(c)
	l.i++
}

// literalCode reads literal text that looks like it holds shell code — a
// substitution that something may evaluate later (eval "$x", ${x@P},
// arithmetic on a[$(...)], PS4, git aliases, ...) — leniently: what it
// finds makes the call ask.
func (l *lexer) literalCode(s string) {
	if strings.Contains(s, "BASH_FUNC_") {
		l.a.unverify() // a function definition bash imports from the environment
	}
	if strings.Contains(s, "$(") || strings.Contains(s, "`") || strings.Contains(s, "<(") || strings.Contains(s, ">(") {
		l.a.lenientScript(s, l.depth+1)
	}
}

// dquote reads the rest of a double-quoted string.
func (l *lexer) dquote(b *wordBuf) {
	src := l.src
	for l.i < len(src) {
		c := src[l.i]
		switch c {
		case '"':
			l.i++
			return
		case '\\':
			if l.i+1 < len(src) && strings.IndexByte("$`\"\\\n", src[l.i+1]) >= 0 {
				if src[l.i+1] != '\n' {
					b.byte1(src[l.i+1])
				}
				l.i += 2
				continue
			}
			b.byte1(c)
			l.i++
		case '$':
			l.dollar(b, true)
		case '`':
			l.backtick(b, true)
		default:
			b.byte1(c)
			l.i++
		}
	}
	l.a.unverify() // unbalanced '"'
}

// dollar reads an expansion starting at the '$' at l.i.
func (l *lexer) dollar(b *wordBuf, quoted bool) {
	src := l.src
	start := l.i
	next := byte(0)
	if l.i+1 < len(src) {
		next = src[l.i+1]
	}
	switch {
	case next == '(':
		if l.i+2 < len(src) && src[l.i+2] == '(' {
			if end, ok := l.arith(l.i+3, "))"); ok {
				l.i = end
				b.expansion(src[start:end], quoted, false)
				return
			}
		}
		l.i += 2
		l.subst()
		b.expansion(placeholder, quoted, true)
	case next == '[':
		end, ok := l.arith(l.i+2, "]")
		if !ok {
			l.a.unverify()
			end = len(src)
		}
		l.i = end
		b.expansion(src[start:end], quoted, false)
	case next == '{':
		l.param(b, quoted)
	case next == '\'' && !quoted:
		l.i += 2
		b.mark()
		l.ansiC(b)
	case next == '"' && !quoted:
		// $"..." is translated through a message catalog.
		l.i += 2
		sub := wordBuf{quoted: -1}
		l.dquote(&sub)
		b.expansion(string(sub.val), true, true)
		b.refs = append(b.refs, sub.refs...)
	case next == '_' || isAlpha(next):
		j := l.i + 1
		for j < len(src) && (src[j] == '_' || isAlnum(src[j])) {
			j++
		}
		l.i = j
		b.expansion(src[start:j], quoted, false)
		b.refs = append(b.refs, src[start+1:j])
	case '0' <= next && next <= '9' || next != 0 && strings.IndexByte("@*#?-$!", next) >= 0:
		l.i += 2
		b.expansion(src[start:l.i], quoted, false)
		b.refs = append(b.refs, src[start+1:l.i])
	default:
		b.byte1('$')
		l.i++
	}
}

// param reads ${ ... } at l.i.
func (l *lexer) param(b *wordBuf, quoted bool) {
	src := l.src
	start := l.i
	j := l.i + 2
	k := j
	for k < len(src) && (src[k] == '_' || isAlnum(src[k])) {
		k++
	}
	if k == j && k < len(src) && strings.IndexByte("@*#?-$!", src[k]) >= 0 {
		k++
	}
	name := src[j:k]
	if k < len(src) && src[k] == '}' && name != "" {
		l.i = k + 1
		b.expansion(src[start:l.i], quoted, false)
		b.refs = append(b.refs, name)
		return
	}
	// An operator: scan to the matching '}'.
	if j < len(src) && src[j] == '(' {
		l.a.unverify() // zsh parameter flags, e.g. ${(e)x} evaluates
	}
	l.i = j
	depth := 0
	for l.i < len(src) {
		c := src[l.i]
		switch {
		case c == '\\':
			l.i += 2
		case c == '\'' && !quoted:
			e := strings.IndexByte(src[l.i+1:], '\'')
			if e < 0 {
				l.i = len(src)
				continue
			}
			l.i += e + 2
		case c == '"':
			l.i++
			sub := wordBuf{quoted: -1}
			l.dquote(&sub)
			b.refs = append(b.refs, sub.refs...)
		case c == '$':
			sub := wordBuf{quoted: -1}
			l.dollar(&sub, true)
			b.refs = append(b.refs, sub.refs...)
		case c == '`':
			l.backtick(&wordBuf{quoted: -1}, true)
		case c == '{':
			depth++
			l.i++
		case c == '}':
			if depth == 0 {
				l.i++
				text := src[start:l.i]
				if strings.HasSuffix(text, "@P}") {
					l.a.unverify() // prompt expansion runs substitutions in the value
				}
				b.expansion(text, quoted, true)
				b.refs = append(b.refs, name)
				l.a.sinkText(src[k : l.i-1])
				return
			}
			depth--
			l.i++
		default:
			l.i++
		}
	}
	l.a.unverify() // unbalanced ${
	b.expansion(src[start:], quoted, true)
}

// arith scans arithmetic text starting at i up to closer ("))" or "]"),
// analysing the substitutions in it and recording the names it uses. It
// returns the index just past the closer; false when there is none.
func (l *lexer) arith(i int, closer string) (int, bool) {
	src := l.src
	depth := 0
	start := i
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\\':
			i += 2
		case c == '\'':
			e := strings.IndexByte(src[i+1:], '\'')
			if e < 0 {
				return 0, false
			}
			i += e + 2
		case c == '$' || c == '`' || c == '"':
			l.i = i
			b := wordBuf{quoted: -1}
			switch c {
			case '$':
				l.dollar(&b, true)
			case '`':
				l.backtick(&b, true)
			default:
				l.i++
				l.dquote(&b)
			}
			for _, r := range b.refs {
				l.a.sinkName(r)
			}
			i = l.i
		case c == '(' || c == '[' && closer == "]":
			depth++
			i++
		case c == ')' || c == ']' && closer == "]":
			if depth > 0 {
				depth--
				i++
				continue
			}
			if closer == "]" && c == ']' {
				l.a.sinkText(src[start:i])
				return i + 1, true
			}
			if closer == "))" && c == ')' && i+1 < len(src) && src[i+1] == ')' {
				l.a.sinkText(src[start:i])
				return i + 2, true
			}
			return 0, false
		default:
			i++
		}
	}
	return 0, false
}

// arithCommand reads (( ... )) at l.i; false when it is not one (two
// subshell parentheses).
func (l *lexer) arithCommand() bool {
	if c := l.cur; c != nil && !c.head && c.hdr != hdrFor {
		return false
	}
	save := l.i
	end, ok := l.arith(l.i+2, "))")
	if !ok {
		l.i = save
		return false
	}
	l.i = end
	l.canonAdd(l.src[save:end])
	if c := l.cur; c != nil && c.hdr == hdrFor {
		c.arith = true // for (( ... ))
		return true
	}
	c := l.cmd()
	c.head = false
	c.words = append(c.words, word{val: "((", lit: true, eq: -1})
	return true
}

// subst lexes a $( ... ) body in place, starting at l.i.
func (l *lexer) subst() {
	if l.nest+1 > maxSubstNesting {
		l.a.abort = true
		l.i = len(l.src)
		return
	}
	sub := &lexer{a: l.a, src: l.src, i: l.i, depth: l.depth, nest: l.nest + 1, stop: true}
	sub.run()
	l.i = sub.i
}

// backtick reads `...` at l.i and analyses its text as a script.
func (l *lexer) backtick(b *wordBuf, quoted bool) {
	src := l.src
	var body []byte
	i := l.i + 1
	for i < len(src) && src[i] != '`' {
		if src[i] == '\\' && i+1 < len(src) {
			n := src[i+1]
			if n == '$' || n == '`' || n == '\\' || quoted && n == '"' {
				body = append(body, n)
				i += 2
				continue
			}
		}
		body = append(body, src[i])
		i++
	}
	if i >= len(src) {
		l.a.unverify() // unbalanced backtick
		l.i = len(src)
	} else {
		l.i = i + 1
	}
	l.a.script(string(body), l.depth+1)
	b.expansion(placeholder, quoted, true)
}

// ansiSimple are the one-letter escapes of $'...'.
var ansiSimple = map[byte]byte{'a': 7, 'b': 8, 'e': 27, 'E': 27, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t',
	'v': 11, '\\': '\\', '\'': '\'', '"': '"', '?': '?'}

// ansiC decodes the body of $'...' (l.i just past the quote). Bash cuts
// the string at a NUL it decodes.
func (l *lexer) ansiC(b *wordBuf) {
	src := l.src
	nul := false
	put := func(s ...byte) {
		if !nul {
			b.bytes(string(s))
		}
	}
	for l.i < len(src) {
		c := src[l.i]
		if c == '\'' {
			l.i++
			return
		}
		if c != '\\' || l.i+1 >= len(src) {
			put(c)
			l.i++
			continue
		}
		e := src[l.i+1]
		l.i += 2
		out, zero := l.ansiEscape(e)
		nul = nul || zero // bash drops the NUL and the rest
		put(out...)
	}
	l.a.unverify() // unbalanced $'
}

// ansiEscape decodes the escape \e of $'...' whose text goes on at l.i;
// zero reports a NUL.
func (l *lexer) ansiEscape(e byte) (out []byte, zero bool) {
	src := l.src
	if v, ok := ansiSimple[e]; ok {
		return []byte{v}, false
	}
	switch {
	case e == 'c':
		if l.i < len(src) {
			l.i++
			return []byte{src[l.i-1] & 0x1f}, false
		}
		return nil, false
	case e == 'x' || e == 'u' || e == 'U':
		return l.ansiHex(e)
	case '0' <= e && e <= '7':
		v := int(e - '0')
		for n := 1; n < 3 && l.i < len(src) && '0' <= src[l.i] && src[l.i] <= '7'; n++ {
			v = v*8 + int(src[l.i]-'0')
			l.i++
		}
		return []byte{byte(v)}, v&0xff == 0
	}
	return []byte{'\\', e}, false
}

// ansiHex decodes \xHH, \uHHHH and \UHHHHHHHH.
func (l *lexer) ansiHex(e byte) (out []byte, zero bool) {
	src := l.src
	max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
	v, n := 0, 0
	for n < max && l.i < len(src) && isHex(src[l.i]) {
		v = v*16 + hexVal(src[l.i])
		l.i++
		n++
	}
	switch {
	case n == 0:
		return []byte{'\\', e}, false
	case e == 'x':
		return []byte{byte(v)}, v == 0
	}
	if v > utf8.MaxRune {
		v = utf8.RuneError
	}
	var buf [4]byte
	return buf[:utf8.EncodeRune(buf[:], rune(v))], v == 0
}

// compound reads the elements of NAME=( ... ) into b (l.i at the '(').
func (l *lexer) compound(b *wordBuf) {
	l.i++
	for l.i < len(l.src) {
		switch c := l.src[l.i]; c {
		case ' ', '\t', '\n', '\r':
			l.i++
		case ')':
			l.i++
			return
		case '#':
			l.comment()
		default:
			start := l.i
			w, ok := l.word()
			if !ok {
				if l.i == start {
					l.i++ // an operator inside ( ): a syntax error
				}
				continue
			}
			b.elems = append(b.elems, w)
		}
	}
	l.a.unverify()
}

// extglob reads a pattern list @( ... ), !( ... ), ... into b (l.i at the
// '('), reading its text leniently.
func (l *lexer) extglob(b *wordBuf) {
	src := l.src
	depth := 0
	start := l.i
	for l.i < len(src) {
		c := src[l.i]
		l.i++
		switch c {
		case '\\':
			l.i++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				b.pattern()
				b.bytes(src[start:l.i])
				l.a.lenientScript(src[start+1:l.i-1], l.depth+1)
				return
			}
		}
	}
	l.a.unverify()
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
func readBodies(src string, i int, pending []*heredoc) (bodies []string, last int) {
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
			// In an unquoted body a backslash-newline joins lines, also
			// for finding the delimiter.
			for !h.quoted && oddBackslashes(line) && lineEnd < len(src) {
				j := strings.IndexByte(src[lineEnd+1:], '\n')
				next := len(src)
				if j >= 0 {
					next = lineEnd + 1 + j
				}
				line = line[:len(line)-1] + src[lineEnd+1:next]
				lineEnd = next
			}
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

// oddBackslashes reports whether s ends in an unescaped backslash.
func oddBackslashes(s string) bool {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || '0' <= c && c <= '9' }
func isHex(c byte) bool   { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func hexVal(c byte) int {
	switch {
	case c <= '9':
		return int(c - '0')
	case c >= 'a':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}
