package shell

import (
	"strings"
	"testing"
)

func TestGrantPatterns(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want string // patterns joined by " | "; "" = none
	}{
		{"git status", "git status * | git status"},
		{"git  log   --oneline", "git log * | git log"},
		{"git push origin main", "git push origin main"}, // push: an unknown subcommand
		{"git -C /tmp status", "git -C /tmp status"},     // an option before the subcommand
		{"timeout 5 ls", "timeout 5 ls"},                 // a wrapper
		{"git", "git"},
		{"ls", "ls * | ls"},
		{"rg foo src", "rg * | rg"},
		{"rm -rf build", "rm -rf build"},           // nothing checks rm's operands: exactly this
		{"make test", "make test"},                 // runs code: exactly this
		{"python3 script.py", "python3 script.py"}, // runs code
		{"sh -c ls", "sh -c ls"},
		{"ls | sh", ""},      // a pipeline: no rule matches it
		{"ls > out.txt", ""}, // a redirection
		{"echo $(id)", ""},   // an expansion
		{"", ""},
	} {
		got, ok := GrantPatterns(c.cmd)
		if s := strings.Join(got, " | "); s != c.want || ok != (c.want != "") {
			t.Errorf("GrantPatterns(%q) = %q, %v; want %q", c.cmd, s, ok, c.want)
		}
		// Whatever is granted approves the command it was granted for.
		for _, p := range got {
			if p == got[0] && !Compile(p).Approves(c.cmd) && !(len(got) > 1 && Compile(got[1]).Approves(c.cmd)) {
				t.Errorf("%q granted %q, which does not approve it", c.cmd, p)
			}
		}
	}
	// What a grant of "git status" covers: reads, never a write.
	pats, _ := GrantPatterns("git status")
	approves := func(cmd string) bool {
		for _, p := range pats {
			if Compile(p).Approves(cmd) {
				return true
			}
		}
		return false
	}
	for _, cmd := range []string{"git status", "git status --short"} {
		if !approves(cmd) {
			t.Errorf("the grant of git status does not approve %q", cmd)
		}
	}
	for _, cmd := range []string{"git push", "git commit -m x", "git log", "git log --output=/tmp/x", "git status; rm -rf /", "git -c core.pager=sh log"} {
		if approves(cmd) {
			t.Errorf("the grant of git status approves %q", cmd)
		}
	}
}
