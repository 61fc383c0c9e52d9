//go:build linux

package builtin

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBwrapTestsFailUnderCI runs tests that need bubblewrap in a copy of
// the test binary that cannot find it (an empty $PATH): with CI set they
// must fail and say why — the CI machine is meant to have bubblewrap, and
// a skip there would hide that the sandbox went untested — and without CI
// they skip. It covers both helpers: bwrapFixture and requireBwrap.
func TestBwrapTestsFailUnderCI(t *testing.T) {
	if os.Getenv("FLEMMA_TEST_CHILD") != "" {
		t.Skip("not in the child")
	}
	for _, test := range []string{"TestBwrapConfinesWrites", "TestBwrapKillTree", "TestBwrapHidesSockets"} {
		for _, ci := range []bool{true, false} {
			cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "PATH=") {
					env = append(env, kv)
				}
			}
			env = append(env, "PATH="+t.TempDir(), "FLEMMA_TEST_CHILD=1")
			if ci {
				env = append(env, "CI=true")
			}
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			switch {
			case ci && err == nil:
				t.Errorf("%s with CI set and no bubblewrap did not fail:\n%s", test, out)
			case ci && !strings.Contains(string(out), "CI is set but bubblewrap is not usable"):
				t.Errorf("%s with CI set failed without saying why:\n%s", test, out)
			case !ci && err != nil:
				t.Errorf("%s without CI and without bubblewrap failed instead of skipping: %v\n%s", test, err, out)
			case !ci && !strings.Contains(string(out), "SKIP"):
				t.Errorf("%s without CI and without bubblewrap did not skip:\n%s", test, out)
			}
		}
	}
}
