package approval

import "strings"

// FetchTool is the name of the fetch built-in.
const FetchTool = "fetch"

// An entry "fetch(<host>)" in an approve list approves the fetch tool's
// calls whose URL is on that host: "fetch(docs.python.org)" the host
// itself, "fetch(*.python.org)" its subdomains (not python.org itself).
// Hosts compare without case and a final dot; the port does not matter.
// A call is approved only when its URL is plain enough that every parser
// reads the same host from it (fetchHost): http or https, no user info,
// no backslash, no percent-escape or other byte in the host but letters,
// digits, '.', '-', and the brackets of an IPv6 literal. Anything else is
// left to the other resolvers (it asks).

// ParseFetchRule reports whether entry is a fetch rule and returns its
// host pattern, lower-cased.
func ParseFetchRule(entry string) (string, bool) {
	if !strings.HasPrefix(entry, "fetch(") || !strings.HasSuffix(entry, ")") {
		return "", false
	}
	h := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(entry[len("fetch("):len(entry)-1]), "."))
	rest := strings.TrimPrefix(h, "*.")
	if rest == "" || !validHost(rest) {
		return "", false
	}
	return h, true
}

// looksLikeFetchRule: the entry means to be a fetch rule.
func looksLikeFetchRule(entry string) bool { return strings.HasPrefix(entry, "fetch(") }

func validHost(h string) bool {
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		for _, c := range h[1 : len(h)-1] {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == ':' || c == '.') {
				return false
			}
		}
		return len(h) > 2
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return !strings.Contains(h, "..") && !strings.HasPrefix(h, ".")
}

// fetchHost is the host of a plain http(s) URL, lower-cased without a
// final dot; false for any URL whose host two parsers might read apart.
func fetchHost(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	lower := strings.ToLower(raw)
	var rest string
	switch {
	case strings.HasPrefix(lower, "https://"):
		rest = raw[len("https://"):]
	case strings.HasPrefix(lower, "http://"):
		rest = raw[len("http://"):]
	default:
		return "", false
	}
	end := strings.IndexAny(rest, "/?#")
	authority := rest
	if end >= 0 {
		authority = rest[:end]
	}
	if strings.ContainsAny(authority, "@\\%") || strings.ContainsAny(raw, "\\\t\r\n ") {
		return "", false
	}
	host := authority
	if strings.HasPrefix(host, "[") {
		i := strings.IndexByte(host, ']')
		if i < 0 || (i+1 < len(host) && host[i+1] != ':') {
			return "", false
		}
		host = host[:i+1]
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		for _, c := range host[i+1:] {
			if c < '0' || c > '9' {
				return "", false
			}
		}
		host = host[:i]
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || !validHost(host) {
		return "", false
	}
	return host, true
}

// fetchRuleMatches reports whether a rule's host pattern covers a host.
func fetchRuleMatches(pattern, host string) bool {
	if sub, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+sub)
	}
	return host == pattern
}
