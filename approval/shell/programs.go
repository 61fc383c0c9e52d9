package shell

import (
	"strings"
)

// What the deny side knows about programs: how wrappers parse their
// options, which arguments are scripts (sh -c, eval, su -c, ssh, trap,
// ...), which programs run code the analysis cannot read (interpreters,
// awk, sed, make, editors), and which only treat their arguments as data.
// words (analyze.go) dispatches on the commands table.

// wrapperHook handles what is particular to one wrapper after its options
// are parsed. done reports that the command is fully handled.
func (a *analysis) wrapperHook(base string, opts []optVal, rest *[]word, c *scmd, depth int, open bool) (done bool, k kind) {
	switch base {
	case "sudo", "doas":
		if len(*rest) == 0 && (optSeen(opts, "-s", "-i", "--shell", "--login")) {
			a.unverify() // a shell reading stdin
			return true, kUnknown
		}
	case "xargs":
		if len(*rest) == 0 {
			return true, kData // runs echo
		}
		repl, ok := "", false
		for _, o := range opts {
			switch o.name {
			case "-I", "--replace", "-i":
				repl, ok = o.val.val, true
				if repl == "" {
					repl = "{}"
				}
			}
		}
		if ok {
			*rest = markDynamic(*rest, repl)
		}
	case "flock":
		if open {
			a.unverify() // the command may come from the input
			return true, kUnknown
		}
		for _, o := range opts {
			if o.name == "-c" || o.name == "--command" {
				a.codeString(o.val, depth)
				return true, kUnknown
			}
		}
		if r := *rest; len(r) > 0 && r[0].lit && (r[0].val == "-c" || r[0].val == "--command") {
			if len(r) > 1 {
				a.codeString(r[1], depth)
			}
			return true, kUnknown
		}
	case "watch":
		if open {
			a.unverify() // the command may come from the input
			return true, kUnknown
		}
		if !optSeen(opts, "-x", "--exec") {
			a.joinCode(*rest, depth)
			return true, kUnknown
		}
	case "taskset", "chrt", "ionice":
		if optSeen(opts, "-p", "--pid", "-P", "--pgid", "-u", "--uid") {
			return true, kData // changes running processes
		}
		if base == "chrt" {
			if r := *rest; len(r) > 0 && r[0].lit && isNumber(r[0].val) {
				*rest = r[1:] // the priority
			}
		}
	}
	return false, 0
}

// markDynamic makes the words containing xargs's replace string dynamic.
func markDynamic(ws []word, repl string) []word {
	out := make([]word, len(ws))
	for i, w := range ws {
		if strings.Contains(w.val, repl) {
			w = word{val: w.val, wild: strings.ReplaceAll(w.literalParts(), repl, "\x00"), taint: true, eq: -1, refs: w.refs}
		}
		out[i] = w
	}
	return out
}

