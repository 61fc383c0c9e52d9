package cycle

import (
	"context"
	"encoding/json"

	"github.com/flemma-dev/flemma/tools"
)

// runTool runs one call of tool name through the engine's executor, as a
// press would, without a buffer.
func (env *testEnv) runTool(name, input string) tools.Result {
	return env.h.exec.Run(context.Background(), tools.Call{ID: "toolu_run", Tool: name, Bufnr: 1}, json.RawMessage(input))
}
