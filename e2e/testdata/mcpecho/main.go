// Command mcpecho is the e2e tests' MCP server, written with the official
// Go SDK: one tool, echo, over stdio.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcpecho", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, in struct {
			Text string `json:"text" jsonschema:"the text to echo"`
		}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "mcpecho says: " + in.Text}}}, nil, nil
		})
	if ref := os.Getenv("MCPECHO_SCHEMA_REF"); ref != "" {
		// A tool whose schema refers to a file (issue 24, class 8).
		s.AddTool(&sdk.Tool{Name: "peek", Description: "Its schema refers to a file.",
			InputSchema: json.RawMessage(`{"type": "object", "properties": {"x": {"$ref": "` + ref + `"}}}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "peeked"}}}, nil
			})
	}
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
