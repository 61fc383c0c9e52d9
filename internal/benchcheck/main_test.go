package main

import (
	"strings"
	"testing"
)

func TestParseBudgets(t *testing.T) {
	in := `# a comment
e2e Keystroke ms-p50 <= 8  # keystroke p50

buffer Parse/prose ratio >= 5 # parser vs Lua
tools Grep/(?i)x ratio <= 1.5
`
	got, err := ParseBudgets(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d budgets: %+v", len(got), got)
	}
	if b := got[0]; b.Pkg != "e2e" || b.Bench != "Keystroke" || b.Unit != "ms-p50" || b.Op != "<=" || b.Limit != 8 || b.Guards != "keystroke p50" || b.Line != 2 {
		t.Errorf("first budget %+v", b)
	}
	if b := got[1]; b.Op != ">=" || b.Limit != 5 || b.Line != 4 {
		t.Errorf("second budget %+v", b)
	}
	if got[0].Benchtime != "" {
		t.Errorf("benchtime %q without one given", got[0].Benchtime)
	}
	for in, want := range map[string]string{"e2e Keystroke ms-p50 <= 8 10x # c": "10x", "e2e Keystroke ms-p50 <= 8 1.5s": "1.5s"} {
		if b, err := ParseBudgets(strings.NewReader(in)); err != nil || len(b) != 1 || b[0].Benchtime != want {
			t.Errorf("%q: %+v, %v; want benchtime %s", in, b, err, want)
		}
	}
	for _, bad := range []string{
		"e2e Keystroke ms-p50 < 8",
		"e2e Keystroke ms-p50 <= eight",
		"e2e Keystroke ms-p50 <=",
		"e2e Key(stroke ms-p50 <= 8",
		"e2e Keystroke ms-p50 <= 8 ten",
		"e2e Keystroke ms-p50 <= 8 0x",
		"e2e Keystroke ms-p50 <= 8 10x extra",
	} {
		if _, err := ParseBudgets(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"Keystroke", "BenchmarkKeystroke/nvim-0.7.2/10k/idle/chat/insert", true},
		{"Categorize10k/.*/tail", "BenchmarkCategorize10k/nvim-0.10.4/tail", true},
		{"BenchmarkGrepVsRg/^literal$", "BenchmarkGrepVsRg/literal", true},
		{"BenchmarkGrepVsRg/^literal$", "BenchmarkGrepVsRg/regex-literal", false},
		{"Categorize10k/.*/tail", "BenchmarkCategorize10k/nvim-0.10.4/cold", false},
		{"Categorize10k/.*/tail", "BenchmarkCategorize10k/nvim-0.10.4", true}, // a parent
		{"Stream$", "BenchmarkStreamRedraw/nvim-0.7.2", false},
		{"Grep/(a|b/c)", "BenchmarkGrep/b/c", false},
		{"Grep/(a|b)", "BenchmarkGrep/b", true},
	} {
		if got := Matches(c.pattern, c.name); got != c.want {
			t.Errorf("Matches(%q, %q) = %v", c.pattern, c.name, got)
		}
	}
}

const output = `goos: linux
BenchmarkKeystroke/nvim-0.7.2/10k/idle/chat/insert-2         	      10	  19524875 ns/op	         1.815 ms-p50	         5.209 ms-p90
BenchmarkKeystroke/nvim-0.7.2/10k/idle/chat/normal-2         	      10	  22619076 ns/op	         5.852 ms-p50	        17.32 ms-p90
--- FAIL: BenchmarkKeystroke/nvim-0.10.4/10k/idle/chat/move
    latency_test.go:272: "10000" after "j": not shown on the terminal
--- FAIL: BenchmarkKeystroke/nvim-0.10.4/10k
--- SKIP: BenchmarkGrep/rg
    grep_test.go:40: ripgrep is not installed
BenchmarkCategorize10k/nvim-0.7.2/tail-2    10   215999068 ns/op   27.15 ms-median/get_lines   1.9 ratio
PASS
`

func TestParseOutputAndJudge(t *testing.T) {
	results, problems := ParseOutput("./e2e", strings.NewReader(output))
	// The same output as another package's: never judged against e2e budgets.
	other, _ := ParseOutput("buffer", strings.NewReader("BenchmarkKeystroke/x-2  1  5 ns/op  99 ms-p90\n"))
	results = append(results, other...)
	if len(results) != 4 || results[0].Name != "BenchmarkKeystroke/nvim-0.7.2/10k/idle/chat/insert" || results[0].Metrics["ms-p90"] != 5.209 {
		t.Fatalf("results %+v", results)
	}
	for i := range problems {
		if problems[i].Pkg != "e2e" {
			t.Errorf("problem %+v not in e2e", problems[i])
		}
	}
	if len(problems) != 3 || problems[0].Reason != `"10000" after "j": not shown on the terminal` || problems[2].Kind != "SKIP" || problems[2].Reason != "ripgrep is not installed" {
		t.Fatalf("problems %+v", problems)
	}
	budgets, err := ParseBudgets(strings.NewReader(`e2e Keystroke ms-p90 <= 16 # p90
e2e Categorize10k/.*/tail ratio <= 2.5
e2e Grep/rg ratio <= 1.5 # grep vs rg
e2e Nothing ms <= 1
buffer Parse ratio >= 10`))
	if err != nil {
		t.Fatal(err)
	}
	vs := Judge(budgets, results, problems)
	var marks []string
	for _, v := range vs {
		marks = append(marks, v.Mark)
	}
	// insert ✓, normal ✗ (17.32 > 16), the failed move ?, tail ✓, rg ?, two with no result ?
	if got := strings.Join(marks, ""); got != "✓✗?✓???" {
		t.Errorf("marks %s\n%s", got, Format(vs))
	}
	if n := Failed(vs); n != 5 {
		t.Errorf("Failed = %d", n)
	}
	report := Format(vs)
	for _, want := range []string{
		"✗ e2e BenchmarkKeystroke/nvim-0.7.2/10k/idle/chat/normal ms-p90 17.3 <= 16  # p90",
		"? e2e BenchmarkKeystroke/nvim-0.10.4/10k/idle/chat/move ms-p90 <= 16: fail: \"10000\" after \"j\": not shown on the terminal  # p90",
		"? e2e BenchmarkGrep/rg ratio <= 1.5: skip: ripgrep is not installed  # grep vs rg",
		"? e2e Nothing ms <= 1: no result reports ms",
		"? buffer Parse ratio >= 10: no result reports ratio",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}
