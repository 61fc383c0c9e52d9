// Package options is the one option model of the host: the setup the plugin
// sends (Config), what the user changed in this session (Runtime: :Flemma
// switch, :Flemma autopilot), what a buffer brings (its frontmatter and
// whether the user trusts it), and the one function that makes the
// effective options of a buffer out of them (Resolve).
//
// Precedence: setup, then the session's changes, then the buffer's
// frontmatter. A frontmatter is the file's, and the file may come from
// anyone: unless the user trusts the buffer it can only narrow — select
// fewer tools, lower limits, turn autopilot off, turn the sandbox on —
// never enable a tool setup leaves disabled, raise a limit or turn
// autopilot on (issue 11, class 5; SPEC §5a). :Flemma autopilot:disable is
// the user's word: no frontmatter undoes it.
//
// Every option is declared once, in Schema (schema.go): its default, the
// values it takes and who may set it. lua/flemma/schema.lua is generated
// from it (go generate ./options).
//
// The package is pure: it imports no I/O and no other package of the host
// but frontmatter's option type.
package options

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/frontmatter"
)

// DefaultMaxCallsPerResponse is tools.max_calls_per_response's default: a
// response may make this many calls that run; the rest get an error
// result saying so (seed 001's batch limit, raised from its 8: models read
// a dozen files at once).
var DefaultMaxCallsPerResponse = int(DefaultNumber("tools.max_calls_per_response"))

// Runtime is what the user changed in this session; nil/"" = unchanged.
type Runtime struct {
	Provider       string   // :Flemma switch <provider>
	Model          *string  // :Flemma switch <provider> [model] ("" = the provider's default)
	MaxTokens      *int     // :Flemma switch … max_tokens=
	Temperature    *float64 // … temperature=
	Thinking       *string  // … thinking=
	CacheRetention *string  // … cache_retention=
	Autopilot      *bool    // :Flemma autopilot:enable|disable
}

// Buffer is what a buffer brings.
type Buffer struct {
	// FM is the buffer's frontmatter options (nil: none, or not evaluated).
	FM *frontmatter.Options
	// Trusted: the user trusts the buffer (:Flemma trust, a new buffer,
	// a file saved from a trusted one).
	Trusted bool
	// Usable are the tools that are usable here and enabled by default
	// (the registry's answer).
	Usable []string
}

// Effective are the options of one buffer now.
type Effective struct {
	// DataDir is flemma's data folder (paths.data): where sign-ins live.
	DataDir string
	// WebSearch and WebFetch turn on the provider's own web tools; an
	// untrusted frontmatter may only turn them off. WebMaxUses bounds them
	// per response (0: the provider's default).
	WebSearch, WebFetch         bool
	WebSearchUses, WebFetchUses int
	Provider                    string
	Model                       string
	MaxTokens                   int
	Temperature                 *float64
	Thinking                    string
	CacheRetention              string
	// Extra are the provider-specific parameters of Provider
	// (parameters.<provider>, then the frontmatter's).
	Extra    map[string]any
	Endpoint Endpoint

	Mode string // tools.mode: enabled | parse_only | disabled
	// Tools are the tools the buffer may use and sends, sorted (none when
	// Mode is disabled).
	Tools []string
	// Refused are tools an untrusted frontmatter selected that setup
	// leaves disabled (they are not in Tools).
	Refused       []string
	MaxConcurrent int // 0 = unlimited
	// MaxCallsPerResponse: the calls of one response after this many get
	// an error result instead of running (0 = unlimited).
	MaxCallsPerResponse int
	Autopilot           bool
	MaxTurns            int
	// DefaultTimeout is the "default" class of tool timeouts
	// (tools.timeouts.default, else tools.default_timeout); ToolTimeouts
	// the other classes of tools.timeouts (tool names and tags).
	DefaultTimeout    time.Duration
	ToolTimeouts      map[string]time.Duration
	CursorAfterResult string // result | stay | next
	// SandboxEnabled: setup's sandbox.enabled, or the frontmatter turned
	// it on.
	SandboxEnabled bool
	// Retry and Timeouts are setup's send section (no frontmatter key).
	Retry    Retry
	Timeouts Timeouts
}

