package shell

import (
	"strings"
)

// The approve side: does an approve rule match a command?
//
// A rule matches only a single plain simple command (plain: bytes that no
// shell treats specially, see plainByte) that its glob matches. The glob
// is not the whole answer: "bash(git log*)" was written for "git log
// --oneline", not for "git log --output=~/.bashrc". So the words of the
// command are split into those the rule spells itself — the words inside
// the pattern's text before its first '*' or after its last one, and an
// option whose "--name=" the rule spells — which are the user's explicit
// choice, and the others, which the '*' stood for. Each of the others must
// be known, for the program it belongs to, to be free of writes and of
// execution:
//
//   - a program with option knowledge (an approveSpec: git and its
//     subcommands, rg, grep, find, sed, sort, ls, cat, ...): every such
//     option is one the spec lists as free, and the operands pass the
//     spec's check (find's expression, sed's script, git branch names);
//     an option it does not list — a write (--output, -o, -i), an
//     execution (--pre, -exec, -c), an abbreviation, anything new — means
//     the rule does not match;
//   - a program whose purpose is running code (make, go, npm, cargo,
//     pytest, interpreters, shells, sudo, xargs, ...): a rule that names it
//     grants running code, whatever the options (they cannot add anything
//     the program does not already do); one the '*' stood for does not
//     match (guarded);
//   - a transparent wrapper (env, timeout, nice, nohup, stdbuf, time,
//     command, ...): its own options as above, then the command it runs
//     is checked the same way;
//   - any other program: nothing is known of its options, so an option the
//     '*' stood for means the rule does not match; its operands pass.
//
// "Does not match" means the rule falls through: the call asks unless
// another resolver (a sandbox) approves it.

// plainByte is the whitelist for approve rules: bytes that are never special
// to bash, zsh or dash inside an unquoted word. '~' (tilde expansion), '^'
// (a pipe in old Bourne shells) and '=' at the start of a word (zsh) are not
// plain or are handled separately.
func plainByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '/', ':', '=', ',', '+', '@', '%':
		return true
	}
	return false
}

// normalizeApprove returns the command as approve rules see it, or false when
// it is not a single plain simple command.
func normalizeApprove(cmd string) (string, bool) {
	cmd = strings.Trim(cmd, " \t")
	if cmd == "" || len(cmd) > MaxApproveLen {
		return "", false
	}
	wordStart := true
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		if c == ' ' || c == '\t' {
			wordStart = true
			continue
		}
		if !plainByte(c) || (wordStart && c == '=') {
			return "", false
		}
		wordStart = false
	}
	return normalizeBlanks(cmd), true
}

// guarded reports whether a command word runs other commands — a wrapper,
// a shell, an interpreter, or any command the deny side reads specially
// (see the commands table) — so that an approve rule matches it only when
// it names it literally.
func guarded(first string) bool {
	if guardedName(first) {
		return true
	}
	if b := basename(first); b != first {
		return guardedName(b)
	}
	return false
}

func guardedName(n string) bool {
	n = asciiLower(n)
	h, ok := commands[n]
	if !ok {
		if t := strings.TrimRight(n, "0123456789."); t != n {
			h, ok = commands[t]
		}
	}
	if !ok {
		return false
	}
	switch h.kind {
	case cData, cGit, cRead, cPrintf, cDeclare, cLet, cTest, cUnset:
		return false
	}
	return true
}

// matchApprove matches a normalized approve pattern against a normalized
// plain command.
func matchApprove(pattern, norm string) bool {
	first := norm
	if i := strings.IndexByte(norm, ' '); i >= 0 {
		first = norm[:i]
	}
	if strings.IndexByte(first, '=') >= 0 {
		return false // NAME=value cmd: an assignment prefix changes what runs
	}
	if !globMatch(pattern, norm) {
		if !strings.HasSuffix(pattern, " *") || !globMatch(pattern[:len(pattern)-2], norm) {
			return false
		}
		pattern = pattern[:len(pattern)-2] // "P *" matching "P"
	}
	return approvable(spelled(pattern, norm), 0)
}

// aword is a word of a plain command; spelled: the rule's own text spells
// it (see spelled).
type aword struct {
	s       string
	spelled bool
}

// spelled splits the command into words and marks those the pattern
// spells itself: the words inside the text before the pattern's first '*'
// (which the command starts with) or after its last one (which it ends
// with), and an option whose name up to its '=' the text before the first
// '*' spells ("--format=*"). Without a '*' every word is spelled.
func spelled(pattern, norm string) []aword {
	out := make([]aword, 0, strings.Count(norm, " ")+1)
	star := strings.IndexByte(pattern, '*')
	suffix := len(norm)
	if star >= 0 {
		suffix = len(norm) - (len(pattern) - strings.LastIndexByte(pattern, '*') - 1)
	} else {
		star = len(norm)
	}
	for start := 0; start <= len(norm); {
		end := strings.IndexByte(norm[start:], ' ')
		if end < 0 {
			end = len(norm)
		} else {
			end += start
		}
		w := norm[start:end]
		sp := end <= star || start >= suffix
		if eq := strings.IndexByte(w, '='); !sp && eq > 0 && w[0] == '-' && start+eq < star {
			sp = true // the rule spells "--name=": the value is the rule's '*'
		}
		out = append(out, aword{s: w, spelled: sp})
		start = end + 1
	}
	return out
}

