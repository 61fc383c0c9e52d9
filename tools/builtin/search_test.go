package builtin

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
)

// searchTree is a small project with everything grep and find must skip.
func searchTree(t *testing.T) *fixture {
	f := newFixture(t)
	os.Remove(filepath.Join(f.dir, "chat.chat"))
	os.Mkdir(filepath.Join(f.dir, ".git"), 0o755)
	f.write(".git/info/exclude", "excluded-by-info.txt\n")
	f.write(".gitignore", "*.log\n/build-out/\nsecret-dir/\n!keep.log\n")
	f.write(".ignore", "ignored-by-dot-ignore.txt\n")
	f.write("src/main.go", "package main\n\nfunc main() {\n\tprintln(\"needle one\")\n}\n")
	f.write("src/util.go", "package main\n// needle two\nfunc helper() {}\n")
	f.write("src/sub/.gitignore", "local.txt\n!../negated.txt\n")
	f.write("src/sub/local.txt", "needle in local (ignored)\n")
	f.write("src/sub/deep.txt", "a needle\nanother needle\n")
	f.write("README.md", "Needle upper case\nneedle lower\n")
	f.write("app.log", "needle in a log (ignored)\n")
	f.write("keep.log", "needle kept by negation\n")
	f.write("build-out/x.txt", "needle in build-out (ignored)\n")
	f.write("secret-dir/x.txt", "needle in secret-dir (ignored)\n")
	f.write("excluded-by-info.txt", "needle (ignored by info/exclude)\n")
	f.write("ignored-by-dot-ignore.txt", "needle (ignored by .ignore)\n")
	f.write(".hidden/x.txt", "needle in hidden dir\n")
	f.write(".hidden-file", "needle in hidden file\n")
	f.write("node_modules/pkg/index.js", "needle in node_modules\n")
	f.write("bin.dat", "needle\x00binary\n")
	f.write("server.pem", "needle in a pem (denied)\n")
	f.write("long.txt", "needle "+strings.Repeat("x", 600)+"\n")
	f.write("crlf.txt", "needle crlf\r\n")
	os.Symlink(filepath.Join(f.dir, "src"), filepath.Join(f.dir, "src-link"))
	os.Symlink(filepath.Join(f.dir, "src/util.go"), filepath.Join(f.dir, "util-link.go"))
	return f
}

