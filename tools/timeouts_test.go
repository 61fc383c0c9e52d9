package tools

import (
	"testing"
	"time"
)

func TestTimeoutsFor(t *testing.T) {
	to := Timeouts{Default: 30 * time.Second, Classes: map[string]time.Duration{"bash": 300 * time.Second, "mcp": 60 * time.Second, "slow": 90 * time.Second, "calculator": time.Minute}}
	for _, tc := range []struct {
		spec Spec
		want time.Duration
		from string
	}{
		{Spec{Name: "bash", Tags: []string{"shell"}, Timeout: 24 * time.Hour, SelfTimed: true}, 300 * time.Second, "tools.timeouts.bash"},
		{Spec{Name: "read", Tags: []string{"filesystem"}}, 30 * time.Second, "tools.timeouts.default"},
		{Spec{Name: "mcp:gh:x", Tags: []string{"mcp", "gh", "slow"}}, 90 * time.Second, "tools.timeouts.slow"}, // the largest tag
		{Spec{Name: "lua_tool", Timeout: 45 * time.Second}, 45 * time.Second, "the tool's own"},
		{Spec{Name: "lua_tool", Timeout: 45 * time.Second, Tags: []string{"mcp"}}, 60 * time.Second, "tools.timeouts.mcp"},
		{Spec{Name: "calculator", Timeout: 5 * time.Second}, time.Minute, "tools.timeouts.calculator"}, // the user's name beats the tool's own
		{Spec{Name: "self", SelfTimed: true, Timeout: time.Hour}, 30 * time.Second, "tools.timeouts.default"},
	} {
		d, from := to.For(tc.spec)
		if d != tc.want || from != tc.from {
			t.Errorf("%s: %v from %q, want %v from %q", tc.spec.Name, d, from, tc.want, tc.from)
		}
	}
	if d, _ := (Timeouts{}).For(Spec{Name: "x"}); d != DefaultToolTimeout {
		t.Errorf("no configuration: %v", d)
	}
	if Asked(300*time.Second, 900) != 300*time.Second || Asked(300*time.Second, 10) != 10*time.Second || Asked(300*time.Second, 0) != 300*time.Second {
		t.Errorf("Asked does not cap")
	}
}
