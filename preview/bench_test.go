package preview

import (
	"strings"
	"testing"
)

func BenchmarkFormatBash(b *testing.B) {
	in := map[string]any{"command": "make test", "label": "running tests", "timeout": nil}
	b.ReportAllocs()
	for b.Loop() {
		Format("bash", in, 80, Options{})
	}
}

func BenchmarkFormatBashCut(b *testing.B) {
	in := map[string]any{"command": "go test ./... && go vet ./... && gofmt -l . && staticcheck ./... && echo done", "label": "running all the checks"}
	b.ReportAllocs()
	for b.Loop() {
		Format("bash", in, 80, Options{})
	}
}

func BenchmarkFormatBashCJK(b *testing.B) {
	in := map[string]any{"command": "echo 日本語のテキストです 🎉 café", "label": "多言語のテスト"}
	b.ReportAllocs()
	for b.Loop() {
		Format("bash", in, 80, Options{})
	}
}

func BenchmarkFormatHugeCommand(b *testing.B) {
	in := map[string]any{"command": strings.Repeat("echo lorem ipsum; ", 1<<16), "label": "loop"}
	b.ReportAllocs()
	for b.Loop() {
		Format("bash", in, 80, Options{})
	}
}

func BenchmarkFormatGeneric(b *testing.B) {
	in := map[string]any{
		"query": "preview width", "limit": 5.0, "enabled": true,
		"filters": map[string]any{"lang": "go", "path": "src", "since": "2024"},
		"ids":     []any{1.0, 2.0, 3.0},
	}
	b.ReportAllocs()
	for b.Loop() {
		Format("kb_search", in, 80, Options{})
	}
}
