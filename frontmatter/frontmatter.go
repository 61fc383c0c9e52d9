package frontmatter

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Default limits, used for the zero fields of Limits.
const (
	DefaultDeadline     = 100 * time.Millisecond
	DefaultCallDeadline = 20 * time.Millisecond
	DefaultCallBudget   = 200 * time.Millisecond
	DefaultMaxBytes     = 8 << 20
	DefaultMaxValues    = 1 << 16

	// MaxCodeBytes is the largest frontmatter accepted. It bounds the parser,
	// the compiler and the line of every diagnostic; a real frontmatter is a
	// few hundred bytes.
	MaxCodeBytes = 64 << 10

	// maxLanguageBytes bounds the fence's info string.
	maxLanguageBytes = 64

	// cacheSize bounds the result cache and the compiled-chunk cache.
	cacheSize = 64
	// maxDiagnostics bounds the diagnostics of one evaluation, so a loop of
	// bad writes cannot produce a million of them.
	maxDiagnostics = 50
)

// Source is the frontmatter block of one buffer.
type Source struct {
	// Language is the fence's info string ("lua" or "json"; case is ignored).
	Language string
	// Code is the text between the fences, lines joined with "\n".
	Code string
	// StartLine is the 1-based buffer line of the opening fence: line k of
	// Code (1-based) is buffer line StartLine+k.
	StartLine int
}

// Setup is what the caller's setup config provides as the starting point of
// flemma.opt. Every field takes part in the cache key.
type Setup struct {
	// Tools is the default list of enabled tool names (flemma.opt.tools
	// starts from it).
	Tools []string
	// KnownTools are all registered tool names, for validation and "did you
	// mean". Nil disables the check (every name is accepted).
	KnownTools []string
	// AutoApprove is setup's tools.auto_approve when it is a list (nil when it
	// is a function or a module path; an empty non-nil slice is an empty
	// list). List operations in the frontmatter start from it.
	AutoApprove []string
	// Presets are the known approval preset names ("$default", "$readonly",
	// "$standard" and the user's). Nil disables the check.
	Presets []string
	// Providers are the known provider names for flemma.opt.provider. Nil
	// disables the check.
	Providers []string
}

// Limits bound one evaluation and one call of a stored function. Zero fields
// take the defaults.
type Limits struct {
	// Deadline bounds the evaluation of a frontmatter (default 100 ms).
	Deadline time.Duration
	// CallDeadline bounds one call of a stored auto_approve function
	// (default 20 ms).
	CallDeadline time.Duration
	// CallBudget is the time that all calls sharing one Budget may take
	// together (default 200 ms); see Evaluator.NewBudget.
	CallBudget time.Duration
	// MaxBytes is the memory bound of one evaluation or call (default 8 MiB):
	// the largest string or sparse table it may build at once, the size of
	// the state a kept VM may retain, and the string bytes of one conversion
	// (all template variables; one value written to flemma.opt; the input
	// and context of one call). Because garbage is not credited back, the
	// total of all strings built in one run may reach 8×MaxBytes.
	MaxBytes int
	// MaxValues bounds one conversion between Lua and Go (default 65536
	// values): all template variables together, one value written to
	// flemma.opt, the input and context of one call. Every table, entry and
	// scalar counts, and a table reachable from several places counts at
	// every place, so the bound holds for the tree a consumer walks.
	MaxValues int
}

