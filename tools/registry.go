package tools

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Registry is the one namespace of tools. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
	// inherited maps a superseding tool to the name whose approval it
	// inherits (the superseded tool's name, which it also takes over).
	inherited map[string]string
	// inheritedTags are the tags a superseding tool inherits with the
	// approval of the tool it replaced (ApprovalTags).
	inheritedTags map[string][]string
	// order is each tool's place in the order of registration (a
	// superseding tool takes the place of the one it replaced): Tagged
	// lists in it.
	order map[string]int
	next  int
	// Have reports whether a requirement ("exe:rg", "feature:bwrap") is
	// met. Nil means every requirement is met.
	Have func(req string) bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]Tool{}, inherited: map[string]string{}, inheritedTags: map[string][]string{}, order: map[string]int{}}
}

// Add registers t. A duplicate name is an error unless t declares
// Supersedes naming the tool it replaces, in which case it takes the name.
func (r *Registry) Add(t Tool) error {
	s := t.Spec()
	if !ValidName(s.Name) {
		return fmt.Errorf("invalid tool name %q: use lower-case snake_case, optionally namespaced with ':'", s.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[s.Name]; dup && s.Supersedes != s.Name {
		return fmt.Errorf("tool %q is already registered (declare supersedes = %q to replace it)", s.Name, s.Name)
	}
	if s.Supersedes != "" && s.Supersedes != s.Name {
		if _, ok := r.tools[s.Supersedes]; !ok {
			return fmt.Errorf("tool %q supersedes %q, which is not registered", s.Name, s.Supersedes)
		}
	}
	if old, ok := r.tools[s.Supersedes]; ok && s.Supersedes != "" {
		r.inheritedTags[s.Name] = r.approvalTags(old)
	}
	if s.Supersedes != "" && s.Supersedes != s.Name {
		delete(r.tools, s.Supersedes)
		delete(r.inheritedTags, s.Supersedes)
		r.inherited[s.Name] = s.Supersedes
		r.order[s.Name] = r.order[s.Supersedes]
		delete(r.order, s.Supersedes)
	}
	if _, placed := r.order[s.Name]; !placed {
		r.order[s.Name] = r.next
		r.next++
	}
	r.tools[s.Name] = t
	return nil
}

// MustAdd is Add for built-ins: a failure is a programmer error.
func (r *Registry) MustAdd(t Tool) {
	if err := r.Add(t); err != nil {
		panic("tools: " + err.Error())
	}
}

// Remove drops a tool by name (used when Lua re-registers its tools).
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	delete(r.tools, name)
	delete(r.inherited, name)
	delete(r.inheritedTags, name)
	delete(r.order, name)
	r.mu.Unlock()
}

// ApprovalName is the name the approval policy sees for a tool: a tool that
// superseded another inherits that one's approval.
func (r *Registry) ApprovalName(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if old, ok := r.inherited[name]; ok {
		return old
	}
	return name
}

// ApprovalTags are the tags the approval policy sees for a tool (the
// built-in presets approve by them): its own, and, for a tool that
// superseded another, that one's, which it inherits with its approval.
func (r *Registry) ApprovalTags(name string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	if !ok {
		return nil
	}
	return r.approvalTags(t)
}

func (r *Registry) approvalTags(t Tool) []string {
	s := t.Spec()
	out := slices.Clone(s.Tags)
	for _, tag := range r.inheritedTags[s.Name] {
		if !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	return out
}

// Tagged returns the names of the registered tools, hidden ones included,
// whose ApprovalTags hold tag, in the order they were registered (the
// built-ins' own order: read, grep, find, ls, …).
func (r *Registry) Tagged(tag string) []string {
	var out []string
	for _, t := range r.All() {
		if slices.Contains(r.ApprovalTags(t.Spec().Name), tag) {
			out = append(out, t.Spec().Name)
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	sort.SliceStable(out, func(i, j int) bool { return r.order[out[i]] < r.order[out[j]] })
	return out
}

// Missing returns the requirements of t that are not met.
func (r *Registry) Missing(t Tool) []string {
	var miss []string
	for _, req := range t.Spec().Requires {
		if r.Have != nil && !r.Have(req) {
			miss = append(miss, req)
		}
	}
	return miss
}

// Get returns a registered tool, usable or not.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Lookup returns a usable tool: registered and with every requirement met.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	t, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok || len(r.Missing(t)) > 0 {
		return nil, false
	}
	return t, true
}

// All returns every registered tool, hidden ones included, sorted by name.
func (r *Registry) All() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name < out[j].Spec().Name })
	return out
}

// Names returns the names of usable tools, sorted.
func (r *Registry) Names() []string {
	var names []string
	for _, t := range r.All() {
		if len(r.Missing(t)) == 0 {
			names = append(names, t.Spec().Name)
		}
	}
	return names
}

// Search returns tools whose name contains q or that carry q as a tag
// (case-insensitive); an empty q matches everything.
func (r *Registry) Search(q string) []Tool {
	q = strings.ToLower(q)
	var out []Tool
	for _, t := range r.All() {
		s := t.Spec()
		if q == "" || strings.Contains(s.Name, q) {
			out = append(out, t)
			continue
		}
		for _, tag := range s.Tags {
			if strings.ToLower(tag) == q {
				out = append(out, t)
				break
			}
		}
	}
	return out
}
