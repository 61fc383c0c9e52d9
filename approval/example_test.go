package approval_test

import (
	"context"
	"fmt"

	"github.com/flemma-dev/flemma/approval"
)

func ExampleChain_Decide() {
	presets, _ := approval.NewPresets(map[string]approval.PresetDef{
		"$git":    {Approve: []string{"bash(git status*)", "bash(git diff*)"}},
		"$safety": {Deny: []string{"bash(rm -rf*)", "bash(git push*)"}},
	}, nil)
	chain := approval.NewChain(nil)
	for _, r := range approval.Builtins(approval.Setup{
		RequireApproval:      true,
		AutoApprove:          []string{"$default", "$git", "$safety"},
		AutoApproveSandboxed: true,
		Presets:              presets,
	}) {
		chain.Register(r)
	}

	bash := func(command string) approval.Call {
		return approval.Call{Tool: "bash", Input: map[string]any{"command": command},
			Capabilities: []string{approval.CapSandboxed}}
	}
	for _, c := range []approval.Call{
		{Tool: "read", Input: map[string]any{"path": "go.mod"}, Tags: []string{"filesystem", approval.TagReadonly}},
		bash("git status --short"),
		bash("git status && git push"),
		bash("echo done; rm -rf build"),
		bash("make test"),
		{Tool: "calculator"},
	} {
		fmt.Println(chain.Decide(context.Background(), c))
	}
	// Output:
	// approve by urn:flemma:approval:config ($default)
	// approve by urn:flemma:approval:config (bash(git status*) from $git)
	// deny by urn:flemma:approval:config (bash(git push*) from $safety)
	// deny by urn:flemma:approval:config (bash(rm -rf*) from $safety)
	// require_approval by default
	// require_approval by default
}

func ExampleMatchCommand() {
	fmt.Println(approval.MatchCommand("bash(git status*)", "git status --short", true))
	fmt.Println(approval.MatchCommand("bash(git status*)", "git status; rm -rf /", true))
	fmt.Println(approval.MatchCommand("bash(rm *)", "echo hi && sudo rm -rf /", false))
	// Output:
	// true
	// false
	// true
}
