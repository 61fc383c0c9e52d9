package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

// Role is the author of a Message: "user" or "assistant".
type Role string

// The two roles of the provider-neutral conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Part kinds.
const (
	PartText       = "text"
	PartThinking   = "thinking"
	PartToolUse    = "tool_use"
	PartToolResult = "tool_result"
)

// Part is one piece of a Message. Kind says which field is set.
type Part struct {
	Kind       string // PartText, PartThinking, PartToolUse or PartToolResult
	Text       string
	Thinking   *Thinking
	ToolUse    *ToolUse
	ToolResult *ToolResult
}

// Thinking is a reasoning block of an assistant message. Signature and
// Provider travel together: a signature is only meaningful to the provider
// that made it ("anthropic", "openai", "vertex"). Redacted blocks (Anthropic)
// carry the opaque data in Content.
type Thinking struct {
	Content, Signature, Provider string
	Redacted                     bool
}

// ToolUse is a tool call made by the model. Name is the internal name (it
// may contain ':'); Input is a JSON object.
type ToolUse struct {
	ID, Name string
	Input    json.RawMessage
	// Incomplete: the arguments the provider streamed are not a whole
	// JSON object (the response was cut inside the call). Input is then
	// "{}" and the call must never run.
	Incomplete bool
}

// ToolResult is the completed result of a tool call.
type ToolResult struct {
	ToolUseID, Content string
	IsError            bool
}

// Message is one turn of the conversation.
type Message struct {
	Role  Role
	Parts []Part
}

// ToolDef is a tool offered to the model. Name is the internal name; the
// providers encode ':' on the wire.
type ToolDef struct {
	Name, Description string
	InputSchema       map[string]any
	Strict            bool
}

// Params are the generation parameters of one request.
type Params struct {
	Model       string   // "" = the provider's default model
	MaxTokens   int      // 0 = the provider's default; never sent above the model's limit
	Temperature *float64 // nil = not sent
	// Thinking is the unified thinking level: "" (default, = "high"),
	// "off", "minimal", "low", "medium", "high", "max", or a token budget
	// as a decimal string ("0" = off).
	Thinking string
	// CacheRetention is "short" (default when ""), "long" or "none".
	CacheRetention string
	// Extra is the provider's own section of the parameters (JSON-shaped
	// values): anthropic thinking_budget, effort; openai reasoning,
	// reasoning_summary, phase (bool, default true), prompt_cache_key;
	// vertex thinking_budget.
	Extra map[string]any
}

// Request is everything one send needs.
type Request struct {
	System   string
	Messages []Message
	Tools    []ToolDef
	Params   Params
	// ModelInfo describes Params.Model (LookupModel, with the user's
	// overrides); nil = the built-in catalogue's entry.
	ModelInfo *ModelInfo
}

// modelInfo is what the request's body is built for.
func (r Request) modelInfo(provider string) (string, ModelInfo) {
	model := r.Params.Model
	if model == "" {
		model = DefaultModel(provider)
	}
	if r.ModelInfo != nil {
		return model, *r.ModelInfo
	}
	return model, LookupModel(provider, model, nil)
}

// Event kinds, in the order a response may produce them.
const (
	// EventText is a piece of answer text, streamed as it arrives.
	EventText = "text"
	// EventThinking is a piece of reasoning text (progress only: the
	// Writer keeps it and writes the block at the end of the response).
	EventThinking = "thinking"
	// EventThinkingSignature closes the current reasoning block with its
	// signature (Event.Signature, for Event.Provider). A signature without
	// preceding EventThinking makes an empty signed block.
	EventThinkingSignature = "thinking_signature"
	// EventRedactedThinking is an opaque Anthropic redacted_thinking block;
	// Event.Text holds its data.
	EventRedactedThinking = "redacted_thinking"
	// EventToolUse is a complete tool call (Event.ToolUse). Arguments are
	// never streamed piecemeal.
	EventToolUse = "tool_use"
	// EventUsage reports the token counts so far (cumulative; the last one
	// wins).
	EventUsage = "usage"
	// EventDone ends a successful response; Event.StopReason is
	// "end_turn", "tool_use", "max_tokens" or the provider's own word.
	EventDone = "done"
)

// Event is one thing a Provider reports while streaming.
type Event struct {
	Kind       string
	Text       string
	Signature  string
	Provider   string // for EventThinkingSignature: whose signature it is
	ToolUse    *ToolUse
	Usage      *Usage
	StopReason string
}

