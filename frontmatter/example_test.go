package frontmatter_test

import (
	"context"
	"fmt"

	"github.com/flemma-dev/flemma/frontmatter"
)

func ExampleEvaluator_Evaluate() {
	ev := frontmatter.NewEvaluator(frontmatter.Limits{})
	setup := frontmatter.Setup{
		Tools:       []string{"bash", "read", "write"},
		KnownTools:  []string{"bash", "read", "write", "calculator"},
		AutoApprove: []string{"$default"},
		Presets:     []string{"$default", "$readonly"},
	}
	code := `flemma.opt.thinking = "medium"
flemma.opt.tools:append("calculator")
flemma.opt.tools.auto_approve:remove("write")
flemma.opt.tools = flemma.opt.tools - "bsh"
name = "Ada"`
	res := ev.Evaluate(frontmatter.Source{Language: "lua", Code: code, StartLine: 1}, setup)

	fmt.Println(*res.Opts.Thinking, res.Opts.Tools)
	fmt.Println(res.Opts.AutoApprove, res.Opts.AutoApproveExclusions)
	fmt.Println(res.Vars["name"])
	for _, d := range res.Diagnostics {
		fmt.Println(d)
	}
	fmt.Println("blocking:", res.Blocking())
	// Output:
	// medium [bash read write calculator]
	// [$default] [write]
	// Ada
	// line 5: error: flemma.opt.tools: unknown tool 'bsh' -- did you mean 'bash'?
	// blocking: true
}

func ExampleFunc_Call() {
	ev := frontmatter.NewEvaluator(frontmatter.Limits{})
	code := `flemma.opt.tools.auto_approve = function(tool_name, input, ctx)
  if tool_name == "bash" and input.command:match("^git status") then return true end
  if tool_name == "bash" and input.command:find("rm -rf", 1, true) then return "deny" end
  return nil
end`
	res := ev.Evaluate(frontmatter.Source{Language: "lua", Code: code, StartLine: 1}, frontmatter.Setup{})
	f := res.Opts.AutoApproveFunc
	for _, cmd := range []string{"git status", "rm -rf /", "make"} {
		d, err := f.Call(context.Background(), "bash", map[string]any{"command": cmd}, nil)
		fmt.Printf("%q -> %q %v\n", cmd, d, err)
	}
	// Output:
	// "git status" -> "approve" <nil>
	// "rm -rf /" -> "deny" <nil>
	// "make" -> "" <nil>
}

func ExampleEvaluator_Evaluate_json() {
	ev := frontmatter.NewEvaluator(frontmatter.Limits{})
	code := `{
  "flemma": {"tools": {"autopilot": false, "auto_approve": {"$append": "bash"}}, "temperature": 0.2},
  "name": "Alice",
  "age": 30
}`
	res := ev.Evaluate(frontmatter.Source{Language: "json", Code: code, StartLine: 1}, frontmatter.Setup{AutoApprove: []string{"$default"}})
	fmt.Println(*res.Opts.Autopilot, *res.Opts.Temperature, res.Opts.AutoApprove)
	fmt.Println(res.Vars["name"], res.Vars["age"], len(res.Diagnostics))
	// Output:
	// false 0.2 [$default bash]
	// Alice 30 0
}
