package shell

import (
	"strings"
)

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

// The approve side of awk: -f, -i, -l, -E, --load and friends read code the
// rule cannot see; a program (the first operand, or -e/--source) that
// calls system(), pipes, redirects or reads a command's output is
// refused. Plain text cannot hold braces or parentheses, so an approvable
// program is a pattern such as NR==1 or /re/.
var awkSpec = &approveSpec{custom: awkApprovable}

var awkOpts = opts(`-F= -v= -e= --field-separator= --assign= --source= --posix --traditional --lint?
	--characters-as-bytes --sandbox --help --version`)

func awkApprovable(args []aword) bool {
	ops, _, ok := awkOpts.check(args)
	if !ok {
		return false
	}
	progs := optionValues(args, "-e", "--source")
	if len(progs) == 0 && len(ops) > 0 {
		progs = ops[:1]
	}
	for _, p := range progs {
		if strings.Contains(p, "system") || strings.Contains(p, "getline") || strings.ContainsAny(p, "|>") {
			return false
		}
	}
	return true
}

// optionValues returns the values of a short and a long option, in every
// form (-eV, -e V, --long=V, --long V).
func optionValues(args []aword, short, long string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case s == "--":
			return out
		case s == short || s == long:
			if i+1 < len(args) {
				out = append(out, args[i+1].s)
				i++
			}
		case strings.HasPrefix(s, long+"="):
			out = append(out, s[len(long)+1:])
		case strings.HasPrefix(s, short) && len(s) > len(short) && s[1] != '-':
			out = append(out, s[len(short):])
		}
	}
	return out
}

var awkExamples = []example{
	unverifiable(`awk BEGIN{system("rm x")}`),
	approves("awk *", "awk NR==2 file", true),
	approves("gawk *", "gawk NR==2 file", true),
	approves("mawk *", "mawk NR==2 file", true),
	approves("nawk *", "nawk -e NR==2 file", true),
	approves("gawk *", "gawk -e system file", false),
	approves("awk *", "awk -F: -v x=1 NR==1 /etc/passwd", true),
	approves("awk *", "awk -f prog.awk file", false),
	approves("awk *", "awk -i inplace NR==1 file", false),
	approves("awk *", "awk --load=x NR==1 file", false),
}