// Retry is send.retries, send.retry_delay and send.retry_max_delay.
type Retry struct {
	Retries         int // 0 = never
	Delay, MaxDelay time.Duration
}

// Timeouts are send.timeouts; 0 = no limit.
type Timeouts struct {
	FirstByte, Idle, Total time.Duration
}

// DefaultToolTimeouts are tools.timeouts' defaults besides "default"
// (the schema's): seconds by tool name or tag.
var DefaultToolTimeouts = func() map[string]float64 {
	out := map[string]float64{}
	for k, v := range Default("tools.timeouts").(map[string]any) {
		out[k] = v.(float64)
	}
	return out
}()

// The defaults of the send section (the schema's).
var (
	DefaultRetries       = int(DefaultNumber("send.retries"))
	DefaultRetryDelay    = seconds("send.retry_delay")
	DefaultRetryMaxDelay = seconds("send.retry_max_delay")
	DefaultFirstByte     = seconds("send.timeouts.first_byte")
	DefaultIdle          = seconds("send.timeouts.idle")
	DefaultTotal         = seconds("send.timeouts.total")
)

// Resolve's fallbacks (the schema's defaults).
var (
	defaultMaxConcurrent     = int(DefaultNumber("tools.max_concurrent"))
	defaultMaxTurns          = int(DefaultNumber("tools.autopilot.max_turns"))
	defaultToolTimeout       = seconds("tools.default_timeout")
	defaultMode              = Default("tools.mode").(string)
	defaultCursorAfterResult = Default("tools.cursor_after_result").(string)
)

// seconds is the default of a duration option, in seconds.
func seconds(path string) time.Duration {
	return time.Duration(DefaultNumber(path) * float64(time.Second))
}

// sendOptions reads setup's send section: nil is the default, a negative
// number is 0 (no retries, no limit), a delay of 0 the default.
func sendOptions(c Config) (Retry, Timeouts) {
	secs := func(v *float64, def time.Duration) time.Duration {
		if v == nil {
			return def
		}
		return time.Duration(max(*v, 0) * float64(time.Second))
	}
	r := Retry{Retries: DefaultRetries, Delay: secs(c.Send.RetryDelay, DefaultRetryDelay), MaxDelay: secs(c.Send.RetryMaxDelay, DefaultRetryMaxDelay)}
	if c.Send.Retries != nil {
		r.Retries = int(max(*c.Send.Retries, 0))
	}
	if r.Delay <= 0 {
		r.Delay = DefaultRetryDelay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = DefaultRetryMaxDelay
	}
	t := c.Send.Timeouts
	return r, Timeouts{FirstByte: secs(t.FirstByte, DefaultFirstByte), Idle: secs(t.Idle, DefaultIdle), Total: secs(t.Total, DefaultTotal)}
}

// Endpoint is providers.<name> of setup.
type Endpoint struct {
	BaseURL, ReplayFile, Project, Location string
	// Wire is the API of a named provider ("" for the built-ins).
	Wire string
	// KeySet: setup chose the credential source (APIKeyEnv, APIKeyCmd;
	// both empty = no credential); else the provider's built-in source,
	// with APIKeyCmd as its command when set (a built-in's api_key_cmd
	// comes after its environment variables).
	KeySet    bool
	APIKeyEnv []string
	APIKeyCmd []string
	// APIKeyCache is how long a command's key is kept (negative: not
	// at all; 0: the default); APIKeyTimeout bounds the command.
	APIKeyCache, APIKeyTimeout time.Duration
	APIKeyHeader               string
	Headers                    map[string]string
	ExtraBody                  map[string]any
	// Reasoning is how a Chat Completions server gets its reasoning back
	// (provider.ReasoningContent or ReasoningNone; "" = by its host).
	Reasoning string
	// GitHubURL, GitHubAPIURL: where copilot signs in ("" = github.com).
	GitHubURL, GitHubAPIURL string
}

