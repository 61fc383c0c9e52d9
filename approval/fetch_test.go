package approval

import "testing"

// fetch(<host>) rules approve the fetch tool's calls to that host only,
// and only for URLs every parser reads the same host from (attacks: user
// info, backslashes, escapes, look-alike suffixes, other schemes).
func TestFetchRules(t *testing.T) {
	pol := (*Presets)(nil).Expand([]string{"fetch(docs.python.org)", "fetch(*.golang.org)", "fetch([::1])", "read"}, nil)
	for _, tc := range []struct {
		url  string
		want Decision
	}{
		{"https://docs.python.org/3/library/", Approve},
		{"HTTP://Docs.Python.Org./3/", Approve},
		{"https://docs.python.org:8443/x", Approve},
		{"https://pkg.golang.org/x", Approve},
		{"https://a.b.golang.org/", Approve},
		{"http://[::1]:8000/", Approve},
		{"https://golang.org/", Pass},                 // *. is subdomains only
		{"https://python.org/", Pass},                 // not the rule's host
		{"https://docs.python.org.evil.com/", Pass},   // a suffix is not the host
		{"https://evilgolang.org/", Pass},             // no dot before the domain
		{"https://docs.python.org@evil.com/", Pass},   // user info: the host is evil.com
		{"https://evil.com\\@docs.python.org/", Pass}, // backslash: parsers disagree
		{"https://evil.com#@docs.python.org/", Pass},  // the fragment is not the host
		{"https://docs%2epython.org/", Pass},          // escapes in the host
		{"https://docs.python.org:80:80/", Pass},      // a port that is no number
		{"ftp://docs.python.org/", Pass},              // another scheme
		{"//docs.python.org/", Pass},                  // no scheme
		{"https://docs.python.org /x", Pass},          // whitespace
		{"https://[::1]evil.com/", Pass},
	} {
		got, _ := pol.Decide(Call{Tool: FetchTool, Input: map[string]any{"url": tc.url}})
		if got != tc.want {
			t.Errorf("%q: %v, want %v", tc.url, got, tc.want)
		}
	}
	// Another tool, or a fetch call without a URL string, is not approved by
	// the rules; the entry "fetch" excluded (frontmatter :remove) drops them.
	if got, _ := pol.Decide(Call{Tool: "bash", Input: map[string]any{"command": "curl https://docs.python.org"}}); got != Pass {
		t.Errorf("bash: %v", got)
	}
	if got, _ := pol.Decide(Call{Tool: FetchTool, Input: map[string]any{"url": 42}}); got != Pass {
		t.Errorf("no string url: %v", got)
	}
	if got, _ := pol.Decide(Call{Tool: FetchTool, Input: map[string]any{"url": "https://docs.python.org/"}, Env: Env{Exclusions: []string{"fetch"}}}); got != Pass {
		t.Errorf("excluded: %v", got)
	}
	for _, bad := range []string{"fetch()", "fetch(*.)", "fetch(a b)", "fetch(exa%6dple.com)", "fetch(user@host)", "fetch(*.*.com)"} {
		if ValidateEntry(bad) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := ValidateEntry("fetch(*.example.com)"); err != nil {
		t.Error(err)
	}
}
