package tools_test

import (
	"fmt"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

func ExampleRedact() {
	env := []string{"OPENAI_API_KEY=sk-live-123456", "EDITOR=nvim"}
	fmt.Println(tools.Redact("key=sk-live-123456 editor=nvim", env, sandbox.DefaultEnvDeny))
	// Output: key=[redacted] editor=nvim
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
