//go:build flemmabench

package cycle

import (
	"context"
	"encoding/json"

	"github.com/flemma-dev/flemma/tools"
)

// MBenchRun runs one tool call through the executor, without a buffer: the
// Lua tool overhead benchmark (e2e/BenchmarkLuaToolOverhead) measures host
// → Neovim → host with it. Only a host built with -tags flemmabench serves
// it (internal/nvimtest.BuildBenchHost); it is not part of the protocol.
const MBenchRun = "flemma.bench_run"

// BenchReply is one tool call's result and duration.
type BenchReply struct {
	Content string `msgpack:"content"`
	IsError bool   `msgpack:"is_error"`
	NS      int64  `msgpack:"ns"`
}

func benchMethods(h *Engine) []Method {
	return []Method{{MBenchRun, h.benchRun, false}}
}

func (h *Engine) benchRun(bufnr int, name, input string) (BenchReply, error) {
	res := h.exec.Run(context.Background(), tools.Call{ID: "bench", Tool: name, Bufnr: bufnr}, json.RawMessage(input))
	return BenchReply{Content: res.Content, IsError: res.IsError, NS: res.Duration.Nanoseconds()}, nil
}
