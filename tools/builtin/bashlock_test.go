package builtin

import (
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

// TestHoldBaseline: a command that starts while another runs in
// overlapping roots puts a link back to the target the earlier one read, not
// to the one it read itself (what the other may have done); in other roots,
// or once the earlier one has ended, its own.
func TestHoldBaseline(t *testing.T) {
	real := linkBefore{target: "realgit"}
	evil := linkBefore{target: "evil"}
	links := func(l linkBefore) map[string]linkBefore { return map[string]linkBefore{"/p/.git": l} }
	_, releaseB := holdBaseline([]string{"/p"}, links(real))
	got, releaseA := holdBaseline([]string{"/p/sub", "/p"}, links(evil))
	if got["/p/.git"] != real {
		t.Errorf("a command started while another ran: %v, want the earlier baseline %v", got["/p/.git"], real)
	}
	other, releaseO := holdBaseline([]string{"/q"}, map[string]linkBefore{"/q/.git": evil})
	if other["/q/.git"] != evil {
		t.Errorf("other roots: %v, want its own reading", other["/q/.git"])
	}
	releaseO()
	releaseB()
	releaseB() // twice: no effect
	// A still runs: a third command takes A's baseline (the earliest left).
	third, releaseC := holdBaseline([]string{"/p"}, links(linkBefore{target: "later"}))
	if third["/p/.git"] != real {
		t.Errorf("after the first ended: %v, want A's baseline %v", third["/p/.git"], real)
	}
	releaseA()
	releaseC()
	alone, releaseD := holdBaseline([]string{"/p"}, links(evil))
	defer releaseD()
	if alone["/p/.git"] != evil {
		t.Errorf("alone: %v, want its own reading", alone["/p/.git"])
	}
	if len(tracking.active) != 1 {
		t.Errorf("%d holds left, want 1", len(tracking.active))
	}
}
