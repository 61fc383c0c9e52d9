package secrets

import (
	"strings"
	"sync"
	"testing"
)

func TestRedact(t *testing.T) {
	var s Set
	s.Add("sk-live-0123456789abcdef")
	s.Add("short")                         // a word, not a credential
	s.AddHeader("Bearer tok_ABCDEF123456") // the token alone is echoed too
	s.AddHeader("https://github.com/flemma-dev/flemma")
	s.AddHeader("https://user:pw123456@proxy.example/x")
	s.Add("sk-live-0123") // contained in a longer value: the longer one wins
	for _, tc := range []struct{ in, want string }{
		{"key sk-live-0123456789abcdef refused", "key [redacted] refused"},
		{`{"error":"invalid token tok_ABCDEF123456"}`, `{"error":"invalid token [redacted]"}`},
		{"Authorization: Bearer tok_ABCDEF123456", "Authorization: [redacted]"},
		{"a short word stays", "a short word stays"},
		{"see https://github.com/flemma-dev/flemma", "see https://github.com/flemma-dev/flemma"},
		{"via https://user:pw123456@proxy.example/x", "via [redacted]"},
		{"prefix sk-live-0123 only", "prefix [redacted] only"},
	} {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if s.Len() != 5 {
		t.Errorf("Len = %d", s.Len())
	}
}

func TestRedactConcurrent(t *testing.T) {
	var s Set
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			v := strings.Repeat(string(rune('a'+i)), 12)
			s.Add(v)
			if got := s.Redact("x " + v + " y"); got != "x [redacted] y" {
				t.Errorf("Redact = %q", got)
			}
		}(i)
	}
	wg.Wait()
}

var sink string

func BenchmarkRedact(b *testing.B) {
	var s Set
	for i := 0; i < 20; i++ {
		s.Add(strings.Repeat(string(rune('a'+i)), 40))
	}
	text := strings.Repeat("an ordinary line of tool output with nothing secret in it\n", 2000)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		sink = s.Redact(text)
	}
}

func BenchmarkRedactHit(b *testing.B) {
	var s Set
	for i := 0; i < 20; i++ {
		s.Add(strings.Repeat(string(rune('a'+i)), 40))
	}
	text := strings.Repeat("an ordinary line of tool output with nothing secret in it\n", 2000) + strings.Repeat("c", 40)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		sink = s.Redact(text)
	}
}