// approvable reports whether a plain command, program first, is free of
// writes and execution beyond what the rule spells (see the top of this
// file). depth counts the wrappers passed.
func approvable(ws []aword, depth int) bool {
	if len(ws) == 0 {
		return true
	}
	if depth > maxWrappers {
		return false
	}
	prog := ws[0]
	sp := approveSpecFor(prog.s)
	if sp == nil && guarded(prog.s) {
		sp = runsSpec // shells, interpreters, sudo, xargs, editors, ...
	}
	if !prog.spelled && (guarded(prog.s) || sp != nil && sp.runs) {
		return false // a program that runs code, which the rule does not name
	}
	args := ws[1:]
	switch {
	case sp == nil:
		return noStarOptions(args)
	case sp.free, sp.runs:
		return true
	case sp.custom != nil:
		return sp.custom(args)
	case sp.wrapper:
		rest, ok := sp.wrapped(args)
		return ok && approvable(rest, depth+1)
	case sp.subs != nil:
		return sp.subcommand(args)
	}
	return sp.checkArgs(args)
}

// noStarOptions: of a program nothing is known about, the rule's '*' may
// stand for operands only.
func noStarOptions(args []aword) bool {
	for _, w := range args {
		if w.s == "--" {
			return true
		}
		if !w.spelled && isOption(w.s) {
			return false
		}
	}
	return true
}

func isOption(s string) bool { return len(s) > 1 && s[0] == '-' }

// approveSpecFor finds the approve side's knowledge of a command word
// (its basename, ASCII-lowercased; python3.12 is python).
func approveSpecFor(word string) *approveSpec {
	n := asciiLower(basename(word))
	if sp, ok := approveSpecs[n]; ok {
		return sp
	}
	return approveSpecs[strings.TrimRight(n, "0123456789.")]
}

// approveSpec is what the approve side knows of a program.
type approveSpec struct {
	free    bool // every word is data (echo, pwd): nothing to check
	runs    bool // runs code by design: a rule naming it grants that
	wrapper bool // runs the command after its options and positionals
	// positional operands a wrapper takes before the command (timeout's
	// duration)
	positional int
	assigns    bool    // NAME=VALUE words before the command (env)
	opts       *optSet // options free of writes and execution
	// subs are the subcommands with knowledge (git); a subcommand not in
	// it is a program nothing is known about. opts are then the global
	// options before the subcommand.
	subs map[string]*approveSpec
	// operands checks the operands given the options seen (git branch
	// creates a branch unless it lists); nil: any operands.
	operands func(ops []string, seen map[string]bool) bool
	// custom replaces the option parsing (find's expression).
	custom func(args []aword) bool
}

// checkArgs checks options and operands.
func (sp *approveSpec) checkArgs(args []aword) bool {
	if sp.operands == nil {
		return sp.opts.free(args)
	}
	ops, seen, ok := sp.opts.check(args)
	return ok && sp.operands(ops, seen)
}

// wrapped checks a wrapper's options and returns the command it runs.
func (sp *approveSpec) wrapped(args []aword) ([]aword, bool) {
	i, ok := sp.opts.leading(args)
	if !ok {
		return nil, false
	}
	i += sp.positional
	for sp.assigns && i < len(args) && strings.IndexByte(args[i].s, '=') > 0 {
		if !args[i].spelled {
			return nil, false // NAME=VALUE: PAGER, LD_PRELOAD, ... run code
		}
		i++
	}
	if i > len(args) {
		return nil, true
	}
	return args[i:], true
}

// subcommand checks the global options, then the subcommand's words.
func (sp *approveSpec) subcommand(args []aword) bool {
	i, ok := sp.opts.leading(args)
	if !ok {
		return false
	}
	if i >= len(args) {
		return true
	}
	sub := args[i]
	if sub.s == "--" {
		return true
	}
	next, known := sp.subs[sub.s]
	if !known {
		return noStarOptions(args[i+1:])
	}
	if next.runs {
		return sub.spelled // runs code: only when the rule names it
	}
	if next.free {
		return true
	}
	if next.subs != nil {
		return next.subcommand(args[i+1:])
	}
	return next.checkArgs(args[i+1:])
}

// optSet is a set of options known to be free of writes and execution,
// written as words: "-a" a flag, "-n=" a short option taking a value
// (attached or the next word), "-M?" a short option with an optional
// attached value, "--all" a long flag, "--max-count=" a long option taking
// a value (after '=' or the next word), "--decorate?" a long option with
// an optional value after '='. "-#" allows -<number> (head -5, git log
// -10). A leading '!' lists an option known to write or execute (with its
// arity, so that a rule spelling it is read right): it is never free.
type optSet struct {
	short   map[byte]byte   // ' ' flag, '=' value, '?' optional attached value; |effect
	long    map[string]byte // the same
	numeric bool
}

