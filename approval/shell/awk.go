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
