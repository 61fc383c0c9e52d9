package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flemma-dev/flemma/tools"
)

func ExampleRedact() {
	env := []string{"OPENAI_API_KEY=sk-live-123456", "EDITOR=nvim"}
	fmt.Println(tools.Redact("key=sk-live-123456 editor=nvim", env, tools.DefaultEnvDeny))
	// Output: key=[redacted] editor=nvim
}

func ExampleScrubEnv() {
	fmt.Println(tools.ScrubEnv([]string{"PATH=/bin", "GITHUB_TOKEN=x", "AWS_REGION=eu"}, tools.DefaultEnvDeny))
	// Output: [PATH=/bin]
}

func ExampleFormatSize() {
	fmt.Println(tools.FormatSize(5), tools.FormatSize(1536), tools.FormatSize(51200))
	// Output: 5B 1.5KB 50.0KB
}

func ExampleTruncateWithOverflow() {
	text := "1\n2\n3\n4\n5"
	fmt.Println(tools.TruncateWithOverflow(text, true, tools.Limits{MaxLines: 2}, nil))
	// Output:
	// 4
	// 5
	//
	// [Showing lines 4-5 of 5]
}

func ExampleSandbox_CheckWrite() {
	sb, _ := tools.NewSandbox(tools.SandboxConfig{Enabled: true, Writable: []string{"/srv/project"}}, "/srv/project", "")
	_, err := sb.CheckWrite("../other/file.txt")
	fmt.Println(err)
	// Output: Sandbox: write denied – path is outside writable directories
}

func ExampleFeatures() {
	f := tools.NewFeatures()
	f.Configure(tools.SandboxConfig{Enabled: true, Backend: "none", Network: true})
	f.Declare("journal", true) // a feature the host provides
	fmt.Println(f.Have("feature:network"), f.Have("feature:journal"), f.Have("feature:sandbox"), f.Have("feature:teleport"))
	// Output: true true false false
}

// ExampleUndo writes a file through the executor, then takes the change
// back with the record the result carries.
func ExampleUndo() {
	tmp, _ := os.MkdirTemp("", "flemma-example-")
	defer os.RemoveAll(tmp)
	dir, _ := filepath.EvalSymlinks(tmp)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("draft 1\n"), 0o644)

	sb, _ := tools.NewSandbox(tools.SandboxConfig{Enabled: true, Backend: "none", Writable: []string{dir}}, dir, "")
	env := &tools.Env{Sandbox: sb, Reads: tools.NewReadLog(), BackupDir: filepath.Join(dir, ".backups")}
	reg := tools.NewRegistry()
	reg.MustAdd(tools.Write())
	exec := &tools.Executor{Registry: reg}
	res := exec.Run(context.Background(), tools.Call{ID: "toolu_1", Tool: "write", Cwd: dir, Env: env},
		json.RawMessage(`{"path":"notes.txt","content":"draft 2\n","label":"rewrite"}`))
	fmt.Println(res.Content)

	// :Flemma tool:undo — the changes of a call, last first.
	for i := len(res.Changes) - 1; i >= 0; i-- {
		if err := tools.Undo(res.Changes[i], env.BackupDir); err != nil {
			fmt.Println(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "notes.txt"))
	fmt.Print(string(b))
	// Output:
	// Successfully wrote 8 bytes to notes.txt
	// draft 1
}