// effect marks an option known to write or execute.
const effect = 0x80

// opts builds an optSet from the word lists.
func opts(specs ...string) *optSet {
	o := &optSet{short: map[byte]byte{}, long: map[string]byte{}}
	for _, spec := range specs {
		for _, f := range strings.Fields(spec) {
			o.add(f)
		}
	}
	return o
}

func (o *optSet) add(f string) {
	kind := byte(' ')
	if n := len(f); n > 2 && (f[n-1] == '=' || f[n-1] == '?') {
		kind, f = f[n-1], f[:n-1]
	}
	if f[0] == '!' {
		kind, f = kind|effect, f[1:]
	}
	switch {
	case f == "-#":
		o.numeric = true
	case strings.HasPrefix(f, "--"):
		o.long[f[2:]] = kind
	case len(f) == 2 && f[0] == '-':
		o.short[f[1]] = kind
	default:
		panic("shell: bad option spec " + f)
	}
}

// leading checks the options before the first operand and returns the
// index of that operand.
func (o *optSet) leading(args []aword) (int, bool) {
	i := 0
	for i < len(args) && isOption(args[i].s) {
		if args[i].s == "--" {
			return i + 1, true
		}
		n, ok := o.option(args, i, nil)
		if !ok {
			return 0, false
		}
		i += n
	}
	return i, true
}

// check checks every option up to "--" (GNU programs take options after
// operands too) and returns the operands and the options seen.
func (o *optSet) check(args []aword) (ops []string, seen map[string]bool, ok bool) {
	seen = map[string]bool{}
	for i := 0; i < len(args); {
		w := args[i]
		switch {
		case w.s == "--":
			for _, x := range args[i+1:] {
				ops = append(ops, x.s)
			}
			return ops, seen, true
		case !isOption(w.s):
			ops = append(ops, w.s)
			i++
		default:
			n, ok := o.option(args, i, seen)
			if !ok {
				return nil, nil, false
			}
			i += n
		}
	}
	return ops, seen, true
}

// free checks every option up to "--", without collecting anything.
func (o *optSet) free(args []aword) bool {
	for i := 0; i < len(args); {
		switch w := args[i]; {
		case w.s == "--":
			return true
		case !isOption(w.s):
			i++
		default:
			n, ok := o.option(args, i, nil)
			if !ok {
				return false
			}
			i += n
		}
	}
	return true
}

// option checks the option word args[i] (and the value it takes from the
// next word) and returns how many words it used. An option the rule spells
// is the user's choice; one it does not must be in the set.
func (o *optSet) option(args []aword, i int, seen map[string]bool) (int, bool) {
	w := args[i]
	var kind byte
	var free bool
	if strings.HasPrefix(w.s, "--") {
		kind, free = o.longOption(w.s, seen)
	} else {
		kind, free = o.shortOptions(w.s, seen)
	}
	if !free && !w.spelled {
		return 0, false
	}
	if kind != '=' {
		return 1, true
	}
	// The value is the next word. One that looks like an option must
	// be free as an option too: the program may read it as one.
	if i+1 < len(args) && isOption(args[i+1].s) && !args[i+1].spelled && !w.spelled {
		if _, ok := o.option(args, i+1, nil); !ok {
			return 0, false
		}
	}
	return 2, true
}

// longOption looks up "--name" or "--name=value"; kind '=' means the value
// is the next word, free that the option is known to be free.
// Abbreviations are not known (git and getopt accept unique prefixes:
// --outp is --output).
func (o *optSet) longOption(s string, seen map[string]bool) (kind byte, free bool) {
	name, _, hasEq := strings.Cut(s[2:], "=")
	k, ok := o.long[name]
	if seen != nil {
		seen["--"+name] = true
	}
	free = ok && k&effect == 0
	switch k &^ effect {
	case ' ':
		return ' ', free && !hasEq // a flag given a value is not known
	case '=':
		if !hasEq {
			return '=', free
		}
	}
	return ' ', free
}

// shortOptions walks a cluster such as -uo or -n5; kind '=' means the last
// option's value is the next word, free that every option in it is known
// to be free.
func (o *optSet) shortOptions(s string, seen map[string]bool) (kind byte, free bool) {
	if o.numeric && strings.Trim(s[1:], "0123456789") == "" {
		return ' ', true
	}
	free = true
	for j := 1; j < len(s); j++ {
		k, ok := o.short[s[j]]
		if seen != nil {
			seen["-"+s[j:j+1]] = true
		}
		free = free && ok && k&effect == 0
		switch k &^ effect {
		case '?':
			return ' ', free
		case '=':
			if j+1 < len(s) {
				return ' ', free // the value is attached
			}
			return '=', free
		}
		if !ok {
			return ' ', false
		}
	}
	return ' ', free
}
