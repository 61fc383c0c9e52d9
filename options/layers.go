package options

import "github.com/flemma-dev/flemma/frontmatter"

// The layers of Resolve: the options a :Flemma command of this session or
// a buffer's frontmatter sets. Each is one entry of layers: its path in the
// schema, where its value is in Runtime and in frontmatter.Options, and the
// field it makes. How a frontmatter's value applies is not the entry's but
// its scope's, the schema's (fromFile): one rule per scope. A Narrow
// option says only which of two values is the stricter.
//
// TestLayersMatchSchema holds the table to the schema: every option a
// frontmatter may set is here (but tools.auto_approve, which the approval
// layer merges), and nothing else.

// resolving is Resolve's work: the options so far, and the provider
// sections of parameters (one becomes Effective.Extra).
type resolving struct {
	Effective
	anthropic, openai, vertex map[string]any
}

// section is parameters.<name> so far (nil: none, or not a section).
func (r *resolving) section(name string) map[string]any {
	switch name {
	case "anthropic":
		return r.anthropic
	case "openai":
		return r.openai
	case "vertex":
		return r.vertex
	}
	return nil
}

// fileSwitchesProvider: a frontmatter that chooses another provider and no
// model does not keep a model chosen for the other one (the new one's
// default, or providers.<name>.model).
func (r *resolving) fileSwitchesProvider(o *frontmatter.Options) {
	if o.Provider != nil && *o.Provider != r.Provider && o.Model == nil {
		r.Model = ""
	}
}

// layer is one option of layers.
type layer interface {
	option() Option
	fromSession(r *resolving, rt Runtime)
	fromFile(r *resolving, rt Runtime, b Buffer)
	narrows() bool // a Narrow option has its stricter choice
}

// layered is a layer whose value is a T.
type layered[T any] struct {
	path  string
	scope Scope
	open  bool // an open table: merged key by key
	field func(*resolving) *T
	// inSession and inFile are the option's value in Runtime and in the
	// frontmatter (nil: not set there); nil: no such layer sets it.
	inSession func(Runtime) *T
	inFile    func(*frontmatter.Options) *T
	// stricter is, for a Narrow option, the stricter of two values.
	stricter func(a, b T) T
	// evenTrusted: a trusted buffer's frontmatter may not loosen it either
	// (sandbox.enabled: docs/security.md).
	evenTrusted bool
}

// field is the layer of the option at path (its scope is the schema's).
func field[T any](path string, f func(*resolving) *T) *layered[T] {
	o, ok := byPath[path]
	if !ok {
		panic("options: no option " + path)
	}
	return &layered[T]{path: path, scope: o.Scope, open: o.Open, field: f}
}

func (l *layered[T]) session(f func(Runtime) *T) *layered[T] { l.inSession = f; return l }
func (l *layered[T]) file(f func(*frontmatter.Options) *T) *layered[T] {
	l.inFile = f
	return l
}
func (l *layered[T]) narrow(stricter func(a, b T) T) *layered[T] { l.stricter = stricter; return l }
func (l *layered[T]) evenIfTrusted() *layered[T]                 { l.evenTrusted = true; return l }

func (l *layered[T]) option() Option { return *byPath[l.path] }
func (l *layered[T]) narrows() bool  { return l.stricter != nil }

func (l *layered[T]) fromSession(r *resolving, rt Runtime) {
	if l.inSession == nil {
		return
	}
	if v := l.inSession(rt); v != nil {
		*l.field(r) = *v
	}
}

// fromFile applies the frontmatter's value by the option's scope: a Free
// option takes it (an open table merged key by key); a Narrow one only
// when it is stricter, unless the user trusts the buffer and did not
// choose the value in this session (:Flemma autopilot:disable is the
// user's word: no file undoes it).
func (l *layered[T]) fromFile(r *resolving, rt Runtime, b Buffer) {
	if l.inFile == nil {
		return
	}
	v := l.inFile(b.FM)
	if v == nil {
		return
	}
	dst := l.field(r)
	switch l.scope {
	case Free:
		*dst = l.replace(*dst, *v)
	case Narrow:
		if b.Trusted && !l.evenTrusted && !l.chosenInSession(rt) {
			*dst = *v
		} else {
			*dst = l.stricter(*dst, *v)
		}
	}
}

func (l *layered[T]) chosenInSession(rt Runtime) bool {
	return l.inSession != nil && l.inSession(rt) != nil
}

// replace is v over old: v, or for an open table old with v's keys.
func (l *layered[T]) replace(old, v T) T {
	if m, ok := any(v).(map[string]any); ok && l.open {
		return any(merged(any(old).(map[string]any), m)).(T)
	}
	return v
}