func (l Limits) withDefaults() Limits {
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	if l.CallDeadline <= 0 {
		l.CallDeadline = DefaultCallDeadline
	}
	if l.CallBudget <= 0 {
		l.CallBudget = DefaultCallBudget
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxValues <= 0 {
		l.MaxValues = DefaultMaxValues
	}
	return l
}

// Severity values of a Diagnostic.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Diagnostic is one problem found in a frontmatter.
type Diagnostic struct {
	// Line is the 1-based buffer line the problem belongs to.
	Line int
	// Severity is SeverityError or SeverityWarning.
	Severity string
	// Message says what is wrong, in words a user can act on.
	Message string
}

// String formats the diagnostic as "line N: severity: message".
func (d Diagnostic) String() string {
	return fmt.Sprintf("line %d: %s: %s", d.Line, d.Severity, d.Message)
}

// Result is the outcome of one evaluation. A Result returned by Evaluate may
// be shared with other callers through the cache: treat it as read-only.
type Result struct {
	// Opts are the per-buffer options the frontmatter set.
	Opts Options
	// Vars are the template variables: new top-level Lua globals, or the
	// top-level JSON keys other than "flemma". Values are string, bool, int
	// (integral numbers), float64, []any and map[string]any.
	Vars map[string]any
	// Diagnostics are sorted by line.
	Diagnostics []Diagnostic
}

// Blocking reports whether the buffer must not be acted on: true when any
// diagnostic has error severity. Opts are then incomplete and must not be
// replaced by setup's options either.
func (r *Result) Blocking() bool {
	for _, d := range r.Diagnostics {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Options are the per-buffer options set through flemma.opt (Lua) or the
// "flemma" key (JSON). A nil pointer, slice or map means "not set by the
// frontmatter".
type Options struct {
	// Tools is the list of enabled tool names; non-nil (possibly empty) when
	// the frontmatter touched flemma.opt.tools.
	Tools []string
	// AutoApprove is the approval list (tool names, "$presets" and command
	// rules such as "bash(git status*)") when the frontmatter set it as a
	// list.
	AutoApprove []string
	// AutoApproveExclusions are tool names removed from the approval list;
	// the approval layer removes them from the expansion of the presets the
	// list names (the presets themselves stay in AutoApprove).
	AutoApproveExclusions []string
	// AutoApproveAssigned reports that the frontmatter assigned the list
	// (flemma.opt.tools.auto_approve = {…}) rather than only modifying
	// setup's list with :append/:remove/:prepend/+/-: the buffer's list
	// then replaces setup's. A function is always an assignment.
	AutoApproveAssigned bool
	// AutoApproveFunc is set when tools.auto_approve is a function. Then
	// AutoApprove and AutoApproveExclusions are nil.
	AutoApproveFunc *Func
	// Autopilot is tools.autopilot.enabled; MaxTurns is
	// tools.autopilot.max_turns; MaxConcurrent is tools.max_concurrent
	// (0 = unlimited).
	Autopilot     *bool
	MaxTurns      *int
	MaxConcurrent *int
	// WebSearch and WebFetch are tools.web_search and tools.web_fetch: the
	// provider's own web tools for this buffer (an untrusted buffer may
	// only turn them off).
	WebSearch, WebFetch *bool
	// Thinking is "minimal", "low", "medium", "high", "max", "off" (from
	// false) or a token budget written as a decimal integer.
	Thinking *string
	// Temperature, MaxTokens and CacheRetention ("short", "long", "none") are
	// the general request parameters.
	Temperature    *float64
	MaxTokens      *int
	CacheRetention *string
	// Provider and Model choose the model for this buffer.
	Provider, Model *string
	// Anthropic, OpenAI and Vertex are the provider-specific parameters
	// (thinking_budget, reasoning, …): keys to string, bool, int, float64 or
	// nested []any / map[string]any. Provider-specific values win over the
	// general ones.
	Anthropic, OpenAI, Vertex map[string]any
	// SandboxEnabled is only ever true: frontmatter may enable the sandbox
	// but never disable or loosen it.
	SandboxEnabled *bool
}

// Evaluator evaluates frontmatters and caches the results. It is safe for
// concurrent use.
type Evaluator struct {
	limits Limits

	mu      sync.Mutex
	results *lru[*Result]
	protos  *lru[*compiled]

	// evaluations counts evaluations that were not answered from the cache
	// (tests use it to prove caching).
	evaluations atomic.Int64
}

// NewEvaluator returns an Evaluator with the given limits (zero fields take
// the defaults).
func NewEvaluator(l Limits) *Evaluator {
	return &Evaluator{
		limits:  l.withDefaults(),
		results: newLRU[*Result](cacheSize),
		protos:  newLRU[*compiled](cacheSize),
	}
}

// Limits returns the evaluator's limits with defaults applied.
func (e *Evaluator) Limits() Limits { return e.limits }

// Evaluate evaluates src starting from setup. Results are cached by language,
// code, start line and setup: evaluating an unchanged frontmatter again
// returns the same *Result without running anything. An empty Source (no
// language, no code) gives an empty result. Evaluate never panics.
func (e *Evaluator) Evaluate(src Source, setup Setup) *Result {
	if src.Language == "" && src.Code == "" {
		return &Result{Vars: map[string]any{}}
	}
	if r := refuse(src); r != nil {
		// Too large to be worth a cache entry (or a copy as its key).
		return r
	}
	key := cacheKey(src, setup)
	e.mu.Lock()
	if r, ok := e.results.get(key); ok {
		e.mu.Unlock()
		return r
	}
	e.mu.Unlock()

	r := e.evaluate(src, setup)

	e.mu.Lock()
	e.results.put(key, r)
	e.mu.Unlock()
	return r
}

// evaluate runs one evaluation without the result cache.
func (e *Evaluator) evaluate(src Source, setup Setup) (res *Result) {
	e.evaluations.Add(1)
	res = &Result{Vars: map[string]any{}}
	defer func() {
		// Last line of defence: gopher-lua or this package panicking on a
		// hostile input must never take the host down.
		if p := recover(); p != nil {
			res = &Result{Vars: map[string]any{}, Diagnostics: []Diagnostic{{
				Line: src.StartLine, Severity: SeverityError,
				Message: fmt.Sprintf("internal error while evaluating the frontmatter: %v", p),
			}}}
		}
		for i := range res.Diagnostics {
			res.Diagnostics[i].Message = clipMessage(res.Diagnostics[i].Message)
		}
		sortDiagnostics(res.Diagnostics)
	}()
	if r := refuse(src); r != nil {
		return r
	}
	switch strings.ToLower(src.Language) {
	case "lua":
		e.evaluateLua(src, setup, res)
	case "json":
		evaluateJSON(src, setup, e.limits, res)
	default:
		res.Diagnostics = append(res.Diagnostics, Diagnostic{Line: src.StartLine, Severity: SeverityError,
			Message: fmt.Sprintf("Unsupported frontmatter language: %s", clip(src.Language))})
	}
	return res
}

// refuse returns the result for a source too large to look at, or nil.
func refuse(src Source) *Result {
	var msg string
	switch {
	case len(src.Code) > MaxCodeBytes:
		msg = fmt.Sprintf("frontmatter is too large (%d bytes; the limit is %d)", len(src.Code), MaxCodeBytes)
	case len(src.Language) > maxLanguageBytes:
		msg = fmt.Sprintf("Unsupported frontmatter language: %s", clip(src.Language))
	default:
		return nil
	}
	return &Result{Vars: map[string]any{}, Diagnostics: []Diagnostic{{Line: src.StartLine, Severity: SeverityError, Message: msg}}}
}

// compiledChunk returns the compiled chunk for code, from the cache when
// possible. Compilation does not depend on the setup, so a setup change
// re-runs a chunk without re-compiling it.
func (e *Evaluator) compiledChunk(code string) (*compiled, error) {
	e.mu.Lock()
	c, ok := e.protos.get(code)
	e.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := compile(code)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.protos.put(code, c)
	e.mu.Unlock()
	return c, nil
}

func sortDiagnostics(ds []Diagnostic) {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int { return cmp.Compare(a.Line, b.Line) })
}

// cacheKey identifies an evaluation: everything its result depends on.
func cacheKey(src Source, setup Setup) string {
	var b strings.Builder
	b.Grow(len(src.Code) + 256)
	b.WriteString(strings.ToLower(src.Language))
	b.WriteByte(0)
	fmt.Fprintf(&b, "%d", src.StartLine)
	b.WriteByte(0)
	b.WriteString(src.Code)
	for _, list := range [][]string{setup.Tools, setup.KnownTools, setup.AutoApprove, setup.Presets, setup.Providers} {
		b.WriteByte(0)
		if list == nil {
			b.WriteByte('n') // nil and empty differ (AutoApprove: function vs empty list)
			continue
		}
		b.WriteByte('l')
		for _, s := range list {
			b.WriteString(s)
			b.WriteByte(0x1f)
		}
	}
	return b.String()
}
