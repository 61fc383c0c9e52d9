package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Requirements a tool may declare (Spec.Requires; `requires = { … }` in
// Lua). A tool with a requirement that is not met is hidden: not offered to
// the model, not run, and listed by :Flemma tools as "hidden: missing
// <requirement>" (seed 003: a tool is only registered when what it depends
// on is there).
//
//   - "exe:<name>": an executable found on $PATH.
//   - "feature:sandbox": commands really run confined — the sandbox is
//     enabled, its backend is not "none", and bubblewrap works here for
//     that configuration (with the network off, network namespaces work
//     too: without them every sandboxed command would fail).
//   - "feature:bwrap": bubblewrap works on this machine, whatever the
//     sandbox's configuration (for a tool that runs it itself).
//   - "feature:network": commands may use the network: sandbox.network is
//     true. With the default (false) it is missing, also when no sandbox
//     enforces it: the user's setting says the network is off limits.
//   - "feature:<name>", any other name: met only when the host declared it
//     (Features.Declare), as a client declares its capabilities in seed
//     003.
//
// Anything else — an unknown kind, an empty name — is never met: a tool
// must not appear because its requirement was misspelt.
const (
	FeatureSandbox = "feature:sandbox"
	FeatureBwrap   = "feature:bwrap"
	FeatureNetwork = "feature:network"
)

// Features answers feature requirements for one host: it knows the
// sandbox's configuration (Configure, from setup) and the features the
// host declared (Declare). Until Configure is called the configuration is
// DefaultConfig(). It is safe for concurrent use.
type Features struct {
	mu       sync.RWMutex
	sandbox  Config
	declared map[string]bool
}

// NewFeatures returns the features of the default configuration, nothing
// declared.
func NewFeatures() *Features {
	return &Features{sandbox: DefaultConfig(), declared: map[string]bool{}}
}

// DefaultFeatures are the features HaveRequirement answers from. The host
// keeps them current: DefaultFeatures.Configure(sandbox config) whenever
// setup changes.
var DefaultFeatures = NewFeatures()

// Configure records the sandbox configuration of setup (the host's, before
// any buffer's frontmatter: features are per host, not per buffer).
func (f *Features) Configure(sc Config) {
	f.mu.Lock()
	f.sandbox = sc
	f.mu.Unlock()
}

// Declare sets a feature the host itself provides ("journal" or
// "feature:journal"). The built-in features (sandbox, bwrap, network) are
// decided by the machine and the configuration, never declared: declaring
// one changes nothing.
func (f *Features) Declare(name string, on bool) {
	name = "feature:" + strings.TrimPrefix(name, "feature:")
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		f.declared[name] = true
	} else {
		delete(f.declared, name)
	}
}

// Have reports whether the requirement req is met (see the list above).
func (f *Features) Have(req string) bool {
	if name, ok := strings.CutPrefix(req, "exe:"); ok {
		if name == "" {
			return false
		}
		_, err := exec.LookPath(name)
		return err == nil
	}
	if !strings.HasPrefix(req, "feature:") {
		return false
	}
	f.mu.RLock()
	sc := f.sandbox
	declared := f.declared[req]
	f.mu.RUnlock()
	switch req {
	case FeatureSandbox:
		return sandboxWorks(sc)
	case FeatureBwrap:
		_, ok, _ := DetectBackend()
		return ok
	case FeatureNetwork:
		return sc.Network
	}
	return declared
}

// List returns the features that are met now, sorted.
func (f *Features) List() []string {
	f.mu.RLock()
	names := []string{FeatureSandbox, FeatureBwrap, FeatureNetwork}
	for n := range f.declared {
		names = append(names, n)
	}
	f.mu.RUnlock()
	var out []string
	for _, n := range names {
		if f.Have(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// sandboxWorks reports whether commands run confined under sc: what
// Sandbox.WrapCommand needs to wrap them rather than fail or run them
// unconfined.
func sandboxWorks(sc Config) bool {
	if !sc.Enabled || sc.Backend == "none" {
		return false
	}
	DetectBackend()
	switch {
	case !current().ok:
		return false
	case !sc.Network && !current().netIso:
		return false
	case !current().capDrop && os.Geteuid() == 0:
		return false
	}
	return true
}

// HaveRequirement reports whether a requirement is met according to
// DefaultFeatures (see Features.Have). It is what the host gives the
// registry: reg.Have = tools.HaveRequirement.
func HaveRequirement(req string) bool { return DefaultFeatures.Have(req) }
