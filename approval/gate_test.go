package approval

import (
	"strings"
	"testing"
)

func TestGate(t *testing.T) {
	approved := Outcome{Decision: Approve, Resolver: "urn:flemma:approval:config", Rule: "bash"}
	protect := func(p string) (string, bool) { return ".git/hooks", strings.Contains(p, ".git/hooks") }
	ok := Facts{FromProvider: true, Protected: protect}
	outside := func(p string) (string, bool) { return "/work/p", !strings.HasPrefix(p, "/work/p/") }
	tests := []struct {
		name     string
		out      Outcome
		f        Facts
		resolver string // "" = unchanged
		rule     string
	}{
		{"a model's call passes", approved, ok, "", ""},
		{"a denial is never touched", Outcome{Decision: Deny, Resolver: "x"}, Facts{Interrupted: "y"}, "", ""},
		{"a question stays a question", Outcome{Decision: RequireApproval, Resolver: "x"}, Facts{}, "", ""},
		{"interrupted asks", approved, Facts{FromProvider: true, Interrupted: "interrupted: it started …"}, JournalResolver, "interrupted"},
		{"interrupted asks even in a trusted file", approved, Facts{FileCallsAllowed: true, Interrupted: "it is running in another flemma"}, JournalResolver, "another flemma"},
		{"ran already asks", approved, Facts{FromProvider: true, Ran: true}, OriginResolver, "already ran"},
		{"a call from the file asks", approved, Facts{}, OriginResolver, "found in the file"},
		{"a trusted file's call passes", approved, Facts{FileCallsAllowed: true}, "", ""},
		{"a write to a protected path asks", approved, Facts{FromProvider: true, Writes: "repo/.git/hooks/pre-commit", Protected: protect}, ProtectedResolver, "protected path (.git/hooks)"},
		{"a write elsewhere passes", approved, Facts{FromProvider: true, Writes: "src/main.go", Protected: protect}, "", ""},
		{"a read outside the project asks, naming it", approved, Facts{FromProvider: true, Reads: "/etc/passwd", Outside: outside}, ReadRootsResolver, "reads /etc/passwd, outside the project (/work/p; sandbox.readable adds roots)"},
		{"a read inside the project passes", approved, Facts{FromProvider: true, Reads: "/work/p/src/a.go", Outside: outside}, "", ""},
		{"a read outside a file's call: the origin asks first", approved, Facts{Reads: "/etc/passwd", Outside: outside}, OriginResolver, "found in the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Gate(tt.out, tt.f)
			if tt.resolver == "" {
				if got != tt.out {
					t.Errorf("changed: %+v", got)
				}
				return
			}
			if got.Decision != RequireApproval || got.Resolver != tt.resolver || !strings.Contains(got.Rule, tt.rule) {
				t.Errorf("got %+v, want require_approval by %s with %q", got, tt.resolver, tt.rule)
			}
		})
	}
}
