package tools_test

import (
	"fmt"

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
