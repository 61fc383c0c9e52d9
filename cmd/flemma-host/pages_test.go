//go:build linux

package main

import (
	"strings"
	"testing"
)

// The executable's read-only pages let go after the start come back when
// used: the process (this test binary) runs on, its code and tables intact.
func TestDropStartPages(t *testing.T) {
	if vmRSS() <= 0 {
		t.Fatal("VmRSS not read")
	}
	if n := dropStartPages(); n < 1 {
		t.Fatalf("no mapping of the executable was let go (%d)", n)
	}
	// Code, read-only data and the pc tables (a stack trace) still work.
	if s := strings.Repeat("ab", 3); s != "ababab" {
		t.Fatal(s)
	}
	var buf [64 << 10]byte
	_ = buf
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic recovered")
			}
		}()
		var empty []int
		_ = empty[len(t.Name())] // a run-time error: index out of range
	}()
}