// Usage is the token accounting of a response. InputTokens excludes the
// cached input (CacheReadTokens).
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens, ThinkingTokens int
}

// Provider streams one response. Stream calls emit synchronously, in order,
// from the calling goroutine, and returns when the response is complete
// (after an EventDone), failed (*Error), or ctx ended (ctx.Err(), so a
// cancel returns exactly context.Canceled).
type Provider interface {
	Name() string
	Stream(ctx context.Context, req Request, emit func(Event)) error
}

// Config configures a provider.
type Config struct {
	// BaseURL replaces the base of the endpoint, scheme, host and an
	// optional path prefix (proxies, gateways, tests); "" = the provider's
	// own. A trailing "/v1" (or "/v1beta1" for Vertex) is not doubled.
	BaseURL string
	// Getenv reads credentials and Vertex defaults; nil = os.Getenv.
	Getenv func(string) string
	// HTTPClient sends the requests; nil = a client with a 10 s connect
	// timeout and no overall timeout (streams are long; see Timeout).
	HTTPClient *http.Client
	// Project and Location are the Vertex AI project id and location.
	// Empty = $GOOGLE_CLOUD_PROJECT / $GOOGLE_CLOUD_LOCATION, location
	// "global" by default.
	Project, Location string
	// ReplayFile is the script of the replay provider.
	ReplayFile string
	// Timeout bounds one whole request (connect to last byte); 0 = 600 s.
	Timeout time.Duration
}

// Names lists the providers New knows, sorted.
func Names() []string { return []string{"anthropic", "openai", "replay", "vertex"} }

// New returns the named provider: "anthropic", "openai", "vertex" or
// "replay".
func New(name string, cfg Config) (Provider, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = defaultClient
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	switch name {
	case "anthropic":
		return &anthropic{cfg: cfg, name: "anthropic"}, nil
	case "openai":
		return &openai{cfg: cfg}, nil
	case "vertex":
		return &vertex{cfg: cfg, newID: newVertexID}, nil
	case "replay":
		if cfg.ReplayFile == "" {
			return nil, fmt.Errorf("provider replay: no replay file configured")
		}
		return newReplay(cfg), nil
	}
	return nil, fmt.Errorf("unknown provider %q (known: %s)", name, strings.Join(Names(), ", "))
}

// credentialVars lists, per provider, the environment variables holding its
// credential, in lookup order.
var credentialVars = map[string][]string{
	"anthropic": {"ANTHROPIC_API_KEY"},
	"openai":    {"OPENAI_API_KEY"},
	"vertex":    {"VERTEX_AI_ACCESS_TOKEN", "VERTEX_ACCESS_TOKEN"},
}

// Credentials reports whether the named provider's credential is set and
// where it comes from (the environment variable name), for :checkhealth. It
// never returns the value. The replay provider needs none.
func Credentials(name string, getenv func(string) string) (present bool, source string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if name == "replay" {
		return true, "replay file (no credential needed)"
	}
	vars, ok := credentialVars[name]
	if !ok {
		return false, ""
	}
	for _, v := range vars {
		if strings.TrimSpace(getenv(v)) != "" {
			return true, v
		}
	}
	return false, strings.Join(vars, " or ")
}

// credential returns the credential value or a readable *Error.
func credential(name string, getenv func(string) string) (string, error) {
	for _, v := range credentialVars[name] {
		if s := strings.TrimSpace(getenv(v)); s != "" {
			return s, nil
		}
	}
	vars := credentialVars[name]
	return "", &Error{Provider: name, Message: "no credential: set " + strings.Join(vars, " or ") + " in the environment Neovim starts from"}
}

const defaultTimeout = 600 * time.Second

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   10 * time.Second,
	ResponseHeaderTimeout: 120 * time.Second,
	ForceAttemptHTTP2:     true,
	MaxIdleConns:          10,
	IdleConnTimeout:       90 * time.Second,
}}

// baseURL joins a configured base with the versioned path of an endpoint,
// not doubling a version segment the base already ends with.
func baseURL(base, def, path string) string {
	if base == "" {
		base = def
	}
	base = strings.TrimRight(base, "/")
	for _, v := range []string{"/v1beta1", "/v1"} {
		if strings.HasPrefix(path, v+"/") && strings.HasSuffix(base, v) {
			return base + strings.TrimPrefix(path, v)
		}
	}
	return base + path
}

// sortedTools returns the tools sorted by name, as every provider sends
// them (a stable prefix for prompt caching).
func sortedTools(tools []ToolDef) []ToolDef {
	out := append([]ToolDef(nil), tools...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
