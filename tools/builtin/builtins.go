package builtin

import "github.com/flemma-dev/flemma/tools"

// All returns every built-in tool. A test registers them all so a
// misdefined one fails the build's tests, not a user's editor. Their
// configuration (sandbox, limits, shell, …) arrives with each call in
// Call.Env, because setup can change at runtime.
func All() []tools.Tool {
	return []tools.Tool{Bash(), Read(), Write(), Edit(), Grep(), Find(), Ls(), Calculator(), CalculatorAsync(), Fetch()}
}