func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func optSeen(opts []optVal, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// hasOpt reports whether a short option letter appears in an option word
// before the first operand.
func hasOpt(args []word, letter byte) bool {
	for _, w := range args {
		s := w.val
		if !w.lit || len(s) < 2 || s[0] != '-' {
			return false
		}
		if s == "--" {
			return false
		}
		if s[1] != '-' && strings.IndexByte(s[1:], letter) >= 0 {
			return true
		}
	}
	return false
}

// env parses env's options, assignments and -S strings and returns the
// command words.
func (a *analysis) env(args []word, depth int) []word {
	i := 0
	for splices := 0; i < len(args); {
		w := args[i]
		if w.eq >= 0 {
			a.assignment(w)
			i++
			continue
		}
		if e := strings.IndexByte(w.val, '='); e > 0 && !strings.HasPrefix(w.val, "-") {
			// env takes any NAME=VALUE, also names bash would not
			// (BASH_FUNC_ls%%=() { ...; } defines a function for bash).
			a.suspect(w)
			i++
			continue
		}
		if !w.lit {
			if strings.HasPrefix(w.val, "-") {
				a.suspectAll(args)
				i++
				continue
			}
			break
		}
		s := w.val
		if s == "-" {
			i++
			continue
		}
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		split := func(v word) {
			splices++
			if !v.lit || splices > maxWrappers {
				a.unverify()
				args, i = nil, 0
				return
			}
			ws, ok := envSplit(v.val)
			if !ok {
				a.suspectAll([]word{v})
			}
			args = append(ws, args[i:]...)
			i = 0
		}
		if strings.HasPrefix(s, "--") {
			name, val, hasEq := strings.Cut(s[2:], "=")
			full, kind, known := lookupLong(envLong, name)
			switch {
			case !known:
				a.suspectAll(args)
			case full == "split-string":
				if hasEq {
					split(word{val: val, lit: true, eq: -1})
				} else if i < len(args) {
					i++
					split(args[i-1])
				}
			case kind == 1 && !hasEq:
				if i < len(args) {
					a.suspect(args[i])
				}
				i++
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case 'i', '0', 'v':
			case 'u', 'C', 'a':
				if j+1 == len(s) {
					if i < len(args) {
						a.suspect(args[i])
					}
					i++
				}
				j = len(s)
			case 'S':
				if j+1 < len(s) {
					split(word{val: s[j+1:], lit: true, eq: -1})
				} else if i < len(args) {
					i++
					split(args[i-1])
				}
				j = len(s)
			default:
				a.suspectAll(args)
			}
		}
	}
	if i > len(args) {
		return nil
	}
	return args[i:]
}

var envLong = map[string]int{"ignore-environment": 0, "null": 0, "unset": 1, "chdir": 1, "split-string": 1,
	"argv0": 1, "block-signal": 2, "default-signal": 2, "ignore-signal": 2, "list-signal-handling": 0,
	"debug": 0, "help": 0, "version": 0}

// envSplit splits an env -S string the way env does: blanks separate,
// '...' and "..." quote, backslash escapes (\_ is a blank outside quotes,
// \c ends the string), ${NAME} expands, '#' starts a comment. false when
// env would reject the string.
func envSplit(s string) ([]word, bool) {
	var out []word
	var b wordBuf
	b.quoted = -1
	in := false
	ok := true
	end := func() {
		if in {
			out = append(out, b.word())
			b = wordBuf{quoted: -1}
			in = false
		}
	}
	put := func(c byte) { b.byte1(c); in = true }
	escape := func(c byte, quoted bool) bool { // false: stop
		switch c {
		case 'c':
			return false
		case '_':
			if quoted {
				put(' ')
			} else {
				end()
			}
		case 'f':
			put('\f')
		case 'n':
			put('\n')
		case 'r':
			put('\r')
		case 't':
			put('\t')
		case 'v':
			put('\v')
		case '\\', '\'', '"', '#', '$', ' ':
			put(c)
		default:
			ok = false
			put(c)
		}
		return true
	}
	expand := func(i int) int { // at '$'; returns the index after
		if i+1 < len(s) && s[i+1] == '{' {
			if j := strings.IndexByte(s[i:], '}'); j > 0 {
				name := s[i+2 : i+j]
				b.expansion(s[i:i+j+1], true, false)
				b.refs = append(b.refs, name)
				in = true
				return i + j + 1
			}
		}
		ok = false
		put('$')
		return i + 1
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			end()
			i++
		case c == '#' && !in:
			return out, ok
		case c == '\\' && i+1 < len(s):
			if !escape(s[i+1], false) {
				end()
				return out, ok
			}
			i += 2
		case c == '\'':
			in = true
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '\'') {
					i++
				}
				put(s[i])
				i++
			}
			if i >= len(s) {
				ok = false
			}
			i++
		case c == '"':
			in = true
			i++
			for i < len(s) && s[i] != '"' {
				switch {
				case s[i] == '\\' && i+1 < len(s):
					if !escape(s[i+1], true) {
						end()
						return out, ok
					}
					i += 2
				case s[i] == '$':
					i = expand(i)
				default:
					put(s[i])
					i++
				}
			}
			if i >= len(s) {
				ok = false
			}
			i++
		case c == '$':
			i = expand(i)
		default:
			put(c)
			i++
		}
	}
	end()
	return out, ok
}

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
	if i > len(args) {
		i = len(args)
	}
	rest := args[i:]
	if cflag {
		if len(rest) == 0 {
			a.unverify() // the string comes from elsewhere (xargs)
			return kUnknown
		}
		a.codeString(rest[0], depth)
		return kUnknown
	}
	if len(rest) > 0 && !sflag || open {
		a.unverify() // runs a script file
		return kUnknown
	}
	// Reads commands from stdin.
	if piped || len(c.stdin) == 0 || c.ins {
		a.unverify()
		return kUnknown
	}
	for _, w := range c.stdin {
		a.codeString(w, depth)
	}
	return kUnknown
}

