package provider

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/chatgen"
)

// BenchmarkEstimateDocument: the estimate of the next send of a
// 10,000-line chat (what :Flemma status and flemma.estimate compute; a
// send computes EstimateTokens of the conversation it already built).
func BenchmarkEstimateDocument(b *testing.B) {
	doc := buffer.Parse(strings.Split(chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 400}), "\n"))
	tools := testTools()
	b.ReportAllocs()
	for b.Loop() {
		EstimateDocument(doc, "anthropic", tools)
	}
}

// BenchmarkEstimateTokens: the estimate alone, over a conversation built.
func BenchmarkEstimateTokens(b *testing.B) {
	doc := buffer.Parse(strings.Split(chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 400}), "\n"))
	system, msgs := Conversation(doc, "anthropic")
	tools := testTools()
	b.ReportAllocs()
	for b.Loop() {
		EstimateTokens(system, msgs, tools)
	}
}
