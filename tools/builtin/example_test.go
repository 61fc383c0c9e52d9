package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/builtin"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// ExampleUndo writes a file through the executor, then takes the change
// back with the record the result carries.
func ExampleUndo() {
	tmp, _ := os.MkdirTemp("", "flemma-example-")
	defer os.RemoveAll(tmp)
	dir, _ := filepath.EvalSymlinks(tmp)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("draft 1\n"), 0o644)

	sb, _ := sandbox.New(sandbox.Config{Enabled: true, Backend: "none", Writable: []string{dir}}, dir, "")
	env := &tools.Env{Sandbox: sb, Reads: tools.NewReadLog(), BackupDir: filepath.Join(dir, ".backups")}
	reg := tools.NewRegistry()
	reg.MustAdd(builtin.Write())
	exec := &tools.Executor{Registry: reg}
	res := exec.Run(context.Background(), tools.Call{ID: "toolu_1", Tool: "write", Cwd: dir, Env: env},
		json.RawMessage(`{"path":"notes.txt","content":"draft 2\n","label":"rewrite"}`))
	fmt.Println(res.Content)

	// :Flemma tool:undo — the changes of a call, last first.
	for i := len(res.Changes) - 1; i >= 0; i-- {
		if err := builtin.Undo(res.Changes[i], env.BackupDir); err != nil {
			fmt.Println(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "notes.txt"))
	fmt.Print(string(b))
	// Output:
	// Successfully wrote 8 bytes to notes.txt
	// draft 1
}
