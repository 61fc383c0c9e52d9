package provider_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/provider"
)

// A Writer turns the events of a response into buffer lines.
func ExampleWriter() {
	existing := []string{"@You:", "List the files."}
	w := provider.NewWriter(existing)
	fmt.Printf("placeholder: %q\n", w.Lines())
	for _, e := range []provider.Event{
		{Kind: provider.EventThinking, Text: "A listing answers it."},
		{Kind: provider.EventThinkingSignature, Provider: "anthropic", Signature: "c2ln"},
		{Kind: provider.EventText, Text: "Listing them."},
		{Kind: provider.EventToolUse, ToolUse: &provider.ToolUse{ID: "toolu_01", Name: "ls",
			Input: json.RawMessage(`{"path":".","label":"listing"}`)}},
		{Kind: provider.EventDone, StopReason: "tool_use"},
	} {
		w.Add(e)
	}
	fmt.Println(strings.Join(w.Finish(false), "\n"))
	// Output:
	// placeholder: ["" "@Assistant:"]
	//
	// @Assistant:
	// <thinking anthropic:signature="c2ln">
	// A listing answers it.
	// </thinking>
	//
	// Listing them.
	//
	// **Tool Use:** `ls` (`toolu_01`)
	//
	// ```json
	// {"path": ".", "label": "listing"}
	// ```
	//
	// @You:
	//
}

// Errors carry the HTTP status and the provider's own message.
func ExampleError() {
	err := &provider.Error{Provider: "anthropic", Status: 429, Message: "rate limited", Retryable: true}
	fmt.Println(err)
	// Output: anthropic: 429 rate limited
}
