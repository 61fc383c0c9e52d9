package frontmatter

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// testSetup mirrors the defaults of SPEC §12 with the built-in tools.
var testSetup = Setup{
	Tools:       []string{"bash", "read", "write", "edit", "grep", "find", "ls"},
	KnownTools:  []string{"bash", "read", "write", "edit", "grep", "find", "ls", "calculator", "calculator_async"},
	AutoApprove: []string{"$default"},
	Presets:     []string{"$default", "$readonly", "$standard", "$yolo"},
	Providers:   []string{"anthropic", "openai", "vertex"},
}

// quiet are limits whose deadlines no busy (or race-instrumented) test
// machine reaches: for tests about anything but time, so that their outcome
// never depends on the machine's load.
var quiet = Limits{Deadline: time.Minute, CallDeadline: time.Minute}

// evalLua evaluates code as a Lua frontmatter starting at buffer line 1 (so
// code line k is buffer line k+1), with a fresh evaluator.
func evalLua(t *testing.T, code string) *Result {
	t.Helper()
	return NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, testSetup)
}

func evalJSON(t *testing.T, code string) *Result {
	t.Helper()
	return NewEvaluator(quiet).Evaluate(Source{Language: "json", Code: code, StartLine: 1}, testSetup)
}

func wantClean(t *testing.T, code string, r *Result) {
	t.Helper()
	if len(r.Diagnostics) > 0 {
		t.Fatalf("Evaluate(%q): unexpected diagnostics %v", code, r.Diagnostics)
	}
}

// wantDiag checks that r has a diagnostic of the severity at line whose
// message contains substr (line 0: any line).
func wantDiag(t *testing.T, code string, r *Result, severity string, line int, substr string) {
	t.Helper()
	for _, d := range r.Diagnostics {
		if d.Severity == severity && (line == 0 || d.Line == line) && strings.Contains(d.Message, substr) {
			return
		}
	}
	t.Fatalf("Evaluate(%q): diagnostics %v, want a %s at line %d containing %q", code, r.Diagnostics, severity, line, substr)
}

func wantEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %#v, want %#v", what, got, want)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
