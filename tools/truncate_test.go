package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		b.WriteString(f(i))
	}
	return b.String()
}

func TestFormatSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0B"}, {5, "5B"}, {1023, "1023B"}, {1024, "1.0KB"}, {1536, "1.5KB"}, {12345, "12.1KB"}, {51200, "50.0KB"}, {3 << 20, "3.0MB"}, {1 << 30, "1.0GB"}} {
		if got := FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestTruncateHeadTail(t *testing.T) {
	small := Limits{MaxLines: 3, MaxBytes: 20}
	tests := []struct {
		name, text string
		tail       bool
		want       string
		by         string
		partial    bool
		firstBig   bool
	}{
		{"fits", "a\nb\nc", false, "a\nb\nc", "", false, false},
		{"head by lines", "a\nb\nc\nd", false, "a\nb\nc", "lines", false, false},
		{"tail by lines", "a\nb\nc\nd", true, "b\nc\nd", "lines", false, false},
		{"head by bytes", "0123456789\n0123456789\nx", false, "0123456789", "bytes", false, false},
		{"tail by bytes", "x\n0123456789\n012345678", true, "0123456789\n012345678", "bytes", false, false},
		{"trailing newline is a line", "a\nb\nc\n", false, "a\nb\nc", "lines", false, false},
		{"first line too big", strings.Repeat("x", 30) + "\nb", false, "", "bytes", false, true},
		{"last line too big keeps its end", "a\n" + strings.Repeat("é", 15), true, strings.Repeat("é", 10), "bytes", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Truncated
			if tt.tail {
				got = TruncateTail(tt.text, small)
			} else {
				got = TruncateHead(tt.text, small)
			}
			if got.Content != tt.want || got.By != tt.by || got.LastLinePartial != tt.partial || got.FirstLineExceedsLimit != tt.firstBig {
				t.Errorf("got %+v\nwant content %q by %q partial %v firstBig %v", got, tt.want, tt.by, tt.partial, tt.firstBig)
			}
			if got.Truncated != (tt.by != "") {
				t.Errorf("Truncated = %v", got.Truncated)
			}
			if !utf8.ValidString(got.Content) {
				t.Errorf("content is not valid UTF-8: %q", got.Content)
			}
			if got.Truncated && (got.OutputBytes != len(got.Content) || got.OutputBytes > small.MaxBytes) {
				t.Errorf("OutputBytes = %d, content %d bytes", got.OutputBytes, len(got.Content))
			}
		})
	}
}

// TestTruncateLine pins reference §12 #53.
func TestTruncateLine(t *testing.T) {
	long := strings.Repeat("x", 600)
	if got := TruncateLine(long, 500); !strings.HasSuffix(got, "[truncated]") || len(got) > 500 {
		t.Errorf("TruncateLine(600 x) = %d bytes %q…", len(got), got[len(got)-20:])
	}
	exact := strings.Repeat("x", 500)
	if got := TruncateLine(exact, 500); got != exact {
		t.Errorf("TruncateLine(500 x) changed the line")
	}
	for _, r := range []string{"é", "€", "😀"} {
		s := strings.Repeat(r, 300)
		got := TruncateLine(s, 500)
		body := strings.TrimSuffix(got, "... [truncated]")
		if !utf8.ValidString(body) || len(got) > 500 || body == got {
			t.Errorf("TruncateLine(%s×300) = %q (%d bytes): split a character or overlong", r, got, len(got))
		}
	}
}

// TestTruncateWithOverflow pins reference §12 #54.
func TestTruncateWithOverflow(t *testing.T) {
	dir := t.TempDir()
	call := Call{ID: "toolu_01", Buffer: "/home/u/p/a.chat"}
	save := func(full string) (string, error) { return SaveFullOutput(dir, call, full) }

	if got := TruncateWithOverflow("short", false, Limits{}, save); got != "short" {
		t.Errorf("short text = %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("short text wrote a file")
	}

	text := lines(2500, func(i int) string { return "line" })
	got := TruncateWithOverflow(text, false, Limits{}, save)
	wantPath := filepath.Join(dir, "flemma_tool_home-u-p-a.chat_toolu_01.txt")
	if !strings.Contains(got, "\n\n[Showing lines 1-2000 of 2500. Full output: "+wantPath+"]") {
		t.Errorf("head notice: %q", got[len(got)-120:])
	}
	if b, err := os.ReadFile(wantPath); err != nil || string(b) != text {
		t.Errorf("full output file: %v (len %d, want %d)", err, len(b), len(text))
	}

	tail := TruncateWithOverflow(lines(2500, func(i int) string { return "l" + string(rune('a'+i%26)) }), true, Limits{}, save)
	if !strings.Contains(tail, "[Showing lines 501-2500 of 2500. Full output:") || !strings.HasPrefix(tail, "l") {
		t.Errorf("tail notice: %q", tail[len(tail)-100:])
	}

	big := TruncateWithOverflow(lines(100, func(int) string { return strings.Repeat("b", 1000) }), false, Limits{}, save)
	if !strings.Contains(big, "[Showing lines 1-51 of 100 (50.0KB limit). Full output:") {
		t.Errorf("bytes notice: %q", big[len(big)-120:])
	}

	one := TruncateWithOverflow(strings.Repeat("z", 60000), false, Limits{}, save)
	if !strings.HasPrefix(one, "[Output too large: 58.6KB in a single line, exceeds 50.0KB limit. Full output: ") {
		t.Errorf("single line: %q", one)
	}
	lastPartial := TruncateWithOverflow(strings.Repeat("z", 60000), true, Limits{}, save)
	if !strings.Contains(lastPartial, "[Showing last 50.0KB of line 1. Full output:") {
		t.Errorf("tail partial: %q", lastPartial[len(lastPartial)-100:])
	}

	failing := func(string) (string, error) { return "", errors.New("disk full") }
	if got := TruncateWithOverflow(text, false, Limits{}, failing); strings.Contains(got, "Full output") || !strings.HasSuffix(got, "[Showing lines 1-2000 of 2500]") {
		t.Errorf("unwritable path: %q", got[len(got)-80:])
	}

	// A hostile id cannot leave the directory.
	p, err := SaveFullOutput(dir, Call{ID: "../../etc/x", Buffer: ""}, "x")
	if err != nil || filepath.Dir(p) != dir {
		t.Errorf("SaveFullOutput with a hostile id = %q, %v", p, err)
	}
	// A symlink planted under the name is replaced, not followed.
	target := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.Symlink(target, filepath.Join(dir, "flemma_tool__planted.txt"))
	if _, err := SaveFullOutput(dir, Call{ID: "planted"}, "new"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the planted symlink was followed: victim now %q", b)
	}
}
