package buffer

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONDepth(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000)
	for _, tc := range []struct {
		raw  string
		want int
	}{
		{`{}`, 1},
		{`{"a": [1, {"b": 2}]}`, 3},
		{`{"s": "{{{[[["}`, 1},
		{`{"s": "\"{"}`, 1},
		{`[[[]]]`, 3},
		{deep, MaxInputDepth + 1},
	} {
		if got := JSONDepth(tc.raw, MaxInputDepth); got != tc.want {
			t.Errorf("JSONDepth(%.30q) = %d, want %d", tc.raw, got, tc.want)
		}
		var v any
		if json.Unmarshal([]byte(tc.raw), &v) == nil {
			if got := ValueDepth(v, MaxInputDepth); got != tc.want {
				t.Errorf("ValueDepth(%.30q) = %d, want %d", tc.raw, got, tc.want)
			}
		}
	}
}

// Issue 24, class 12: a 9,000-level input is not decoded by the parser
// (nothing downstream is handed it); the call stays, with a diagnostic.
func TestDeepInputRefused(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000)
	text := "@Assistant:\n**Tool Use:** `calc` (`d1`)\n\n```json\n" + deep + "\n```\n"
	doc := Parse(strings.Split(text, "\n"))
	u := doc.Use("d1")
	if u == nil || u.Input() != nil || u.RawInput != deep {
		t.Fatalf("use %+v", u)
	}
	found := false
	for _, d := range doc.Diagnostics {
		found = found || strings.Contains(d.Message, "nested deeper than 64 levels")
	}
	if !found {
		t.Errorf("no diagnostic: %+v", doc.Diagnostics)
	}
}
