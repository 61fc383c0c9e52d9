package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// TestWithDefaults: an unset backend is "auto", an unknown one an error;
// a nil list is the default, an empty one stays empty (none).
func TestWithDefaults(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      Config
		backend  string
		writable []string
		deny     []string
		env      []string
		err      string
	}{
		{"all unset", Config{}, "auto", DefaultWritable, DefaultDenyRead, DefaultEnvDeny, ""},
		{"bwrap kept", Config{Backend: "bwrap"}, "bwrap", DefaultWritable, DefaultDenyRead, DefaultEnvDeny, ""},
		{"none kept", Config{Backend: "none"}, "none", DefaultWritable, DefaultDenyRead, DefaultEnvDeny, ""},
		{"empty lists mean none", Config{Writable: []string{}, DenyRead: []string{}, EnvDeny: []string{}}, "auto", []string{}, []string{}, []string{}, ""},
		{"lists kept", Config{Writable: []string{"/p"}, DenyRead: []string{"**/x"}, EnvDeny: []string{"X"}}, "auto", []string{"/p"}, []string{"**/x"}, []string{"X"}, ""},
		{"unknown backend", Config{Backend: "docker"}, "", nil, nil, nil, `unknown sandbox backend "docker"`},
		{"backend is case-sensitive", Config{Backend: "Auto"}, "", nil, nil, nil, `unknown sandbox backend "Auto"`},
	} {
		got, err := withDefaults(c.cfg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.Backend != c.backend || !slices.Equal(got.Writable, c.writable) || (got.Writable == nil) != (c.writable == nil) ||
			!slices.Equal(got.DenyRead, c.deny) || (got.DenyRead == nil) != (c.deny == nil) ||
			!slices.Equal(got.EnvDeny, c.env) || (got.EnvDeny == nil) != (c.env == nil) {
			t.Errorf("%s: got backend %q writable %q deny_read %d env_deny %d", c.name, got.Backend, got.Writable, len(got.DenyRead), len(got.EnvDeny))
		}
	}
}

// TestConfiguredAs: a refusal names how the root was configured, and what
// that expanded to, only where they differ from the resolved root.
func TestConfiguredAs(t *testing.T) {
	for _, c := range []struct{ w, p, c, want string }{
		{"/srv/p", "/srv/p", "/srv/p", ""},
		{"/srv/link", "/srv/link", "/srv/p", "; configured as /srv/link"},
		{"urn:flemma:cwd", "/srv/p", "/srv/p", "; configured as urn:flemma:cwd"},
		{"$P", "/srv/link", "/srv/p", "; configured as $P = /srv/link"},
		{"~/x", "/home/u/x", "/home/u/x", "; configured as ~/x"},
	} {
		if got := configuredAs(c.w, c.p, c.c); got != c.want {
			t.Errorf("configuredAs(%q, %q, %q) = %q, want %q", c.w, c.p, c.c, got, c.want)
		}
	}
}

// TestCanonicalAbs: only absolute paths are kept, cleaned.
func TestCanonicalAbs(t *testing.T) {
	got := canonicalAbs([]string{"rel/x", "/nonexistent-flemma/a/../b/", "", "./y"})
	if want := []string{"/nonexistent-flemma/b"}; !slices.Equal(got, want) {
		t.Errorf("canonicalAbs = %q, want %q", got, want)
	}
	if got := canonicalAbs([]string{"rel"}); got != nil {
		t.Errorf("canonicalAbs of relative paths = %q, want nil", got)
	}
}