// find analyses the commands of -exec, -execdir, -ok and -okdir; "{}" in
// them stands for file names.
func (a *analysis) find(args []word, c *scmd, depth int, open bool) {
	for i := 0; i < len(args); i++ {
		if !args[i].lit {
			continue
		}
		switch args[i].val {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && !(args[j].lit && (args[j].val == ";" || args[j].val == "+")) {
				j++
			}
			if j == len(args) && open {
				a.unverify() // the rest comes from xargs
			}
			if depth+1 > MaxNesting {
				a.unverify()
				return
			}
			a.words(markDynamic(args[i+1:j], "{}"), c, depth+1, false, false)
			i = j
		}
	}
}

// git parses git's global options (-C, -c, --git-dir, ...) so that a rule
// sees "git <subcommand> <args>", and expands aliases given with -c.
func (a *analysis) git(lname string, args []word, depth int) kind {
	certain := true
	var aliases map[string]string
	for _, n := range []string{"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL",
		"GIT_CONFIG_SYSTEM", "GIT_CONFIG"} {
		if a.assigned[n] {
			a.unverify() // configuration (aliases, pagers) the command sets
		}
	}
	for _, n := range []string{"GIT_DIR", "GIT_EXEC_PATH", "HOME", "XDG_CONFIG_HOME"} {
		if a.assigned[n] {
			certain = false
		}
	}
	config := func(v word) {
		a.suspect(v)
		if !v.lit {
			certain = false
			return
		}
		key, val, _ := strings.Cut(v.val, "=")
		key = asciiLower(key)
		switch {
		case strings.HasPrefix(key, "alias."):
			if aliases == nil {
				aliases = map[string]string{}
			}
			aliases[key[len("alias."):]] = val
		case key == "include.path" || strings.HasPrefix(key, "includeif."):
			a.unverify()
		}
	}
	i := 0
	for i < len(args) {
		w := args[i]
		if !w.lit {
			certain = false
			if strings.HasPrefix(w.val, "-") {
				i++
				continue
			}
			break
		}
		s := w.val
		if len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		name, val, hasEq := strings.Cut(s, "=")
		switch {
		case gitArgOpts[name] && hasEq && strings.HasPrefix(name, "--"):
			if name == "--config-env" {
				certain = false
			}
			a.suspect(word{val: val, lit: true, eq: -1})
		case gitArgOpts[name] && !hasEq:
			if i < len(args) {
				if name == "-c" {
					config(args[i])
				} else {
					if name == "--config-env" {
						certain = false
					}
					a.suspect(args[i])
				}
			}
			i++
		case gitFlags[name] || strings.HasPrefix(s, "--exec-path=") || strings.HasPrefix(s, "--list-cmds="):
		default:
			certain = false
			a.suspect(w)
		}
	}
	if i > len(args) {
		i = len(args)
	}
	sub := args[i:]
	if len(sub) == 0 {
		a.addProbe(lname, "git", "", args)
		return kData
	}
	for n := 0; n < 8 && sub[0].lit; n++ {
		v, ok := aliases[asciiLower(sub[0].val)]
		if !ok {
			break
		}
		if strings.HasPrefix(v, "!") {
			a.script(v[1:], depth+1) // a shell alias
			a.suspectAll(sub)
			return kUnknown
		}
		var exp []word
		for _, f := range strings.Fields(v) {
			exp = append(exp, word{val: f, lit: true, eq: -1})
		}
		if len(exp) == 0 {
			break
		}
		sub = append(exp, sub[1:]...)
	}
	a.addWords("git", append([]word{{}}, sub...), false)
	s := ""
	if sub[0].lit {
		s = asciiLower(sub[0].val)
	}
	if certain && gitData[s] {
		a.addProbe(lname, "git", s, sub[1:])
		return kData
	}
	a.addProbe(lname, "git", "", args)
	a.suspectAll(args)
	return kUnknown
}

