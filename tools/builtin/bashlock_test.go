package builtin

import (
	"context"
	"testing"
)

func TestRootsOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b []string
		want bool
	}{
		{[]string{"/p"}, []string{"/p"}, true},
		{[]string{"/p"}, []string{"/p/sub"}, true},
		{[]string{"/p/sub"}, []string{"/q", "/p"}, true},
		{[]string{"/p"}, []string{"/pq"}, false},
		{[]string{"/p", "/r"}, []string{"/q"}, false},
		{nil, []string{"/p"}, false},
	} {
		if got := rootsOverlap(c.a, c.b); got != c.want {
			t.Errorf("rootsOverlap(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestLockRoots: a hold on overlapping roots waits (and gives up when its
// context ends); one on other roots does not; a release lets the waiter in.
func TestLockRoots(t *testing.T) {
	release, err := lockRoots(context.Background(), []string{"/p"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := lockRoots(context.Background(), []string{"/q"})
	if err != nil {
		t.Fatalf("other roots waited: %v", err)
	}
	other()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lockRoots(ctx, []string{"/p/sub"}); err == nil {
		t.Fatal("a hold on overlapping roots did not wait")
	}
	got := make(chan func())
	go func() {
		r, _ := lockRoots(context.Background(), []string{"/p/sub"})
		got <- r
	}()
	release()
	release() // twice: no effect
	(<-got)()
}
