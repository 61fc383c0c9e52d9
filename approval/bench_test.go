package approval

import (
	"context"
	"testing"
)

// benchChain: five resolvers around a $default config policy, as a typical
// setup with one plugin resolver above and one below.
func benchChain(b *testing.B) *Chain {
	b.Helper()
	ch := NewChain(nil)
	for _, r := range Builtins(Setup{RequireApproval: true, AutoApprove: []string{"$default", "bash(git status*)"},
		AutoApproveSandboxed: true}) {
		ch.Register(r)
	}
	ch.Register(fnResolver("plugin:high", 200, Pass))
	ch.Register(fnResolver("plugin:default", DefaultPriority, Pass))
	if ch.Count() != 5 {
		b.Fatalf("Count() = %d, want 5", ch.Count())
	}
	return ch
}

func BenchmarkDecide(b *testing.B) {
	ch := benchChain(b)
	ctx := context.Background()
	cases := map[string]Call{
		"read":            call("read", Env{}),
		"bash-rule":       bashCall("git status --short"),
		"bash-sandbox":    {Tool: BashTool, Input: map[string]any{"command": "make test"}, Capabilities: []string{CapSandboxed}, Env: sandboxOn},
		"unknown-default": call("calculator", Env{}),
	}
	for name, c := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = ch.Decide(ctx, c)
			}
		})
	}
}

func BenchmarkDenyAnalysis(b *testing.B) {
	p, _ := NewPresets(map[string]PresetDef{"$safety": {Deny: []string{"bash(rm -rf*)", "bash(git push*)"}}}, nil)
	pol := p.Expand([]string{"bash", "$safety"}, nil)
	c := bashCall(`cd src && go test ./... 2>&1 | tee out.log; echo "done: $(date)"`)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = pol.Decide(c)
	}
}

// typicalCommands are commands a coding agent runs every day; none of them
// may be slowed down much by deny rules.
var typicalCommands = []string{
	"ls -la", "git status", "git diff --stat HEAD~3", "git log --oneline -10",
	"git add -A && git commit -m 'fix: handle rm case'", "go test ./... -run TestFoo -v",
	"go vet ./... && golangci-lint run", "npm run lint -- --fix", "python3 -m pytest tests/ -x -q",
	"grep -rn 'func main' .", "find . -type f -name '*.py' -exec grep -l foo {} +",
	"curl -sSL https://example.com/api | jq '.data[] | .id'", "for f in src/*.ts; do echo \"$f\"; done",
	"cat file | sort | uniq -c | sort -rn | head", "sed -i 's/foo/bar/g' src/*.go",
	"mkdir -p build && cd build && cmake .. && make", "docker compose up -d", "kubectl get pods -A",
	"cat > /tmp/test.txt << 'EOF'\nhello\nEOF", "x=$(git rev-parse HEAD); echo $x",
}

func BenchmarkDenyTypical(b *testing.B) {
	p, _ := NewPresets(map[string]PresetDef{"$safety": {Deny: []string{"bash(rm -rf*)", "bash(git push*)"}}}, nil)
	pol := p.Expand([]string{"bash", "$safety"}, nil)
	calls := make([]Call, len(typicalCommands))
	for i, c := range typicalCommands {
		calls[i] = bashCall(c)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range calls {
			_, _ = pol.Decide(c)
		}
	}
}
