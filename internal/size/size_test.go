package size

import "testing"

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0B"}, {1023, "1023B"}, {1024, "1.0KB"}, {2560, "2.5KB"}, {51200, "50.0KB"}, {1 << 20, "1.0MB"}, {3 << 30, "3.0GB"}} {
		if got := Format(tt.n); got != tt.want {
			t.Errorf("Format(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