// The stricter of two values of a Narrow option.
var (
	// stricterOff: a boolean is stricter false (autopilot, the web tools).
	stricterOff = func(a, b bool) bool { return a && b }
	// stricterOn: a boolean is stricter true (the sandbox).
	stricterOn = func(a, b bool) bool { return a || b }
	// lowerLimit: the lower limit, 0 (or less) being none.
	lowerLimit = func(a, b int) int {
		switch {
		case a <= 0:
			return b
		case b <= 0:
			return a
		}
		return min(a, b)
	}
)

// layers are the options a session or a frontmatter sets.
var layers = []layer{
	field("provider", func(r *resolving) *string { return &r.Provider }).
		session(func(rt Runtime) *string { return nonEmpty(rt.Provider) }).
		file(func(o *frontmatter.Options) *string { return o.Provider }),
	field("model", func(r *resolving) *string { return &r.Model }).
		session(func(rt Runtime) *string { return rt.Model }).
		file(func(o *frontmatter.Options) *string { return o.Model }),
	field("parameters.max_tokens", func(r *resolving) *int { return &r.MaxTokens }).
		session(func(rt Runtime) *int { return rt.MaxTokens }).
		file(func(o *frontmatter.Options) *int { return o.MaxTokens }),
	field("parameters.temperature", func(r *resolving) **float64 { return &r.Temperature }).
		session(func(rt Runtime) **float64 { return given(rt.Temperature) }).
		file(func(o *frontmatter.Options) **float64 { return set(&o.Temperature) }),
	field("parameters.thinking", func(r *resolving) *string { return &r.Thinking }).
		session(func(rt Runtime) *string { return rt.Thinking }).
		file(func(o *frontmatter.Options) *string { return o.Thinking }),
	field("parameters.cache_retention", func(r *resolving) *string { return &r.CacheRetention }).
		session(func(rt Runtime) *string { return rt.CacheRetention }).
		file(func(o *frontmatter.Options) *string { return o.CacheRetention }),
	field("parameters.anthropic", func(r *resolving) *map[string]any { return &r.anthropic }).
		file(func(o *frontmatter.Options) *map[string]any { return set(&o.Anthropic) }),
	field("parameters.openai", func(r *resolving) *map[string]any { return &r.openai }).
		file(func(o *frontmatter.Options) *map[string]any { return set(&o.OpenAI) }),
	field("parameters.vertex", func(r *resolving) *map[string]any { return &r.vertex }).
		file(func(o *frontmatter.Options) *map[string]any { return set(&o.Vertex) }),

	field("tools.max_concurrent", func(r *resolving) *int { return &r.MaxConcurrent }).
		file(func(o *frontmatter.Options) *int { return o.MaxConcurrent }).narrow(lowerLimit),
	// a file's max_turns of 0 or less is none (setup's is the default)
	field("tools.autopilot.max_turns", func(r *resolving) *int { return &r.MaxTurns }).
		file(func(o *frontmatter.Options) *int { return positive(o.MaxTurns) }).narrow(lowerLimit),
	field("tools.autopilot.enabled", func(r *resolving) *bool { return &r.Autopilot }).
		session(func(rt Runtime) *bool { return rt.Autopilot }).
		file(func(o *frontmatter.Options) *bool { return o.Autopilot }).narrow(stricterOff),
	field("tools.web_search.enabled", func(r *resolving) *bool { return &r.WebSearch }).
		file(func(o *frontmatter.Options) *bool { return o.WebSearch }).narrow(stricterOff),
	field("tools.web_fetch.enabled", func(r *resolving) *bool { return &r.WebFetch }).
		file(func(o *frontmatter.Options) *bool { return o.WebFetch }).narrow(stricterOff),
	field("sandbox.enabled", func(r *resolving) *bool { return &r.SandboxEnabled }).
		file(func(o *frontmatter.Options) *bool { return o.SandboxEnabled }).narrow(stricterOn).evenIfTrusted(),
}

// nonEmpty is s, unless it is "" (unchanged).
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	v := s // only a value that is there is moved to the heap
	return &v
}

// given is a number that is set, as a value that is there (nil: unset).
func given(v *float64) **float64 {
	if v == nil {
		return nil
	}
	p := v // only a value that is there is moved to the heap
	return &p
}

// set is p when *p is set (not nil).
func set[T *float64 | map[string]any](p *T) *T {
	if *p == nil {
		return nil
	}
	return p
}

// positive is n when it is more than 0.
func positive(n *int) *int {
	if n == nil || *n <= 0 {
		return nil
	}
	return n
}
