package tools

import (
	"context"
	"os/exec"
	"slices"
	"testing"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// TestRequiresFeature: with the host's wiring (Registry.Have =
// HaveRequirement), a tool requiring a feature that is present is usable,
// and one requiring a missing feature is hidden with the requirement
// reported by Missing.
func TestRequiresFeature(t *testing.T) {
	saved := sandbox.DefaultFeatures
	sandbox.DefaultFeatures = sandbox.NewFeatures()
	sandbox.DefaultFeatures.Declare("feature:lsp", true)
	t.Cleanup(func() { sandbox.DefaultFeatures = saved })

	r := NewRegistry()
	r.Have = sandbox.HaveRequirement
	mk := func(name string, req ...string) Tool {
		return Typed(Spec{Name: name, Description: "d", Requires: req},
			func(context.Context, Call, noInput) (Output, error) { return Output{Text: "ok"}, nil })
	}
	r.MustAdd(mk("sandboxed", "feature:lsp"))
	r.MustAdd(mk("online", "feature:network"))
	r.MustAdd(mk("both", "feature:lsp", "feature:network"))
	if _, ok := r.Lookup("sandboxed"); !ok {
		t.Errorf("a tool requiring a declared feature is hidden (missing %v)", r.Missing(mustGet(t, r, "sandboxed")))
	}
	if _, ok := r.Lookup("online"); ok {
		t.Errorf("a tool requiring feature:network is visible with the network off")
	}
	if miss := r.Missing(mustGet(t, r, "both")); !slices.Equal(miss, []string{"feature:network"}) {
		t.Errorf("Missing(both) = %v, want [feature:network]", miss)
	}
	sandbox.DefaultFeatures.Configure(sandbox.Config{Enabled: true, Backend: "auto", Network: true})
	if _, ok := r.Lookup("online"); !ok {
		t.Errorf("a tool requiring feature:network is hidden with sandbox.network = true")
	}
	if names := r.Names(); !slices.Equal(names, []string{"both", "online", "sandboxed"}) {
		t.Errorf("Names() = %v", names)
	}
	if _, err := exec.LookPath("sh"); err == nil && !sandbox.HaveRequirement("exe:sh") {
		t.Errorf("HaveRequirement(exe:sh) = false")
	}
}

func mustGet(t *testing.T, r *Registry, name string) Tool {
	t.Helper()
	tool, ok := r.Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool
}

// noInput is the input of a tool that takes none.
type noInput struct{}