// endpoint is the Endpoint of providers.<name>.
func endpoint(name string, p ProviderConfig) Endpoint {
	e := Endpoint{BaseURL: p.BaseURL, ReplayFile: p.File, Project: p.Project, Location: p.Location,
		APIKeyHeader: p.APIKeyHeader, Headers: p.Headers, ExtraBody: p.ExtraBody, APIKeyCmd: p.APIKeyCmd, Reasoning: p.Reasoning,
		GitHubURL: p.GitHubURL, GitHubAPIURL: p.GitHubAPIURL}
	builtin := false
	for _, n := range BuiltinProviders {
		builtin = builtin || n == name
	}
	if !builtin {
		e.Wire = p.Wire
		if e.Wire == "" {
			e.Wire = "chat_completions"
		}
		e.KeySet = true // a named provider has only the source it names
	} else if p.Wire != "" && p.Wire != name {
		e.Wire = p.Wire
	}
	switch v := p.APIKeyEnv.(type) {
	case string:
		if v != "" {
			e.APIKeyEnv, e.KeySet = []string{v}, true
		}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok && s != "" {
				e.APIKeyEnv = append(e.APIKeyEnv, s)
			}
		}
		e.KeySet = true
	case bool:
		if !v {
			e.KeySet = true // false: no credential
		}
	}
	if len(p.APIKeyCmd) > 0 && !builtin {
		e.KeySet = true
	}
	if p.APIKeyCache != nil {
		e.APIKeyCache = time.Duration(*p.APIKeyCache * float64(time.Second))
		if *p.APIKeyCache <= 0 {
			e.APIKeyCache = -1
		}
	}
	if p.APIKeyTimeout != nil && *p.APIKeyTimeout > 0 {
		e.APIKeyTimeout = time.Duration(*p.APIKeyTimeout * float64(time.Second))
	}
	return e
}

// resolvingPool keeps Resolve's work struct: the layers' calls through an
// interface move it to the heap, and Resolve runs several times per press
// (without the pool: 7 allocations and 1.2 KB a call instead of 6 and 640
// B, and about 1.5x the CPU).
var resolvingPool = sync.Pool{New: func() any { return new(resolving) }}

// Resolve returns the effective options of a buffer: setup's, then the
// session's changes, then the buffer's frontmatter, each option by the rule
// of its scope (layers.go).
func Resolve(cfg Config, rt Runtime, b Buffer) Effective {
	r := resolvingPool.Get().(*resolving)
	defer func() { *r = resolving{}; resolvingPool.Put(r) }()
	*r = resolving{Effective: fromSetup(cfg),
		anthropic: cfg.Parameters.Anthropic, openai: cfg.Parameters.OpenAI, vertex: cfg.Parameters.Vertex}
	for _, l := range layers {
		l.fromSession(r, rt)
	}
	if b.FM != nil {
		r.fileSwitchesProvider(b.FM)
		for _, l := range layers {
			l.fromFile(r, rt, b)
		}
	}
	r.Extra = r.section(paramsSection(cfg, r.Provider))
	if p, ok := cfg.Providers[r.Provider]; ok {
		r.Endpoint = endpoint(r.Provider, p)
		if r.Model == "" {
			r.Model = p.Model
		}
	}
	r.Tools, r.Refused = selectTools(b)
	if r.Mode == "disabled" {
		r.Tools = nil
	}
	return r.Effective
}

