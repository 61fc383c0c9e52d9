// Package secrets is the one set of configured credentials that every
// place flemma writes text a person or a model reads — notifications, the
// host's log, tool output — replaces by [redacted]. A credential enters it
// where flemma learns it: a provider's key when it is resolved (the value
// of an api_key_env variable, the first line an api_key_cmd printed), a
// header value when setup configures it, a token a sign-in stores. The set
// only grows during the host's life: a value that was a credential once
// stays hidden. It is pure (no I/O) and safe for concurrent use.
package secrets

import (
	"sort"
	"strings"
	"sync"
)

// Placeholder replaces a credential.
const Placeholder = "[redacted]"

// MinLen is the shortest value taken as a credential: shorter ones are
// words ("flemma", "true") that would be hidden everywhere.
const MinLen = 8

// Set is a set of credential values.
type Set struct {
	mu     sync.RWMutex
	vals   map[string]bool
	sorted []string          // vals, longest first; rebuilt on change
	r      *strings.Replacer // rebuilt on change
}

// Default is the host's set.
var Default = &Set{}

// Add adds a credential value (whitespace around it trimmed). Values
// shorter than MinLen are ignored.
func (s *Set) Add(v string) {
	v = strings.TrimSpace(v)
	if len(v) < MinLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals[v] {
		return
	}
	if s.vals == nil {
		s.vals = map[string]bool{}
	}
	s.vals[v] = true
	s.r, s.sorted = nil, nil
}

// AddHeader adds a configured header value: the whole value and each of
// its words of MinLen bytes or more ("Bearer tok…" is echoed as "tok…"),
// except words that are plain URLs (no user info, query or fragment: an
// HTTP-Referer is not a secret, and hiding it would hide every mention of
// the site). Which headers carry a credential cannot be told by their name
// (X-Api-Token, X-Goog-Api-Key, Cookie, a proxy's own): every value counts.
func (s *Set) AddHeader(v string) {
	if !plainURL(strings.TrimSpace(v)) {
		s.Add(v)
	}
	for _, w := range strings.Fields(v) {
		if !plainURL(w) {
			s.Add(w)
		}
	}
}

func plainURL(w string) bool {
	rest, ok := strings.CutPrefix(w, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(w, "http://")
	}
	authority, _, _ := strings.Cut(rest, "/")
	return ok && authority != "" && !strings.ContainsAny(authority, "@") && !strings.ContainsAny(rest, "?#")
}

// Len is the number of values in the set.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.vals)
}

// Redact replaces every value of the set in text by Placeholder (longer
// values first, so a value that contains another is replaced whole). Text
// without any of them is returned as it is, after one fast search per
// value.
func (s *Set) Redact(text string) string {
	if s == nil || text == "" {
		return text
	}
	s.mu.RLock()
	r, sorted, n := s.r, s.sorted, len(s.vals)
	s.mu.RUnlock()
	if n == 0 {
		return text
	}
	if r == nil {
		s.mu.Lock()
		if s.r == nil {
			vals := make([]string, 0, len(s.vals))
			for v := range s.vals {
				vals = append(vals, v)
			}
			sort.Slice(vals, func(i, j int) bool {
				if len(vals[i]) != len(vals[j]) {
					return len(vals[i]) > len(vals[j])
				}
				return vals[i] < vals[j]
			})
			pairs := make([]string, 0, 2*len(vals))
			for _, v := range vals {
				pairs = append(pairs, v, Placeholder)
			}
			s.r, s.sorted = strings.NewReplacer(pairs...), vals
		}
		r, sorted = s.r, s.sorted
		s.mu.Unlock()
	}
	for _, v := range sorted {
		if strings.Contains(text, v) {
			return r.Replace(text)
		}
	}
	return text
}