func TestGrep(t *testing.T) {
	f := searchTree(t)
	long := "long.txt:1:needle " + strings.Repeat("x", 500-len("long.txt:1:needle ")-15) + "... [truncated]"
	all := "README.md:2:needle lower\ncrlf.txt:1:needle crlf\nkeep.log:1:needle kept by negation\n" + long +
		"\nsrc/main.go:4:\tprintln(\"needle one\")\nsrc/sub/deep.txt:1:a needle\nsrc/sub/deep.txt:2:another needle\nsrc/util.go:2:// needle two"
	tests := []struct {
		name  string
		input map[string]any
		ok    bool
		exact string
		has   []string
	}{
		{"defaults skip ignored, hidden, binary, symlinks, denied", map[string]any{"pattern": "needle"}, true, all + "\n\n[8 matches]", nil},
		{"limit", map[string]any{"pattern": "needle", "limit": 2}, true, "README.md:2:needle lower\ncrlf.txt:1:needle crlf\n\n[2 matches, limit reached]", nil},
		{"exactly limit is not limited", map[string]any{"pattern": "needle", "limit": 8}, true, all + "\n\n[8 matches]", nil},
		{"regex with required literal", map[string]any{"pattern": `an\w+ needle$`}, true, "src/sub/deep.txt:2:another needle\n\n[1 matches]", nil},
		{"case-insensitive", map[string]any{"pattern": `(?i)^needle upper`}, true, "README.md:1:Needle upper case\n\n[1 matches]", nil},
		{"no literal", map[string]any{"pattern": `^\s+p`, "path": "src"}, true, "src/main.go:4:\tprintln(\"needle one\")\n\n[1 matches]", nil},
		{"text anchors per line", map[string]any{"pattern": `\Afunc`, "path": "src"}, true, "src/main.go:3:func main() {\nsrc/util.go:3:func helper() {}\n\n[2 matches]", nil},
		{"glob", map[string]any{"pattern": "needle", "glob": "*.go"}, true, "src/main.go:4:\tprintln(\"needle one\")\nsrc/util.go:2:// needle two\n\n[2 matches]", nil},
		{"path glob", map[string]any{"pattern": "needle", "glob": "src/sub/**"}, true, "src/sub/deep.txt:1:a needle\nsrc/sub/deep.txt:2:another needle\n\n[2 matches]", nil},
		{"negated glob", map[string]any{"pattern": "needle", "glob": "!*.{go,txt}"}, true, "README.md:2:needle lower\nkeep.log:1:needle kept by negation\n\n[2 matches]", nil},
		{"explicit hidden dir is searched", map[string]any{"pattern": "needle", "path": ".hidden"}, true, ".hidden/x.txt:1:needle in hidden dir\n\n[1 matches]", nil},
		{"explicit ignored file is searched", map[string]any{"pattern": "needle", "path": "app.log"}, true, "app.log:1:needle in a log (ignored)\n\n[1 matches]", nil},
		{"explicit binary file", map[string]any{"pattern": "needle", "path": "bin.dat"}, false, "bin.dat is a binary file; grep skips binary files (use read to see its type)", nil},
		{"explicit denied file", map[string]any{"pattern": "needle", "path": "server.pem"}, false, "", []string{"Sandbox: read denied – path matches deny_read rule \"**/*.pem\": server.pem"}},
		{"no match", map[string]any{"pattern": "haystack"}, true, "No matches found.", nil},
		{"empty pattern", map[string]any{"pattern": ""}, false, "No pattern provided", nil},
		{"bad regex", map[string]any{"pattern": "(unclosed"}, false, "", []string{"Invalid pattern: missing closing )"}},
		{"bad glob", map[string]any{"pattern": "x", "glob": "[bad"}, false, "Invalid glob: [bad", nil},
		{"missing path", map[string]any{"pattern": "x", "path": "nope"}, false, "Path not found: nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.run("grep", tt.input)
			want(t, tt.name, res, tt.ok, tt.has...)
			if tt.exact != "" && res.Content != tt.exact {
				t.Errorf("content =\n%s\nwant\n%s", res.Content, tt.exact)
			}
		})
	}
	// A search outside the work dir shows absolute paths.
	out := f.write(filepath.Join(f.outside, "o.txt"), "needle outside\n")
	res := f.run("grep", map[string]any{"pattern": "needle", "path": f.outside})
	want(t, "outside", res, true, out+":1:needle outside")
}

func TestFind(t *testing.T) {
	f := searchTree(t)
	tests := []struct {
		name  string
		input map[string]any
		ok    bool
		exact string
	}{
		{"name glob", map[string]any{"pattern": "*.go"}, true, "src/main.go\nsrc/util.go"},
		{"path glob", map[string]any{"pattern": "src/**/*.txt"}, true, "src/sub/deep.txt"},
		{"in a path", map[string]any{"pattern": "*.txt", "path": "src"}, true, "src/sub/deep.txt"},
		{"path glob below a path", map[string]any{"pattern": "sub/*.txt", "path": "src"}, true, "src/sub/deep.txt"},
		{"skips ignored hidden excluded denied", map[string]any{"pattern": "*"}, true, "README.md\nbin.dat\ncrlf.txt\nkeep.log\nlong.txt\nsrc/main.go\nsrc/sub/deep.txt\nsrc/util.go"},
		{"limit", map[string]any{"pattern": "*", "limit": 2}, true, "README.md\nbin.dat\n\n[Results limited to 2 entries. Narrow your pattern for more specific results.]"},
		{"exactly limit", map[string]any{"pattern": "*.go", "limit": 2}, true, "src/main.go\nsrc/util.go"},
		{"braces", map[string]any{"pattern": "*.{md,log}"}, true, "README.md\nkeep.log"},
		{"none", map[string]any{"pattern": "*.rs"}, true, "No files found matching pattern."},
		{"no pattern", map[string]any{"pattern": ""}, false, "No pattern provided"},
		{"bad pattern", map[string]any{"pattern": "[x"}, false, "Invalid pattern: [x is not a valid glob (check its brackets and braces)"},
		{"missing path", map[string]any{"pattern": "*", "path": "nope"}, false, "Path not found: nope"},
		{"file path", map[string]any{"pattern": "*", "path": "README.md"}, false, "Not a directory: README.md (find searches directories; use read for a file)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.run("find", tt.input)
			want(t, tt.name, res, tt.ok)
			if res.Content != tt.exact {
				t.Errorf("content =\n%s\nwant\n%s", res.Content, tt.exact)
			}
		})
	}
}

