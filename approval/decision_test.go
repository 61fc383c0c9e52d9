package approval

import "testing"

func TestParseDecision(t *testing.T) {
	for _, s := range []string{"approve", "require_approval", "deny", ""} {
		if d, err := ParseDecision(s); err != nil || string(d) != s {
			t.Errorf("ParseDecision(%q) = %q, %v", s, d, err)
		}
	}
	for _, s := range []string{"Approve", "allow", "pending", "true"} {
		if _, err := ParseDecision(s); err == nil {
			t.Errorf("ParseDecision(%q) succeeded", s)
		}
	}
}

func TestFromAutoApprove(t *testing.T) {
	tests := []struct {
		v    any
		want Decision
	}{
		{true, Approve}, {false, RequireApproval}, {"deny", Deny},
		{nil, Pass}, {42, Pass}, {"approve", Pass}, {"Deny", Pass}, {map[string]any{}, Pass},
	}
	for _, tt := range tests {
		if got := FromAutoApprove(tt.v); got != tt.want {
			t.Errorf("FromAutoApprove(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestDecisionValid(t *testing.T) {
	for d, want := range map[Decision]bool{Approve: true, RequireApproval: true, Deny: true, Pass: false, "x": false} {
		if d.Valid() != want {
			t.Errorf("%q.Valid() = %v", d, !want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	tests := []struct {
		o    Outcome
		want string
	}{
		{Outcome{Approve, ConfigName, "$default"}, "approve by urn:flemma:approval:config ($default)"},
		{Outcome{Deny, "my_plugin:policy", ""}, "deny by my_plugin:policy"},
		{Outcome{RequireApproval, "", RuleDefault}, "require_approval by default"},
		{Outcome{Approve, ConfigName, "bash(git status*)"}, "approve by urn:flemma:approval:config (bash(git status*))"},
		{Outcome{}, "pass"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.o, got, tt.want)
		}
	}
}
