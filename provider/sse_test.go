package provider

import (
	"strings"
	"testing"
)

func TestReadSSE(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	body := ": keep-alive comment\r\n" +
		"event: one\r\ndata: {\"a\":1}\r\n\r\n" +
		"data: first\ndata: second\nid: 7\nretry: 100\n\n" +
		"data:nospace\n\n" +
		"data: [DONE]\n\n" +
		"data: " + long + "\n\n" +
		"stray line\n" +
		"data: last without blank line"
	var got, other []string
	err := readSSE(strings.NewReader(body), func(event string, data []byte) error {
		d := string(data)
		if len(d) > 1000 {
			d = d[:5] + "…" + string(rune('0'+len(d)/(100<<10)))
		}
		got = append(got, event+"|"+d)
		return nil
	}, func(line []byte) { other = append(other, string(line)) }, func() bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`one|{"a":1}`, "|first\nsecond", "|nospace", "|xxxxx…1", "|last without blank line"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events = %q\nwant     %q", got, want)
	}
	if strings.Join(other, ",") != "stray line" {
		t.Errorf("other = %q", other)
	}
}

func TestBaseURL(t *testing.T) {
	for _, tc := range []struct{ base, want string }{
		{"", "https://api.example.com/v1/messages"},
		{"http://localhost:8080", "http://localhost:8080/v1/messages"},
		{"http://localhost:8080/", "http://localhost:8080/v1/messages"},
		{"https://gw.corp/anthropic/v1", "https://gw.corp/anthropic/v1/messages"},
		{"https://gw.corp/anthropic/v1/", "https://gw.corp/anthropic/v1/messages"},
	} {
		if got := baseURL(tc.base, "https://api.example.com", "/v1/messages"); got != tc.want {
			t.Errorf("baseURL(%q) = %q, want %q", tc.base, got, tc.want)
		}
	}
}
