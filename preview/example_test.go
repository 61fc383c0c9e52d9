package preview_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/preview"
)

func ExampleFormat() {
	// Input as the host decodes it from the model's JSON: numbers are
	// float64, JSON null is nil.
	var in map[string]any
	_ = json.Unmarshal([]byte(`{"label":"reading config","path":"src/config.lua","offset":0,"limit":50}`), &in)
	fmt.Println(preview.Format("read", in, 80, preview.Options{}))

	fmt.Println(preview.Format("bash", map[string]any{"command": "make test", "label": "running tests", "timeout": nil}, 80, preview.Options{}))
	fmt.Println(preview.Format("write", map[string]any{"path": "output.txt", "content": strings.Repeat("x", 2355), "label": "saving log"}, 80, preview.Options{}))
	fmt.Println(preview.Format("calculator_async", map[string]any{"expression": "sqrt(16)", "delay": 500.0}, 80, preview.Options{}))
	// Output:
	// read: src/config.lua  +0,50  # reading config
	// bash: $ make test  # running tests
	// write: output.txt (2.3KB)  # saving log
	// calculator_async: sqrt(16)  # 500ms
}

func ExampleFormat_truncated() {
	in := map[string]any{"command": "go test ./...\ngo vet ./...", "label": "checks"}
	for _, width := range []int{40, 20, 12} {
		fmt.Printf("%-2d |%s|\n", width, preview.Format("bash", in, width, preview.Options{}))
	}
	// Output:
	// 40 |bash: $ go test ./...↵go vet ./...  # c…|
	// 20 |bash: $ go test ./.…|
	// 12 |bash: $ go …|
}

func ExampleFormat_generic() {
	in := map[string]any{
		"query":   "preview width",
		"limit":   5.0,
		"filters": map[string]any{"lang": "go", "path": "src", "since": "2024", "tag": "x"},
		"ids":     []any{1.0, 2.0, 3.0},
		"cursor":  nil,
	}
	fmt.Println(preview.Format("kb_search", in, 100, preview.Options{}))
	fmt.Println(preview.Format("noop", map[string]any{}, 100, preview.Options{}))
	// Output:
	// kb_search: limit=5, query="preview width", filters={lang, path, +2 more}, ids=[3 items]
	// noop
}

func ExampleFormat_custom() {
	// A Lua tool's format_preview(input, max_length), wrapped by the caller.
	in := map[string]any{"query": "foo", "limit": 5.0}
	custom := func(maxLen int) (string, bool) {
		return fmt.Sprintf("%q (limit %v)\n(max %d)", in["query"], in["limit"], maxLen), true
	}
	fmt.Println(preview.Format("my_search", in, 50, preview.Options{Custom: custom, EOL: "¬"}))
	// Output:
	// my_search: "foo" (limit 5)¬(max 39)
}

func ExampleFormatSize() {
	for _, n := range []int64{0, 5, 1536, 51200, 3 << 20} {
		fmt.Println(preview.FormatSize(n))
	}
	// Output:
	// 0B
	// 5B
	// 1.5KB
	// 50.0KB
	// 3.0MB
}
