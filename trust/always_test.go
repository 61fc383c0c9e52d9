package trust

import (
	"slices"
	"testing"
)

func TestGrantsNeverChangeInPlace(t *testing.T) {
	var g *Grants
	if !g.Empty() || g.Tool("read") || g.Commands() != nil {
		t.Fatal("a nil Grants grants something")
	}
	a := g.WithTool("read")
	b := a.WithCommands("bash(ls *)", "bash(ls)")
	c := b.WithTool("read").WithTool("calculator")
	if !a.Tool("read") || a.Tool("calculator") || len(a.Commands()) != 0 {
		t.Errorf("a changed: %v %v", a.Tools(), a.Commands())
	}
	if got := c.Tools(); !slices.Equal(got, []string{"calculator", "read"}) {
		t.Errorf("tools = %v", got)
	}
	if got := b.Commands(); !slices.Equal(got, []string{"bash(ls *)", "bash(ls)"}) {
		t.Errorf("commands = %v", got)
	}
	// A clone of a ledger shares the grants, and a new grant in the
	// original does not reach the clone.
	l := NewLedger()
	l.Always = a
	cl := l.Clone()
	l.Always = l.Always.WithTool("bash")
	if cl.Always.Tool("bash") {
		t.Error("a grant reached a clone made before it")
	}
}