// fromSetup are the options setup gives, with the schema's defaults where
// it gives none (or a value that means the default).
func fromSetup(cfg Config) Effective {
	e := Effective{
		DataDir:             cfg.Paths.Data,
		WebSearch:           cfg.Tools.WebSearch.Enabled,
		WebFetch:            cfg.Tools.WebFetch.Enabled,
		WebSearchUses:       cfg.Tools.WebSearch.MaxUses,
		WebFetchUses:        cfg.Tools.WebFetch.MaxUses,
		Provider:            cfg.Provider,
		Model:               cfg.Model,
		MaxTokens:           cfg.Parameters.MaxTokens,
		Temperature:         cfg.Parameters.Temperature,
		Thinking:            thinkingString(cfg.Parameters.Thinking),
		CacheRetention:      cfg.Parameters.CacheRetention,
		Mode:                orDefault(cfg.Tools.Mode, defaultMode),
		MaxConcurrent:       valueOr(cfg.Tools.MaxConcurrent, defaultMaxConcurrent),
		MaxCallsPerResponse: DefaultMaxCallsPerResponse,
		Autopilot:           cfg.Tools.Autopilot.Enabled == nil || *cfg.Tools.Autopilot.Enabled,
		MaxTurns:            cfg.Tools.Autopilot.MaxTurns,
		CursorAfterResult:   orDefault(cfg.Tools.CursorAfterResult, defaultCursorAfterResult),
		SandboxEnabled:      cfg.Sandbox.Enabled == nil || *cfg.Sandbox.Enabled,
	}
	if n := cfg.Tools.MaxCallsPerResponse; n != nil && *n >= 0 {
		e.MaxCallsPerResponse = *n
	}
	if e.MaxTurns <= 0 {
		e.MaxTurns = defaultMaxTurns
	}
	e.Retry, e.Timeouts = sendOptions(cfg)
	e.DefaultTimeout, e.ToolTimeouts = toolTimeouts(cfg)
	return e
}

// toolTimeouts are the classes of tools.timeouts: "default" (else
// tools.default_timeout, else the schema's) and the others by tool name or
// tag; a class of 0 or less is not one.
func toolTimeouts(cfg Config) (def time.Duration, classes map[string]time.Duration) {
	def = time.Duration(cfg.Tools.DefaultTimeout * float64(time.Second))
	for k, v := range cfg.Tools.Timeouts {
		switch d := time.Duration(v * float64(time.Second)); {
		case d <= 0:
		case k == "default":
			def = d
		default:
			if classes == nil {
				classes = map[string]time.Duration{}
			}
			classes[k] = d
		}
	}
	if def <= 0 {
		def = defaultToolTimeout
	}
	return def, classes
}

// paramsSection is the section of parameters a provider takes: its own,
// else its wire's (parameters.vertex serves the Gemini API too: the same
// wire; parameters.openai the Responses API).
func paramsSection(cfg Config, provider string) string {
	switch provider {
	case "anthropic", "openai", "vertex":
		return provider
	}
	switch wire := cfg.Wire(provider); wire {
	case "gemini":
		return "vertex"
	case "responses":
		return "openai"
	default:
		return wire
	}
}

// selectTools: every usable tool enabled by default, or the frontmatter's
// flemma.opt.tools selection. An untrusted selection is limited to the
// tools enabled by default; a trusted one may opt in tools disabled by
// default (seed 004).
func selectTools(b Buffer) (tools, refused []string) {
	usable := map[string]bool{}
	for _, n := range b.Usable {
		usable[n] = true
	}
	if b.FM == nil || b.FM.Tools == nil {
		tools = append([]string{}, b.Usable...)
	} else {
		tools = []string{}
		for _, n := range b.FM.Tools {
			if usable[n] || b.Trusted {
				tools = append(tools, n)
			} else {
				refused = append(refused, n)
			}
		}
	}
	sort.Strings(tools)
	return dedup(tools), refused
}

// HasTool reports whether a tool is among the buffer's.
func (e Effective) HasTool(name string) bool {
	i := sort.SearchStrings(e.Tools, name)
	return i < len(e.Tools) && e.Tools[i] == name
}

// orDefault is s, or def when s is "".
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// valueOr is *p, or def when p is nil.
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func merged(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func dedup(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// thinkingString is parameters.thinking as the providers take it: a level,
// "off" (false), or a budget.
func thinkingString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		if !x {
			return "off"
		}
		return "medium"
	case float64:
		return strconv.Itoa(int(x))
	case string:
		return x
	}
	return fmt.Sprint(v)
}
