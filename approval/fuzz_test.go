package approval

import (
	"strings"
	"testing"

	"github.com/google/shlex"
)

// FuzzMatchCommand checks the approve side's invariant — whatever bash(*)
// approves is a plain word list that the shell splits exactly as strings.Fields
// does — and that the deny side terminates on any input.
func FuzzMatchCommand(f *testing.F) {
	for _, s := range []string{
		"git status", "ls -la src", "echo $(rm -rf /)", "a;b", "cat <<EOF\nx\nEOF", "f() { rm; }",
		"sh -c 'eval \"rm x\"'", "ｇｉｔ status", "g''it", "echo\u00a0hi", "x=`y`", "((1<<2))\nrm",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if MatchCommand("bash(*)", cmd, true) {
			words, err := shlex.Split(cmd)
			if err != nil || strings.Join(words, " ") != strings.Join(strings.Fields(cmd), " ") {
				t.Fatalf("approved %q, which the shell would not split as plain words (%q, %v)", cmd, words, err)
			}
			for i := 0; i < len(cmd); i++ {
				if c := cmd[i]; c != ' ' && c != '\t' && !plainByte(c) {
					t.Fatalf("approved %q containing byte %q", cmd, c)
				}
			}
			// Anything approvable is also seen by a deny rule.
			if !MatchCommand("bash(*)", cmd, false) {
				t.Fatalf("deny bash(*) does not see approved %q", cmd)
			}
		}
		_ = MatchCommand("bash(rm *)", cmd, false)
		// A denied command stays denied when chained after another one.
		if MatchCommand("bash(rm *)", cmd, false) && !strings.ContainsAny(cmd, "'\"\\`$#<(") {
			if !MatchCommand("bash(rm *)", "true; "+cmd, false) {
				t.Fatalf("%q denied alone but not after 'true; '", cmd)
			}
		}
	})
}

// FuzzDenyWrapped checks that the deny side cannot be evaded by wrapping: a
// command the policy denies or asks about stays denied or asked about when
// it is run through sh -c, eval, a here-string to bash, or a wrapper.
func FuzzDenyWrapped(f *testing.F) {
	for _, e := range evasions {
		if len(e.command) < 200 {
			f.Add(e.command)
		}
	}
	f.Add("function<0 .") // a keyword stays one only in command position
	f.Add("a!= rm!")      // env sets a!= and runs rm!
	f.Add("a$A' ='")      // env sets a variable, whatever $A is
	pol := evasionPolicy(f)
	f.Fuzz(func(t *testing.T, cmd string) {
		if d, _ := pol.Decide(bashCall(cmd)); d == Approve {
			return
		}
		q := "'" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
		wraps := []string{"sh -c " + q, "eval " + q, "bash <<< " + q, "sudo -u root bash -c " + q,
			"env -i sh -c " + q, "true; " + cmd}
		// Prefix wrappers run the first simple command; a keyword there
		// would become an argument.
		n := 0
		for n < len(cmd) && subwordByte(cmd[n]) {
			n++
		}
		first := cmd[:n]
		if c := cmd[0]; 'a' <= c && c <= 'z' && !keywords[first] {
			for _, w := range []string{"sudo ", "env -i ", "nohup ", "2>/dev/null ", "timeout 5 ", "command ",
				"X=1 ", "time ", "nice -n5 ", "exec ", "xargs "} {
				if w == "env -i " && mayAssign(cmd) {
					continue // env takes any X=Y as a variable, "a!=" too
				}
				wraps = append(wraps, w+cmd)
			}
		}
		for _, w := range wraps {
			if d, rule := pol.Decide(bashCall(w)); d == Approve {
				t.Fatalf("%q is held, but %q is approved (%s)", cmd, w, rule)
			}
		}
	})
}

// keywords are the words that are keywords only in command position, as
// the shell's reserved words are (a prefix wrapper would make them
// arguments).
var keywords = map[string]bool{"case": true, "esac": true, "for": true, "select": true, "time": true,
	"[[": true, "]]": true, "function": true, "coproc": true, "{": true, "}": true, "!": true, "if": true,
	"then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true, "while": true,
	"until": true, "in": true}

// mayAssign reports whether the first shell word of cmd may hold a '=':
// env takes any X=Y as a variable. It errs towards yes (quotes, escapes and
// expansions may make one).
func mayAssign(cmd string) bool {
	f := strings.Fields(cmd)
	return len(f) > 0 && strings.ContainsAny(f[0], "=\\'\"$`")
}

// subwordByte: the bytes of a word in the sense of a rule's first word.
func subwordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-'
}

// plainByte is the approve side's byte whitelist, restated.
func plainByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_./:=,+@%", c) >= 0
}
