package sandbox_test

import (
	"fmt"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

func ExampleScrubEnv() {
	fmt.Println(sandbox.ScrubEnv([]string{"PATH=/bin", "GITHUB_TOKEN=x", "AWS_REGION=eu"}, sandbox.DefaultEnvDeny))
	// Output: [PATH=/bin]
}

func ExampleSandbox_CheckWrite() {
	sb, _ := sandbox.New(sandbox.Config{Enabled: true, Writable: []string{"/srv/project"}}, "/srv/project", "")
	_, err := sb.CheckWrite("../other/file.txt")
	fmt.Println(err)
	// Output: Sandbox: write denied – path is outside writable directories
}

func ExampleFeatures() {
	f := sandbox.NewFeatures()
	f.Configure(sandbox.Config{Enabled: true, Backend: "none", Network: true})
	f.Declare("journal", true) // a feature the host provides
	fmt.Println(f.Have("feature:network"), f.Have("feature:journal"), f.Have("feature:sandbox"), f.Have("feature:teleport"))
	// Output: true true false false
}
