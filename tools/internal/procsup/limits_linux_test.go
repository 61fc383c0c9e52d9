package procsup

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLimitWrapper runs the limit wrapper of this binary (used where the
// system has no prlimit(1)) and prlimit when there is one: the command
// sees the limits from its first instruction.
func TestLimitWrapper(t *testing.T) {
	lim := Limits{OpenFiles: 99, FileSize: 1 << 20, CPU: 7}
	check := func(name string, cmd *exec.Cmd) {
		t.Helper()
		out, err := cmd.CombinedOutput()
		got := strings.Fields(string(out))
		if err != nil || len(got) != 3 || got[0] != "99" || got[2] != "7" || (got[1] != "1024" && got[1] != "2048") {
			t.Errorf("%s: %v %q (want 99, the file size in blocks, 7)", name, err, out)
		}
	}
	sh := []string{"sh", "-c", "ulimit -n; ulimit -f; ulimit -t"}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = append([]string{LimitArg0, EncodeLimits(lim), "/bin/sh"}, sh...)
	check("limit wrapper", cmd)
	if prlimitPath() == "" {
		t.Log("no prlimit(1) here: only the limit wrapper was checked")
		return
	}
	path, argv := WrapLimits("/bin/sh", sh, lim)
	if path != prlimitPath() {
		t.Fatalf("WrapLimits did not use prlimit: %s %q", path, argv)
	}
	cmd = exec.Command(path)
	cmd.Args = argv
	check("prlimit", cmd)
}
