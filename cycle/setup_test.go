package cycle

import (
	"encoding/json"
	"strings"
	"testing"
)

// Issue 27 #1, the host: a setup with one value of the wrong type (sent by
// a plugin of another version, say) is installed with every other key —
// the provider, the stricter auto_approve — and the replaced value is
// named in Setup's answer and in :checkhealth.
func TestSetupOneWrongTypeKeepsTheRest(t *testing.T) {
	env := newEnv(t, nil)
	raw := map[string]any{"paths": env.raw["paths"], "provider": "openai",
		"tools": map[string]any{"max_concurrent": "two", "auto_approve": []any{"$readonly"}}}
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	const want = `tools.max_concurrent: expected a whole number (0 or more), got "two" (the default 2 is used)`
	if err := env.h.Setup(string(b)); err == nil || err.Error() != want {
		t.Fatalf("Setup = %v, want %q", err, want)
	}
	env.h.mu.Lock()
	cfg := env.h.cfg
	env.h.mu.Unlock()
	if list, ok := cfg.AutoApproveList(); cfg.Provider != "openai" || !ok || len(list) != 1 || list[0] != "$readonly" {
		t.Errorf("installed provider %q, auto_approve %v", cfg.Provider, list)
	}
	hr, _ := env.h.onHealth()
	found := false
	for _, l := range hr.Lines {
		found = found || l.Level == "warn" && strings.Contains(l.Text, want)
	}
	if !found {
		t.Errorf(":checkhealth does not warn of the replaced value: %+v", hr.Lines)
	}
	// A clean setup clears it.
	b, _ = json.Marshal(map[string]any{"paths": env.raw["paths"]})
	if err := env.h.Setup(string(b)); err != nil {
		t.Fatal(err)
	}
	hr, _ = env.h.onHealth()
	for _, l := range hr.Lines {
		if strings.Contains(l.Text, "max_concurrent") {
			t.Errorf("still reported after a clean setup: %+v", l)
		}
	}
}
