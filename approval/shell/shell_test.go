package shell

import (
	"strings"
	"testing"
)

func TestUnverifiable(t *testing.T) {
	tests := []struct {
		command string
		want    bool
	}{
		{"ls -la", false},
		{"echo $HOME", false},
		{"rm -rf \"$DIR\"", false},
		{"cat <<'EOF'\ndon't panic\nEOF", false},
		{"cat <<EOF\nit's $(date)\nEOF", false},
		{"echo hi # it's fine", false},
		{"$CMD x", true},
		{"rm${IFS}-rf${IFS}/", true},
		{"a=rm; $a -rf /", true},
		{"\"$CMD\" x", true},
		{"$(echo rm) x", true},
		{"`echo rm` x", true},
		{"/bin/r? x", true},
		{"{rm,-rf,/}", true},
		{"echo 'unbalanced", true},
		{"echo $(unclosed", true},
		{"echo `unclosed", true},
		{"cat script | bash", true},
		{"sh script.sh", true},
		{"bash --version", false},
		{"su", true},
		{"eval \"$X\"", true},
		{strings.Repeat("sh -c '", 1) + "x'", false},
		{nest(MaxNesting + 2), true},
		{"echo " + strings.Repeat("a", MaxAnalyzeLen), true},
	}
	for _, tt := range tests {
		if got := analyze(tt.command).unverifiable; got != tt.want {
			t.Errorf("analyze(%.60q).unverifiable = %v, want %v", tt.command, got, tt.want)
		}
	}
}

// nest wraps "rm x" in n levels of eval.
func nest(n int) string {
	s := "rm x"
	for range n {
		s = "eval " + s
	}
	return s
}

func TestGlob(t *testing.T) {
	tests := []struct {
		p, s string
		want bool
	}{
		{"", "", true},
		{"*", "", true},
		{"*", "anything at all", true},
		{"a*b", "ab", true},
		{"a*b", "axxb", true},
		{"a*b", "axxbc", false},
		{"a*b*c", "abbbc", true},
		{"**", "x", true},
		{"a?", "ab", false}, // '?' is literal
		{"a?", "a?", true},
		{"*aaa*b", strings.Repeat("a", 1000), false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.p, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.p, tt.s, got, tt.want)
		}
	}
	prefix := []struct {
		p, t string
		want bool
	}{
		{"rm -rf*", "rm ", true},
		{"rm -rf*", "rmdir ", false},
		{"rm *", "rm ", true},
		{"*x", "anything ", true},
		{"ab", "abc", false},
	}
	for _, tt := range prefix {
		if got := globPrefix(tt.p, tt.t); got != tt.want {
			t.Errorf("globPrefix(%q, %q) = %v, want %v", tt.p, tt.t, got, tt.want)
		}
	}
}

func TestGlobIntersect(t *testing.T) {
	tests := []struct {
		p, t string
		want bool
	}{
		{"rm -rf*", "rm\x00 /", true}, // rm $FLAGS /
		{"rm -rf*", "rm -\x00", true},
		{"rm -rf*", "rm -f\x00", false},
		{"rm -rf*", "rmdir\x00", false},
		{"git push*", "git\x00", true},
		{"git push*", "git status\x00", false},
		{"a*b", "\x00", true},
		{"abc", "a\x00c", true},
		{"abc", "a\x00d", false},
		{"", "\x00", true},
		{"x", "", false},
		{"*", "", true},
	}
	for _, tt := range tests {
		if got := globIntersect(tt.p, tt.t); got != tt.want {
			t.Errorf("globIntersect(%q, %q) = %v, want %v", tt.p, tt.t, got, tt.want)
		}
	}
}

func TestLexWords(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"a=(rm -rf x) b=1 cmd", []string{"a=", "b=1", "cmd"}},
		{"x=1 a=(rm -rf x) cmd", []string{"x=1", "a=", "cmd"}},
		{`2>/dev/null r''m "-r"f >x \x`, []string{"rm", "-rf", "x"}},
		{`$'\x72m' {fd}>&- x`, []string{"rm", "x"}},
	}
	for _, tt := range tests {
		a := &analysis{}
		l := &lexer{a: a, src: tt.src}
		l.run()
		if len(l.cmds) != 0 {
			t.Fatalf("commands left unanalysed")
		}
		var got []string
		for _, c := range a.cands {
			got = append(got, c.text)
		}
		want := strings.Join(tt.want, " ")
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("lexing %q: candidates %q, want one %q", tt.src, got, want)
		}
	}
	// The elements of a compound assignment are read as words.
	l := &lexer{a: &analysis{}, src: "declare a=(rm '-rf' x)"}
	l.word() // leaves a scratch buffer behind
	l.i++
	w, _ := l.word()
	if w.val != "a=" || len(w.elems) != 3 || w.elems[1].val != "-rf" {
		t.Errorf("compound assignment read as %q with %d elements", w.val, len(w.elems))
	}
}
