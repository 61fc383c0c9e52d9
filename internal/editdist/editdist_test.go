package editdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"raed", "read", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3}} {
		if got := Distance(tt.a, tt.b, 1<<30); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	// With a bound, the distance is exact below it and the bound otherwise.
	words := []string{"", "a", "ab", "ba", "abc", "acb", "bca", "read", "raed", "dear", "bash", "abash", "kitten", "sitting", "calculator", "calculater"}
	for _, a := range words {
		for _, b := range words {
			exact := Distance(a, b, 1<<30)
			for bound := 1; bound <= 5; bound++ {
				if got := Distance(a, b, bound); got != min(exact, bound) {
					t.Errorf("Distance(%q, %q, %d) = %d, want %d", a, b, bound, got, min(exact, bound))
				}
			}
		}
	}
}
