package cycle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flemma-dev/flemma/mcp"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/builtin"
	"github.com/flemma-dev/flemma/tools/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpDeps wires an MCP manager whose servers are an in-memory SDK server
// with an echo tool; connects counts the servers started.
func mcpDeps(t *testing.T, connects *atomic.Int32) Deps {
	reg := tools.NewRegistry()
	reg.Have = sandbox.HaveRequirement
	for _, tl := range builtin.All() {
		reg.MustAdd(tl)
	}
	m := mcp.New(reg, t.Logf)
	m.Connect = func(string, mcp.ServerConfig) (sdk.Transport, error) {
		connects.Add(1)
		s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
		sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text."},
			func(_ context.Context, _ *sdk.CallToolRequest, in struct {
				Text string `json:"text"`
			}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "server says " + in.Text}}}, nil, nil
			})
		ct, st := sdk.NewInMemoryTransports()
		if _, err := s.Connect(context.Background(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	return Deps{Registry: reg, MCP: m}
}

// A model's call to an MCP tool, approved by a name pattern, runs on the
// server and its answer lands in the buffer; the request listed the tool
// with its schema; the server started only at the first press.
func TestMCPToolThroughTheCycle(t *testing.T) {
	var connects atomic.Int32
	deps := mcpDeps(t, &connects)
	prov := &scripted{events: []provider.Event{
		{Kind: provider.EventToolUse, ToolUse: &provider.ToolUse{ID: "toolu_1", Name: "mcp:test:echo", Input: json.RawMessage(`{"text":"hi"}`)}},
		{Kind: provider.EventDone, StopReason: "tool_use"},
	}}
	f := &factory{prov: prov}
	deps.Providers = f.New
	setup := with(noSandbox(), replayAt, map[string]any{
		"mcp_servers": map[string]any{"test": map[string]any{"command": "unused-in-memory"}},
		"tools":       map[string]any{"auto_approve": []any{"mcp__test__*"}, "autopilot": map[string]any{"enabled": false}},
	})
	env := newEnvWith(t, setup, deps)
	if n := connects.Load(); n != 0 {
		t.Fatalf("setup started %d servers", n)
	}
	env.ed.load(1, "", env.dir, "@You:\nsay hi\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "mcp:test:echo")
	env.ed.waitIdle(t, env.h, 1)
	env.press(1)
	env.ed.waitText(t, 1, "server says hi")
	env.ed.waitIdle(t, env.h, 1)
	if n := connects.Load(); n != 1 {
		t.Errorf("%d servers started, want 1", n)
	}
	prov.mu.Lock()
	var def *provider.ToolDef
	for i, d := range prov.reqs[0].Tools {
		if d.Name == "mcp:test:echo" {
			def = &prov.reqs[0].Tools[i]
		}
	}
	prov.mu.Unlock()
	if def == nil || !strings.Contains(compactJSON(def.InputSchema), `"text"`) {
		t.Fatalf("the request's tools lacked mcp:test:echo with its schema: %+v", def)
	}
	res, _ := env.h.onMCP()
	if !strings.Contains(res.Text, "test  [stdio: unused-in-memory]  ready") || !strings.Contains(res.Text, "mcp:test:echo  Echoes text.") {
		t.Errorf(":Flemma mcp:\n%s", res.Text)
	}
}

// A .chat file's frontmatter can neither add a server nor start one.
func TestFrontmatterCannotStartMCPServer(t *testing.T) {
	var connects atomic.Int32
	deps := mcpDeps(t, &connects)
	env := newEnvWith(t, noSandbox(), deps)
	marker := filepath.Join(env.dir, "ran")
	env.ed.load(1, "", env.dir, "```lua\nflemma.opt.mcp_servers = { evil = { command = \"touch\", args = { \""+marker+"\" } } }\n```\n@You:\nhi\n")
	_, msg := env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	if !strings.Contains(msg+strings.Join(env.ed.notifications(), "\n"), "can only be set in setup()") && !hasDiag(env, 1, "can only be set in setup()") {
		t.Errorf("flemma.opt.mcp_servers was not refused: %q %v", msg, diagsOf(env, 1))
	}
	res, _ := env.h.onMCP()
	if connects.Load() != 0 || !strings.Contains(res.Text, "no MCP servers") {
		t.Errorf("a frontmatter started a server: %d connects, %s", connects.Load(), res.Text)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a frontmatter's command ran")
	}
}
