package shell

import (
	"strings"
)

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

// runWrap reads a wrapper's options and goes on with the command it runs.
func (a *analysis) runWrap(x cmdCall) step {
	rest, opts, certain := parseOpts(x.args, x.h.spec)
	for _, o := range opts {
		if o.has {
			a.suspect(o.val)
		}
	}
	if !certain {
		a.suspectAll(x.args)
	}
	if done, k := a.wrapperHook(x.base, opts, &rest, x.c, x.depth, x.open); done {
		return step{k: k}
	}
	if len(rest) == 0 && x.h.spec.shellIfEmpty {
		a.unverify() // an interactive shell reading stdin
		return step{k: kUnknown}
	}
	return step{next: rest, more: true, open: x.open || x.h.spec.open}
}

// runCommand: command -v/-V only prints what a name would run.
func (a *analysis) runCommand(x cmdCall) step {
	if hasOpt(x.args, 'v') || hasOpt(x.args, 'V') {
		return step{k: kData}
	}
	rest, _, certain := parseOpts(x.args, x.h.spec)
	if !certain {
		a.suspectAll(x.args)
	}
	return x.then(rest)
}

// The approve side of wrappers. A transparent wrapper runs the command
// after its options unchanged (env, timeout, nice, ...): its own options
// must be free (time -o writes a file, env -S splits a string into a
// command, ionice -p and chrt -p change other processes), then the command
// is checked like any other. The others (sudo, xargs, flock, watch,
// strace, ...) run commands in ways a rule cannot follow: a rule that
// names one grants what it runs (runsSpec).
var (
	runsSpec    = &approveSpec{runs: true}
	timeoutSpec = &approveSpec{wrapper: true, positional: 1, opts: opts(`-s= -k= -v --signal= --kill-after=
		--foreground --preserve-status --verbose`)}
	niceSpec    = &approveSpec{wrapper: true, opts: opts(`-# -n= --adjustment=`)}
	nohupSpec   = &approveSpec{wrapper: true, opts: opts(``)}
	stdbufSpec  = &approveSpec{wrapper: true, opts: opts(`-i= -o= -e= --input= --output= --error=`)}
	timeSpec    = &approveSpec{wrapper: true, opts: opts(`-p -v -q -f= --portability --verbose --quiet --format=`)}
	commandSpec = &approveSpec{wrapper: true, opts: opts(`-p -v -V`)}
	setsidSpec  = &approveSpec{wrapper: true, opts: opts(`-c -f -w --ctty --fork --wait`)}
	ioniceSpec  = &approveSpec{wrapper: true, opts: opts(`-c= -n= -t --class= --classdata= --ignore`)}
	chrtSpec    = &approveSpec{wrapper: true, positional: 1, opts: opts(`-a -b -d -f -i -o -r -R -v -T= -P= -D=
		--batch --deadline --fifo --idle --other --rr --reset-on-fork --verbose --sched-runtime=
		--sched-period= --sched-deadline=`)}
	tasksetSpec  = &approveSpec{wrapper: true, positional: 1, opts: opts(`-c -a --cpu-list --all-tasks`)}
	unbufferSpec = &approveSpec{wrapper: true, opts: opts(`-p`)}
)

var wrapperExamples = []example{
	denies("rm *", "sudo -Eu root rm x", Runs),
	denies("rm *", "timeout 5 rm x", Runs),
	approves("timeout *", "timeout 5 git status", true),
	approves("timeout *", "timeout 5 git log --output=x", false),
	approves("timeout *", "timeout 5 make", false), // make runs code: name it
	approves("timeout 60 make*", "timeout 60 make test", true),
	approves("nice *", "nice -n5 ls -la", true),
	approves("nice *", "nice -5 ls -la", true),
	approves("env *", "env -C /tmp/other git status", false), // another repository's configuration
	approves("time *", "time ls", true),
	approves("time *", "time -o out ls", false),
	approves("env *", "env", true),
	approves("env *", "env -i ls", true),
	approves("env *", "env GIT_PAGER=sh git log", false),
	approves("env *", "env LD_PRELOAD=/tmp/x.so ls", false),
	approves("env *", "env -S sh", false),
	approves("env *", "env rg --pre=sh x", false),
	approves("env *", "env sh", false),
	approves("env NO_COLOR=1 *", "env NO_COLOR=1 ls", true),
	approves("command *", "command -v git", true),
	approves("ionice *", "ionice -c3 ls", true),
	approves("nohup *", "nohup ls", true),
	approves("stdbuf *", "stdbuf -oL ls", true),
	approves("setsid *", "setsid -w ls", true),
	approves("chrt *", "chrt -b 0 ls", true),
	approves("chrt *", "chrt -p 0 1", false),
	approves("taskset *", "taskset -c 0 ls", true),
	approves("taskset *", "taskset -p 1", false),
	approves("unbuffer *", "unbuffer ls", true),
	approves("ionice *", "ionice -p 1", false),
	approves("sudo *", "sudo rm -rf x", true), // the rule names sudo: a grant
	approves("xargs *", "xargs rm", true),
	approves("*", "sudo ls", false),
	approves("*", "xargs ls", false),
}
