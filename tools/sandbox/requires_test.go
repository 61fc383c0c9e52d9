package sandbox

import (
	"slices"
	"testing"
)

// withProbe runs the test with bubblewrap's detection result replaced by p
// (restored at the end), so that what a feature means does not depend on
// the machine.
func withProbe(t *testing.T, p backendProbe) {
	t.Helper()
	DetectBackend()
	saved := probe
	probe = p
	t.Cleanup(func() { probe = saved })
}

var (
	bwrapWorks      = backendProbe{path: "/usr/bin/bwrap", ok: true, netIso: true, capDrop: true, why: "bubblewrap works"}
	bwrapNoNetns    = backendProbe{path: "/usr/bin/bwrap", ok: true, netIso: false, capDrop: true, why: "bubblewrap works (without network isolation)"}
	bwrapNotUsable  = backendProbe{why: "bubblewrap (bwrap) not found on PATH"}
	sandboxNetwork  = Config{Enabled: true, Backend: "auto", Network: true}
	sandboxDisabled = Config{Enabled: false, Backend: "auto"}
	sandboxNone     = Config{Enabled: true, Backend: "none"}
)

func TestFeatures(t *testing.T) {
	tests := []struct {
		name  string
		probe backendProbe
		cfg   *Config // nil: never configured (the defaults)
		have  []string
		miss  []string
	}{
		{"defaults, bwrap works", bwrapWorks, nil,
			[]string{"feature:sandbox", "feature:bwrap"}, []string{"feature:network"}},
		{"defaults, no bwrap", bwrapNotUsable, nil,
			nil, []string{"feature:sandbox", "feature:bwrap", "feature:network"}},
		{"network allowed", bwrapWorks, &sandboxNetwork,
			[]string{"feature:sandbox", "feature:network"}, nil},
		{"network allowed without a sandbox", bwrapNotUsable, &sandboxNetwork,
			[]string{"feature:network"}, []string{"feature:sandbox"}},
		{"sandbox disabled", bwrapWorks, &sandboxDisabled,
			[]string{"feature:bwrap"}, []string{"feature:sandbox", "feature:network"}},
		{"backend none", bwrapWorks, &sandboxNone,
			[]string{"feature:bwrap"}, []string{"feature:sandbox"}},
		// Network off but no network namespaces: every sandboxed command
		// would fail, so the sandbox does not work.
		{"no network namespaces", bwrapNoNetns, nil,
			[]string{"feature:bwrap"}, []string{"feature:sandbox"}},
		{"unknown feature", bwrapWorks, nil,
			nil, []string{"feature:teleport", "feature:", "teleport", "sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withProbe(t, tt.probe)
			f := NewFeatures()
			if tt.cfg != nil {
				f.Configure(*tt.cfg)
			}
			for _, req := range tt.have {
				if !f.Have(req) {
					t.Errorf("Have(%q) = false, want true", req)
				}
			}
			for _, req := range tt.miss {
				if f.Have(req) {
					t.Errorf("Have(%q) = true, want false", req)
				}
			}
		})
	}
}

// TestFeaturesDeclared: a feature the host declares (seed 003: the client
// says what it supports) is met until it is withdrawn.
func TestFeaturesDeclared(t *testing.T) {
	f := NewFeatures()
	if f.Have("feature:journal") {
		t.Fatal("an undeclared feature is met")
	}
	f.Declare("journal", true)
	if !f.Have("feature:journal") {
		t.Error("a declared feature is not met")
	}
	f.Declare("feature:journal", false)
	if f.Have("feature:journal") {
		t.Error("a withdrawn feature is still met")
	}
	// Declaring never overrides what the host cannot decide by itself.
	withProbe(t, bwrapNotUsable)
	f.Declare("sandbox", true)
	if f.Have("feature:sandbox") {
		t.Error("Declare made a missing sandbox count as present")
	}
	f.Configure(sandboxNetwork)
	f.Declare("extra", true)
	got := f.List()
	if !slices.Equal(got, []string{"feature:extra", "feature:network"}) {
		t.Errorf("List() = %v", got)
	}
}