var gitArgOpts = setOf("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
	"--config-env", "--attr-source", "--shallow-file")

var gitFlags = setOf("-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects",
	"--no-lazy-fetch", "--no-optional-locks", "--no-advice", "--literal-pathspecs",
	"--no-literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
	"-h", "--help", "-v", "--version", "--html-path", "--man-path", "--info-path", "--exec-path")

// gitData are the git subcommands whose arguments never name a command to
// run (hooks and configured programs aside, as for any git command).
var gitData = setOf("add", "annotate", "apply", "blame", "branch", "cat-file", "check-attr",
	"check-ignore", "check-mailmap", "checkout", "cherry", "cherry-pick", "clean", "commit",
	"commit-tree", "count-objects", "describe", "diff", "diff-files", "diff-index", "diff-tree",
	"for-each-ref", "format-patch", "fsck", "gc", "help", "init", "log", "ls-files", "ls-tree",
	"merge", "merge-base", "mktag", "mktree", "mv", "name-rev", "notes", "prune", "range-diff",
	"read-tree", "reflog", "repack", "rerere", "reset", "restore", "rev-list", "rev-parse", "revert",
	"rm", "shortlog", "show", "show-branch", "show-ref", "sparse-checkout", "stash", "status",
	"switch", "symbolic-ref", "tag", "update-index", "update-ref", "verify-commit", "verify-pack",
	"verify-tag", "version", "whatchanged", "worktree", "write-tree")

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
		name, val, hasEq := strings.Cut(s, "=")
		value := func() (word, bool) {
			if hasEq {
				return word{val: val, lit: true, eq: -1}, true
			}
			if strings.HasPrefix(s, "--") || len(s) == 2 {
				if i+1 < len(args) {
					i++
					return args[i], true
				}
				return word{}, false
			}
			return word{val: s[2:], lit: true, eq: -1}, true
		}
		switch {
		case name == "-c" || name == "--command" || name == "--session-command" || strings.HasPrefix(s, "-c"):
			if v, ok := value(); ok {
				a.codeString(v, depth)
				code = true
			}
		case name == "-s" || name == "--shell" || strings.HasPrefix(s, "-s"):
			if v, ok := value(); ok && (!v.lit || commands[basename(asciiLower(v.val))].kind != cShell) {
				shellOK = false
			}
		case name == "-u" || name == "--user" || strings.HasPrefix(s, "-u"):
			value()
			user = true
		case name == "-g" || name == "--group" || name == "-G" || name == "--supp-group" ||
			name == "-w" || name == "--whitelist-environment" || len(s) == 2 && strings.IndexByte("gGw", s[1]) >= 0:
			value()
		case name == "-h" || name == "--help" || name == "-V" || name == "--version":
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

// ssh: the remote command is a script for the remote shell; ProxyCommand
// and LocalCommand run here; without a command, stdin feeds a shell.
func (a *analysis) ssh(args []word, depth int) {
	host := false
	noShell := false
	i := 0
	for i < len(args) {
		w := args[i]
		s := w.val
		if !w.lit || len(s) < 2 || s[0] != '-' {
			if host {
				break
			}
			host = true
			i++
			continue
		}
		i++
		if s == "--" {
			if !host && i < len(args) {
				host = true
				i++
			}
			break
		}
		for j := 1; j < len(s); j++ {
			ch := s[j]
			if strings.IndexByte("NVGOQWs", ch) >= 0 {
				noShell = true
			}
			if strings.IndexByte("BbcDEeFIiJLlmOopQRSWw", ch) < 0 {
				continue
			}
			var v word
			if j+1 < len(s) {
				v = word{val: s[j+1:], lit: true, eq: -1}
			} else if i < len(args) {
				v = args[i]
				i++
			}
			switch ch {
			case 'o':
				a.sshOption(v, depth)
			case 'F':
				a.unverify() // a configuration file may hold ProxyCommand
			}
			a.suspect(v)
			break
		}
	}
	if i > len(args) {
		i = len(args)
	}
	rest := args[i:]
	if len(rest) == 0 {
		if !noShell {
			a.unverify() // stdin feeds the remote shell
		}
		return
	}
	a.joinCode(rest, depth)
}

func (a *analysis) sshOption(v word, depth int) {
	if !v.lit {
		a.unverify()
		return
	}
	key, val := v.val, ""
	if i := strings.IndexAny(key, "= \t"); i >= 0 {
		key, val = key[:i], strings.TrimLeft(key[i+1:], "= \t")
	}
	switch asciiLower(key) {
	case "proxycommand", "localcommand", "knownhostscommand", "remotecommand":
		a.script(val, depth+1)
	case "include":
		a.unverify()
	}
}

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
		if strings.HasPrefix(s, "--") {
			name, _, hasEq := strings.Cut(s[2:], "=")
			switch {
			case sp.codeLong[name]:
				a.unverify()
				return kUnknown
			case name == "version" || name == "help":
				info = true
			case sp.argLong[name] && !hasEq:
				i++
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			ch := s[j]
			switch {
			case strings.IndexByte(sp.code, ch) >= 0:
				a.unverify()
				return kUnknown
			case strings.IndexByte(sp.script, ch) >= 0:
				script = true
			case strings.IndexByte(sp.info, ch) >= 0:
				info = true
			case strings.IndexByte(sp.args, ch) >= 0:
				if j+1 == len(s) {
					i++
				}
			default:
				continue
			}
			break
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

// awk: programs that call system(), use pipes or load extensions run
// commands; programs from files cannot be read. Options are looked for
// among all arguments (GNU tools permute them).
func (a *analysis) awk(args []word) {
	var progs, operands []word
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
		next := func() (word, bool) {
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return word{}, false
		}
		if strings.HasPrefix(s, "--") {
			name, val, hasEq := strings.Cut(s, "=")
			switch name {
			case "--file", "--exec", "--include", "--load":
				a.unverify()
				if !hasEq {
					next()
				}
			case "--source":
				if hasEq {
					progs = append(progs, word{val: val, lit: true, eq: -1})
				} else if v, ok := next(); ok {
					progs = append(progs, v)
				}
			case "--field-separator", "--assign":
				if !hasEq {
					next()
				}
			}
			continue
		}
		switch s[1] {
		case 'f', 'E', 'i', 'l', 'W':
			a.unverify() // a program from a file, a library, mawk -W exec
			if len(s) == 2 {
				next()
			}
		case 'e':
			if len(s) > 2 {
				progs = append(progs, word{val: s[2:], lit: true, eq: -1})
			} else if v, ok := next(); ok {
				progs = append(progs, v)
			}
		case 'F', 'v':
			if len(s) == 2 {
				next()
			}
		}
	}
	if len(progs) == 0 {
		if len(operands) == 0 {
			return
		}
		progs = operands[:1]
	}
	for _, p := range progs {
		text := a.codeText(p)
		if strings.Contains(text, "system") || strings.Contains(text, "|") || strings.Contains(text, "@") {
			a.unverify()
		}
	}
}

// codeText returns what is known of program text in another language: the
// text itself, or for a word with expansions its literal parts (values
// built at run time make it unverifiable).
func (a *analysis) codeText(w word) string {
	if w.lit {
		return w.val
	}
	a.nameWord(w)
	return w.literalParts()
}

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

// The commands the analyser knows.
type cmdKind uint8

const (
	cUnknown cmdKind = iota
	cData
	cWrap
	cCommand
	cEnv
	cShell
	cEval
	cFind
	cGit
	cSu
	cSsh
	cInterp
	cAwk
	cSed
	cMake
	cTrap
	cAlias
	cOptAsk
	cCrontab
	cAsk
	cRead
	cPrintf
	cDeclare
	cLet
	cTest
	cUnset
	cSg
	cScript
	cEditor
	cStdin
)

type handler struct {
	kind   cmdKind
	spec   *optSpec
	interp *interpSpec
	letter byte // cOptAsk: the option that asks
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

var commands = func() map[string]handler {
	m := map[string]handler{}
	for _, n := range strings.Fields(`echo cat ls pwd cd pushd popd dirs true false : head tail wc grep
		egrep fgrep cut uniq nl tr diff cmp comm stat file which type whoami id groups date basename
		dirname realpath readlink du df mkdir rmdir rm unlink touch chmod chown chgrp sleep wait exit
		return shift kill jq seq expr column fold fmt paste join base64 base32 md5sum sha1sum
		sha224sum sha256sum sha384sum sha512sum b2sum cksum sum xxd od hexdump strings printenv uname
		hostname nproc free uptime tput clear locale getconf yes rev tac numfmt tree ps pgrep pidof
		whereis set shopt ulimit umask history times caller disown bg fg jobs logout break continue
		cal factor truncate mktemp sync tty stty users who lsblk lscpu ] tee gofmt goimports tsc prettier
		black isort mypy flake8 shellcheck yamllint`) {
		m[n] = handler{kind: cData}
	}
	for n, s := range wrapperSpecs {
		m[n] = handler{kind: cWrap, spec: s}
	}
	m["command"] = handler{kind: cCommand, spec: &optSpec{flags: "pvV"}}
	m["env"] = handler{kind: cEnv}
	for _, n := range strings.Fields("sh bash zsh dash ksh mksh ash fish csh tcsh yash posh rbash lksh pdksh oksh") {
		m[n] = handler{kind: cShell}
	}
	m["eval"] = handler{kind: cEval}
	m["find"] = handler{kind: cFind}
	m["git"] = handler{kind: cGit}
	m["su"] = handler{kind: cSu}
	m["runuser"] = handler{kind: cSu}
	m["ssh"] = handler{kind: cSsh}
	for n, s := range interpSpecs {
		m[n] = handler{kind: cInterp, interp: s}
	}
	for _, n := range strings.Fields("awk gawk mawk nawk") {
		m[n] = handler{kind: cAwk}
	}
	m["sed"] = handler{kind: cSed}
	m["gsed"] = handler{kind: cSed}
	m["make"] = handler{kind: cMake}
	m["gmake"] = handler{kind: cMake}
	m["trap"] = handler{kind: cTrap}
	m["alias"] = handler{kind: cAlias}
	m["hash"] = handler{kind: cOptAsk, letter: 'p'}
	m["enable"] = handler{kind: cOptAsk, letter: 'f'}
	m["crontab"] = handler{kind: cCrontab}
	// Run commands from stdin, files or their history, or schedule them.
	for _, n := range strings.Fields("source . at batch parallel sem fc newgrp lldb pwsh powershell cmd irb jshell") {
		m[n] = handler{kind: cAsk}
	}
	for _, n := range strings.Fields("read mapfile readarray getopts") {
		m[n] = handler{kind: cRead}
	}
	m["printf"] = handler{kind: cPrintf}
	for _, n := range strings.Fields("declare typeset local export readonly") {
		m[n] = handler{kind: cDeclare}
	}
	m["let"] = handler{kind: cLet}
	m["test"] = handler{kind: cTest}
	m["["] = handler{kind: cTest}
	m["unset"] = handler{kind: cUnset}
	m["sg"] = handler{kind: cSg}
	m["script"] = handler{kind: cScript}
	for _, n := range strings.Fields("vi vim nvim view vimdiff gvim rvim evim ex emacs emacsclient gdb") {
		m[n] = handler{kind: cEditor}
	}
	// Programs that run shell commands given in their input.
	for _, n := range strings.Fields(`sqlite3 psql mysql mariadb ed red dc ftp sftp lftp gnuplot octave
		nc ncat netcat`) {
		m[n] = handler{kind: cStdin}
	}
	return m
}()

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

// optSpec describes a command's options for parseOpts.
type optSpec struct {
	args    string         // short options taking an argument
	flags   string         // short options without one
	optArgs string         // short options with an optional attached argument
	long    map[string]int // long options: 0 flag, 1 argument, 2 optional argument (after '=')
	// positional operands before the command (timeout's duration)
	positional   int
	shellIfEmpty bool // without a command it starts a shell reading stdin
	open         bool // appends arguments read at run time (xargs)
}

var wrapperSpecs = map[string]*optSpec{
	"sudo": {args: "aCcDgpRrTtUu", flags: "AbBEeHiKklNnPSsVv", optArgs: "h", long: map[string]int{
		"askpass": 0, "background": 0, "bell": 0, "close-from": 1, "chdir": 1, "preserve-env": 2,
		"edit": 0, "group": 1, "set-home": 0, "help": 0, "host": 1, "login": 0, "remove-timestamp": 0,
		"reset-timestamp": 0, "list": 0, "non-interactive": 0, "preserve-groups": 0, "prompt": 1,
		"chroot": 1, "role": 1, "stdin": 0, "shell": 0, "type": 1, "command-timeout": 1,
		"other-user": 1, "user": 1, "version": 0, "validate": 0, "auth-type": 1, "login-class": 1}},
	"doas":     {args: "Cu", flags: "Lns"},
	"pkexec":   {long: map[string]int{"user": 1, "disable-internal-agent": 0, "keep-cwd": 0, "version": 0, "help": 0}, shellIfEmpty: true},
	"nohup":    {long: map[string]int{"help": 0, "version": 0}},
	"setsid":   {flags: "cfw", long: map[string]int{"ctty": 0, "fork": 0, "wait": 0, "help": 0, "version": 0}},
	"unbuffer": {flags: "p"},
	"nice":     {args: "n", flags: "0123456789", long: map[string]int{"adjustment": 1, "help": 0, "version": 0}},
	"timeout": {args: "sk", flags: "v", positional: 1, long: map[string]int{"signal": 1, "kill-after": 1,
		"foreground": 0, "preserve-status": 0, "verbose": 0, "help": 0, "version": 0}},
	"stdbuf": {args: "ioe", long: map[string]int{"input": 1, "output": 1, "error": 1, "help": 0, "version": 0}},
	"ionice": {args: "cnpPu", flags: "t", long: map[string]int{"class": 1, "classdata": 1, "pid": 1,
		"pgid": 1, "uid": 1, "ignore": 0, "help": 0, "version": 0}},
	"chrt": {args: "TPD", flags: "abdfiomvRpe", long: map[string]int{"all-tasks": 0, "batch": 0,
		"deadline": 0, "fifo": 0, "idle": 0, "other": 0, "rr": 0, "reset-on-fork": 0, "max": 0,
		"verbose": 0, "pid": 0, "sched-runtime": 1, "sched-period": 1, "sched-deadline": 1, "help": 0, "version": 0}},
	"taskset": {flags: "acp", positional: 1, long: map[string]int{"all-tasks": 0, "cpu-list": 0, "pid": 0, "help": 0, "version": 0}},
	"chroot":  {positional: 1, shellIfEmpty: true, long: map[string]int{"userspec": 1, "groups": 1, "skip-chdir": 0, "help": 0, "version": 0}},
	"flock": {args: "wEc", flags: "sexnuoFhV", positional: 1, long: map[string]int{"shared": 0, "exclusive": 0,
		"nonblock": 0, "nb": 0, "unlock": 0, "close": 0, "no-fork": 0, "verbose": 0, "timeout": 1, "wait": 1,
		"conflict-exit-code": 1, "command": 1, "help": 0, "version": 0}},
	"time":    {args: "fo", flags: "apvq", long: map[string]int{"format": 1, "output": 1, "append": 0, "verbose": 0, "portability": 0, "quiet": 0, "help": 0, "version": 0}},
	"builtin": {},
	"exec":    {args: "a", flags: "cl"},
	"busybox": {},
	"strace":  {args: "abeEIoOpPsSuUX", flags: "cCdDfFhiknqrtTvVwxyzZ"},
	"ltrace":  {args: "aeEFlnoOpsuwxA", flags: "bcCfhiLrStTV"},
	"watch": {args: "nq", flags: "bcegtwxpr", optArgs: "d", long: map[string]int{"interval": 1, "differences": 2,
		"chgexit": 0, "equexit": 1, "errexit": 0, "beep": 0, "color": 0, "no-color": 0, "exec": 0,
		"precise": 0, "no-title": 0, "no-wrap": 0, "no-rerun": 0, "shotsdir": 1, "help": 0, "version": 0}},
	"xargs": {args: "aEdILnPs", flags: "0prtxo", optArgs: "eil", open: true, long: map[string]int{"null": 0,
		"arg-file": 1, "delimiter": 1, "eof": 2, "replace": 2, "max-lines": 2, "max-args": 1, "interactive": 0,
		"max-procs": 1, "no-run-if-empty": 0, "max-chars": 1, "show-limits": 0, "verbose": 0, "exit": 0,
		"open-tty": 0, "process-slot-var": 1, "help": 0, "version": 0}},
	"nsenter":  {args: "tSG", flags: "aFZ", optArgs: "mUuinpCTrw", shellIfEmpty: true},
	"unshare":  {args: "RwSG", flags: "frcl", optArgs: "muinpUCT", shellIfEmpty: true},
	"firejail": {shellIfEmpty: true},
}

type optVal struct {
	name string // "-u", "--user"
	val  word
	has  bool
}

// parseOpts parses the options of a wrapper (getopt style: clusters,
// attached values, unambiguous long prefixes, "--") and its positional
// operands; rest is the command that follows. certain is false when an
// option was not understood: the command may then start elsewhere.
func parseOpts(ws []word, spec *optSpec) (rest []word, opts []optVal, certain bool) {
	certain = true
	i := 0
	for i < len(ws) {
		w := ws[i]
		if !w.lit {
			if strings.HasPrefix(w.val, "-") {
				certain = false
				i++
				continue
			}
			break
		}
		s := w.val
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		if s[1] == '-' {
			name, val, hasEq := strings.Cut(s[2:], "=")
			full, kind, known := lookupLong(spec.long, name)
			o := optVal{name: "--" + full}
			switch {
			case !known:
				certain = false
				o.name = "--" + name
			case kind == 1 && !hasEq:
				if i < len(ws) {
					o.val, o.has = ws[i], true
				}
				i++
			case hasEq:
				o.val, o.has = word{val: val, lit: true, eq: -1}, true
			}
			opts = append(opts, o)
			continue
		}
		for j := 1; j < len(s); j++ {
			c := s[j]
			o := optVal{name: "-" + string(c)}
			switch {
			case strings.IndexByte(spec.args, c) >= 0:
				if j+1 < len(s) {
					o.val, o.has = word{val: s[j+1:], lit: true, eq: -1}, true
				} else {
					if i < len(ws) {
						o.val, o.has = ws[i], true
					}
					i++
				}
				j = len(s)
			case strings.IndexByte(spec.optArgs, c) >= 0:
				o.val, o.has = word{val: s[j+1:], lit: true, eq: -1}, j+1 < len(s)
				j = len(s)
			case strings.IndexByte(spec.flags, c) >= 0:
			default:
				certain = false
			}
			opts = append(opts, o)
		}
	}
	for n := 0; n < spec.positional && i < len(ws); n++ {
		i++
	}
	if i > len(ws) {
		return nil, opts, certain
	}
	return ws[i:], opts, certain
}

// lookupLong finds a long option by name or unambiguous prefix.
func lookupLong(long map[string]int, name string) (full string, kind int, ok bool) {
	if k, ok := long[name]; ok {
		return name, k, true
	}
	if name == "" {
		return "", 0, false
	}
	n := 0
	for opt, k := range long {
		if strings.HasPrefix(opt, name) {
			full, kind = opt, k
			n++
		}
	}
	return full, kind, n == 1
}

// optionValue finds "-c VALUE", "--command VALUE" or "--command=VALUE".
func optionValue(args []word, short, long string) (word, bool) {
	for i, a := range args {
		switch {
		case a.lit && (a.val == short || a.val == long):
			if i+1 < len(args) {
				return args[i+1], true
			}
			return word{}, false
		case a.lit && strings.HasPrefix(a.val, long+"="):
			return word{val: a.val[len(long)+1:], lit: true, eq: -1}, true
		}
	}
	return word{}, false
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