func TestSearchOutputTruncated(t *testing.T) {
	f := searchTree(t)
	f.env.Truncate = tools.Limits{MaxLines: 3}
	want(t, "find", f.run("find", map[string]any{"pattern": "*"}), true,
		"README.md\nbin.dat\ncrlf.txt\n\n[Showing 3 of 8 results (truncated). Narrow your pattern for more specific results.]")
	res := f.run("grep", map[string]any{"pattern": "needle"})
	want(t, "grep", res, true, "[8 matches; showing the first 3]")
	if strings.Count(res.Content, "\n") != 4 {
		t.Errorf("grep kept %d lines:\n%s", strings.Count(res.Content, "\n"), res.Content)
	}
}

func TestGrepTimeout(t *testing.T) {
	f := searchTree(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	res, err := runGrep(ctx, f.call, GrepInput{Pattern: "needle"})
	if err == nil || !strings.Contains(err.Error(), "Search timed out after") {
		t.Errorf("grep past its deadline = %q, %v", res.Text, err)
	}
	_, err = runFind(ctx, f.call, FindInput{Pattern: "*"})
	if err == nil || !strings.Contains(err.Error(), "Find timed out after") {
		t.Errorf("find past its deadline: %v", err)
	}
}

func TestParseIgnore(t *testing.T) {
	rules := parseIgnore([]byte("# comment\n\n*.o\n!keep.o\n/root-only\ndir/\ndocs/*.md\n\\#hash\n\\!bang\ntrailing   \nescaped\\ \n**/deep\n{brace}\r\n"))
	base := "/r"
	frames := []ignoreFrame{{base: base, rules: rules}}
	for _, tt := range []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"a.o", false, true}, {"sub/a.o", false, true}, {"keep.o", false, false},
		{"root-only", false, true}, {"sub/root-only", false, false},
		{"dir", true, true}, {"dir", false, false}, {"x/dir", true, true},
		{"docs/a.md", false, true}, {"docs/sub/a.md", false, false},
		{"#hash", false, true}, {"!bang", false, true}, {"trailing", false, true}, {"escaped ", false, true},
		{"a/b/deep", false, true}, {"{brace}", false, true}, {"brace", false, false}, {"main.go", false, false},
	} {
		abs := base + "/" + tt.rel
		if got := ignored(frames, abs, filepath.Base(abs), tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	for _, tt := range []struct {
		pattern, lit, req, fold string
		multi                   bool
	}{
		{"hello", "hello", "", "", true},
		{`foo\(bar`, "foo(bar", "", "", true},
		{`func\s+(\w+)Handler`, "", "Handler", "", true},
		{`(?i)hello`, "", "", "hello", true},
		{`(?i)TODO\s+\w+`, "", "", "todo", true},
		{`a|b`, "", "", "", true},
		{`(abc)+x`, "", "abc", "", true},
		{`x?abc`, "", "abc", "", true},
		{`\Aabc`, "", "abc", "", false},
		{`(?i)héllo`, "", "", "", true},
	} {
		m, err := newMatcher(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.lit) != tt.lit || string(m.req) != tt.req || string(m.fold) != tt.fold || (m.reM != nil) != tt.multi && m.lit == nil {
			t.Errorf("newMatcher(%q): lit %q req %q fold %q multi %v", tt.pattern, m.lit, m.req, m.fold, m.reM != nil)
		}
	}
	// (?i)k also matches the Kelvin sign, (?i)s the long s: the ASCII
	// prefilter must not hide those lines.
	f := newFixture(t)
	f.write("k.txt", "plain\n\u212aey here\nKEY\nmi\u017f\u017fion\n")
	res := f.run("grep", map[string]any{"pattern": "(?i)key", "path": "k.txt"})
	want(t, "kelvin", res, true, "k.txt:2:\u212aey here\nk.txt:3:KEY\n\n[2 matches]")
	res = f.run("grep", map[string]any{"pattern": "(?i)mission", "path": "k.txt"})
	want(t, "long s", res, true, "k.txt:4:mi\u017f\u017fion")
}

// TestGrepMatchesRipgrep compares grep with rg on a random tree: same
// files, lines and texts (rg is run with the same excludes).
func TestGrepMatchesRipgrep(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("ripgrep (rg) is not installed: the differential test needs it")
	}
	f := newFixture(t)
	os.Remove(filepath.Join(f.dir, "chat.chat"))
	f.env.Exclude = []string{}
	f.env.Truncate = tools.Limits{MaxLines: 1 << 30, MaxBytes: 1 << 30}
	genTree(t, f.dir, 400, 7)
	for _, pattern := range []string{"needle", `fn_\d+\(`, `^\s*return`, `(?i)ERROR`, `x$`, `[aeiou]{4}`} {
		res := f.run("grep", map[string]any{"pattern": pattern, "limit": 1e6})
		var got []string
		if !strings.HasPrefix(res.Content, "No matches") {
			body, _, _ := strings.Cut(res.Content, "\n\n[")
			got = strings.Split(body, "\n")
		}
		cmd := exec.Command(rg, "--no-messages", "-n", "--no-heading", "--color", "never", "-e", pattern, ".")
		cmd.Dir = f.dir
		out, _ := cmd.Output()
		var exp []string
		for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if l != "" {
				exp = append(exp, tools.TruncateLine(strings.TrimPrefix(l, "./"), tools.MaxLineBytes))
			}
		}
		sort.Strings(got)
		sort.Strings(exp)
		if !slices.Equal(got, exp) {
			t.Errorf("pattern %q: grep has %d lines, rg %d\nfirst difference: %s", pattern, len(got), len(exp), firstDiff(got, exp))
		}
	}
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("%q vs %q", a[i], b[i])
		}
	}
	if len(a) > len(b) {
		return fmt.Sprintf("extra %q", a[len(b)])
	}
	if len(b) > len(a) {
		return fmt.Sprintf("missing %q", b[len(a)])
	}
	return ""
}

