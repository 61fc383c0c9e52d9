package mcp

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/flemma-dev/flemma/tools"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test MCP server, written with the same SDK: in-process over the
// in-memory transport, or as this test binary re-executed with
// FLEMMA_MCP_TEST_SERVER=1 over stdio.

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "Get-Env", Description: "Returns an environment variable."},
		func(_ context.Context, _ *sdk.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*sdk.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%v:%s", ok, v)}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "sum", Description: "Adds."},
		func(_ context.Context, _ *sdk.CallToolRequest, in struct {
			A int `json:"a"`
			B int `json:"b"`
		}) (*sdk.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("it failed on purpose")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exits the server process."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	return s
}

func TestMain(m *testing.M) {
	if os.Getenv("FLEMMA_MCP_TEST_SERVER") == "1" {
		if os.Getenv("FLEMMA_MCP_TEST_FAIL_START") == "1" {
			fmt.Fprintln(os.Stderr, "cannot start: no config")
			os.Exit(2)
		}
		err := testServer().Run(context.Background(), &sdk.StdioTransport{})
		if os.Getenv("FLEMMA_MCP_TEST_STUBBORN") == "1" {
			select {} // a server that outlives its stdin's end
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("FLEMMA_MCP_TEST_HOST") == "1" {
		// A host: starts the stdio server, says its pid, and waits to be
		// killed (TestHostDeathKillsServer).
		exe, _ := os.Executable()
		mgr := New(tools.NewRegistry(), nil)
		_ = mgr.Configure(map[string]ServerConfig{"test": {Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{"FLEMMA_MCP_TEST_SERVER": "1", "FLEMMA_MCP_TEST_STUBBORN": "1"}}}, nil)
		mgr.Ensure(context.Background())
		mgr.mu.Lock()
		s := mgr.servers["test"]
		if s.proc == nil {
			fmt.Println("failed:", s.reason)
		} else {
			fmt.Println(s.proc.cmd.Process.Pid)
		}
		mgr.mu.Unlock()
		select {}
	}
	os.Exit(m.Run())
}
