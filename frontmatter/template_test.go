package frontmatter

import (
	"strings"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	// A deadline well above the default 100 ms: under -race on a loaded
	// machine an expression took longer, and the test is about what
	// expressions may reach, not about time (TestBudget* are).
	e := NewEvaluator(Limits{Deadline: 2 * time.Second})
	res := e.Evaluate(Source{Language: "lua", StartLine: 1, Code: "name = 'Ada'\nn = 3\nlist = {'a', 'b'}"}, Setup{})
	if res.Blocking() {
		t.Fatalf("frontmatter: %v", res.Diagnostics)
	}
	cases := []struct{ expr, want, err string }{
		{" name ", "Ada", ""},
		{"name .. '!' ", "Ada!", ""},
		{"n * 2", "6", ""},
		{"n / 2", "1.5", ""},
		{"#list", "2", ""},
		{"list[2]", "b", ""},
		{"n > 2", "true", ""},
		{"missing", "", "Undefined variable 'missing'"},
		{"list", "", "is a table"},
		{"nil", "", "is nil"},
		{"os.execute('id')", "", "Undefined variable 'os'"},
		{"io", "", "Undefined variable 'io'"},
		{"(function() while true do end end)()", "", "frontmatter"},
		{"1 +", "", ""},
	}
	for _, c := range cases {
		got, err := e.Expand(res.Vars, c.expr)
		switch {
		case c.err == "" && c.want != "" && (err != nil || got != c.want):
			t.Errorf("%q = %q, %v; want %q", c.expr, got, err, c.want)
		case c.want == "" && err == nil:
			t.Errorf("%q = %q, want an error", c.expr, got)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.expr, err, c.err)
		}
	}
}
