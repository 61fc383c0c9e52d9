package cycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func noSandbox() map[string]any { return map[string]any{"sandbox": map[string]any{"enabled": false}} }

var (
	lsCall   = call{"toolu_ls", "ls", map[string]any{"path": ".", "label": "listing"}}
	bashCall = call{"toolu_sh", "bash", map[string]any{"command": "echo hi", "label": "saying hi"}}
)

// counter is a bash call that appends a line to a file each time it runs:
// how tests count runs.
func counter(env *testEnv, id string) call {
	return call{id, "bash", map[string]any{"command": "echo run >> " + filepath.Join(env.dir, "runs") + "; echo ran", "label": "counting"}}
}

func (env *testEnv) runs() int {
	b, _ := os.ReadFile(filepath.Join(env.dir, "runs"))
	return strings.Count(string(b), "run")
}

// The whole loop with the default policy: the model's ls is approved by
// $default, its bash waits; the user approves it by editing the fence; both
// run, and autopilot sends the results and writes the answer.
func TestLoopUserApprovesByEditingTheFence(t *testing.T) {
	env := newEnv(t, with(noSandbox(), script(t,
		turn{text: "Looking.", calls: []call{lsCall, bashCall}},
		turn{text: "Done."},
	)))
	if err := os.WriteFile(filepath.Join(env.dir, "a.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nlook around\n")
	env.as("press").reply(env.h.Cycle(1))
	env.ed.waitIdle(t, env.h, 1)
	env.show(1, "the response, categorized by autopilot")
	env.ed.replace(t, 1, "```flemma:tool status=pending", "```flemma:tool status=approved")
	env.as("press after approving bash").reply(env.h.Cycle(1))
	env.ed.waitText(t, 1, "Done.")
	env.ed.waitIdle(t, env.h, 1)
	env.show(1, "results sent, the answer in")
	env.golden()
}
