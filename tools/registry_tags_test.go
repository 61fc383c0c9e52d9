package tools

import (
	"context"
	"slices"
	"testing"
)

// A tool that supersedes another keeps that one's approval: its name
// (ApprovalName) and its tags (ApprovalTags), besides its own tags.
func TestApprovalTags(t *testing.T) {
	mk := func(name, supersedes string, tags ...string) Tool {
		return Typed(Spec{Name: name, Description: "d", Supersedes: supersedes, Tags: tags},
			func(context.Context, Call, noInput) (Output, error) { return Output{Text: "ok"}, nil })
	}
	r := NewRegistry()
	r.MustAdd(mk("read", "", "filesystem", "readonly"))
	r.MustAdd(mk("grep", "", "filesystem", "readonly"))
	r.MustAdd(mk("calc", "", "math"))
	r.MustAdd(mk("my_read", "read", "text"))
	r.MustAdd(mk("grep", "grep"))
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"my_read", []string{"text", "filesystem", "readonly"}},
		{"grep", []string{"filesystem", "readonly"}},
		{"calc", []string{"math"}},
		{"read", nil}, // superseded: gone
	} {
		if got := r.ApprovalTags(tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("ApprovalTags(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	// In the order of registration, my_read in read's place.
	if got := r.Tagged("readonly"); !slices.Equal(got, []string{"my_read", "grep"}) {
		t.Errorf("Tagged(readonly) = %v", got)
	}
	r.Remove("my_read")
	r.MustAdd(mk("my_read", "", "text"))
	if got := r.ApprovalTags("my_read"); !slices.Equal(got, []string{"text"}) {
		t.Errorf("a removed tool's inheritance outlived it: %v", got)
	}
}