// genTree writes n files of code-like text in nested directories, with a
// few matches of "needle", .gitignore files, hidden files and binaries.
func genTree(tb testing.TB, root string, n int, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	words := []string{"return", "value", "error", "ERROR", "func", "fn_12(", "queue", "x", "if", "else", "aeiou", "data", "  ", "\t"}
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("*.tmp\nskip-*/\n"), 0o644)
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%d", i%50), fmt.Sprintf("e%d", i%7))
		if i%97 == 0 {
			dir = filepath.Join(root, fmt.Sprintf("skip-%d", i))
		}
		os.MkdirAll(dir, 0o755)
		var b strings.Builder
		for l := 0; l < 10+rng.Intn(40); l++ {
			for w := 0; w < rng.Intn(12); w++ {
				b.WriteString(words[rng.Intn(len(words))])
				b.WriteByte(' ')
			}
			if rng.Intn(300) == 0 {
				b.WriteString("needle")
			}
			if rng.Intn(5) == 0 {
				b.WriteString("x")
			}
			b.WriteByte('\n')
		}
		name := fmt.Sprintf("f%d.txt", i)
		switch i % 31 {
		case 3:
			name = fmt.Sprintf("f%d.tmp", i)
		case 5:
			name = fmt.Sprintf(".h%d", i)
		case 7:
			b.WriteString("\x00binary")
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
