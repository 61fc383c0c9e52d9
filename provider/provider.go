package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/internal/secrets"
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
	Kind       string // PartText, PartThinking, PartToolUse, PartToolResult, PartFile, PartExpr or PartCode
	Text       string
	File       *File
	Expr       *Expr
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
	// Files are attached to the result: the image or PDF a `read` answered
	// with a file reference (Content keeps the reference as text).
	Files []*File
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
	// Web turns on the provider's own web tools (tools.web_search,
	// tools.web_fetch): Anthropic's web_search and web_fetch server tools,
	// OpenAI's web_search, Gemini's Google Search grounding. Chat
	// Completions servers have none.
	Web WebTools
}

// WebTools are the provider-native web tools of a request.
type WebTools struct {
	Search, Fetch         bool
	SearchUses, FetchUses int // per response (Anthropic's max_uses); 0 = 5
}

// Source is a web page a search found or an answer cites.
type Source struct{ URL, Title string }

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
	// EventWebSearch is a search (or page fetch) the provider ran on its
	// side: Event.Text is the query or URL, Event.Detail the tool
	// ("web_search", "web_fetch"), Event.Sources what it found.
	EventWebSearch = "web_search"
	// EventCitation: the answer cites Event.Sources.
	EventCitation = "citation"
	// EventUnreadable is a piece of the stream the parser could not
	// decode: Event.Text holds its raw data, Event.Detail why. It is never
	// dropped in silence: the engine logs it and warns, and the Writer
	// marks the response as missing something (Writer.Cut).
	EventUnreadable = "unreadable"
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
	Detail     string   // EventUnreadable: why the piece could not be read; EventWebSearch: the tool
	Sources    []Source // EventWebSearch, EventCitation
}

// Usage is the token accounting of a response. InputTokens, CacheReadTokens
// and CacheWriteTokens are disjoint (the input read from or written to the
// cache is not counted again as input). OutputTokens are every output token
// billed, reasoning included; ThinkingTokens is the reasoning part of them.
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens, ThinkingTokens int
	// WebSearches are the provider-side searches billed apart from the
	// tokens, SearchFee (USD) what they cost at the provider's price.
	WebSearches int
	SearchFee   float64
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
	// Timeout bounds one whole request (connect to last byte); 0 = 600 s,
	// negative = no limit.
	Timeout time.Duration
	// FirstByteTimeout bounds the wait from sending the request to the
	// first byte of the response body; 0 = 120 s, negative = no limit.
	FirstByteTimeout time.Duration
	// IdleTimeout bounds the silence between two pieces of the response
	// once it began (a stalled stream); 0 = 120 s, negative = no limit.
	IdleTimeout time.Duration

	// Wire is the API a named provider speaks: "anthropic", "openai"
	// (Responses), "chat_completions" or "vertex"; "" = the name's own.
	Wire string
	// Key is where the credential comes from; nil = the built-in source of
	// the provider (none for a named provider: no credential is sent).
	Key *KeySource
	// KeyHeader sends the credential in this header, as it is ("api-key"
	// for Azure OpenAI); "" = the wire's own (Authorization: Bearer, or
	// Anthropic's x-api-key).
	KeyHeader string
	// Headers are added to every request (they cannot replace the ones
	// that carry the credential or the content type).
	Headers map[string]string
	// ExtraBody is merged into the JSON body of every request (objects
	// merged key by key); it cannot replace the model, the conversation,
	// the tools or stream (see protectedBody).
	ExtraBody map[string]any
	// Keys resolves and caches credentials; nil = DefaultKeyring.
	Keys *Keyring
	// Copilot is where the copilot provider signs in and keeps its token.
	Copilot CopilotConfig
	// Reasoning is how a Chat Completions server gets its reasoning back
	// (ReasoningContent or ReasoningNone); "" = what the server at BaseURL
	// documents (dialectOf).
	Reasoning string

	cred *credHolder // set by New: the credential the client used last
}

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
	if cfg.Timeout < 0 {
		cfg.Timeout = 1 << 62 // no limit: a context needs some deadline here
	}
	if cfg.FirstByteTimeout == 0 {
		cfg.FirstByteTimeout = defaultStallTimeout
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = defaultStallTimeout
	}
	cfg.HTTPClient = withStallTimeouts(cfg.HTTPClient, cfg.FirstByteTimeout, cfg.IdleTimeout)
	wire := cfg.Wire
	if wire == "" {
		wire = name
	}
	w, known := wireOf(wire)
	if !known {
		if cfg.Wire != "" {
			return nil, fmt.Errorf("provider %s: unknown wire %q (known: %s)", name, cfg.Wire, strings.Join(Wires(), ", "))
		}
		return nil, fmt.Errorf("unknown provider %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	wire = w.Name
	if wire == "replay" {
		if cfg.ReplayFile == "" {
			return nil, fmt.Errorf("provider replay: no replay file configured")
		}
		return newReplay(cfg), nil
	}
	if err := checkCustom(name, wire, cfg); err != nil {
		return nil, err
	}
	for _, v := range cfg.Headers {
		secrets.Default.AddHeader(v) // redacted wherever flemma writes
	}
	if len(cfg.Headers) > 0 || len(cfg.ExtraBody) > 0 {
		cfg.HTTPClient = customClient(cfg.HTTPClient, cfg.Headers, cfg.ExtraBody)
	}
	cfg.cred = &credHolder{}
	// The client reads its credential under the configured name's source
	// (a named provider has its own, or none).
	if cfg.Key == nil && name != wire {
		cfg.Key = &KeySource{}
	}
	return &configured{inner: w.New(name, cfg), name: name, cfg: cfg}, nil
}

var osGetenv = os.Getenv

// Credentials reports whether the named built-in provider's credential
// source is usable and names it, for :checkhealth. It never returns the
// value. CredentialStatus does the same for a configured provider.
func Credentials(name string, getenv func(string) string) (present bool, source string) {
	if !slices.Contains(Names(), name) {
		return false, ""
	}
	present, source = CredentialStatus(name, Config{Getenv: getenv})
	return present, strings.ReplaceAll(strings.TrimPrefix(source, "$"), " or $", " or ")
}

const (
	defaultTimeout      = 600 * time.Second
	defaultStallTimeout = 120 * time.Second
)

// HTTPClient is the client of every provider request (a sign-in too).
func HTTPClient() *http.Client { return defaultClient }

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:               http.ProxyFromEnvironment,
	DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout: 10 * time.Second,
	// No ResponseHeaderTimeout: Config.FirstByteTimeout bounds the wait
	// for the response (withStallTimeouts), configurable per send.
	ForceAttemptHTTP2: true,
	MaxIdleConns:      10,
	IdleConnTimeout:   90 * time.Second,
}}

// baseURL joins a configured base with the versioned path of an endpoint,
// not doubling a version segment the base already ends with.
func baseURL(base, def, path string) string {
	if base == "" {
		base = def
	}
	// A query in the base (Azure's ?api-version=…) is kept, after the
	// path's own.
	if b, q, ok := strings.Cut(base, "?"); ok {
		joined := baseURL(b, def, path)
		if strings.Contains(joined, "?") {
			return joined + "&" + q
		}
		return joined + "?" + q
	}
	base = strings.TrimRight(base, "/")
	for _, v := range []string{"/v1beta1", "/v1beta", "/v1"} {
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
