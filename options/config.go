package options

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Config is the part of the Lua setup() table the host uses
// (lua/flemma/config.lua holds the defaults a user reads; the few Go
// defaults below are for a host that was never sent a setup). It arrives as
// JSON; Lua's empty tables are forgiven (Decode).
type Config struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Parameters struct {
		MaxTokens      int            `json:"max_tokens"`
		Temperature    *float64       `json:"temperature"`
		Thinking       any            `json:"thinking"` // level, false, or a budget
		CacheRetention string         `json:"cache_retention"`
		Anthropic      map[string]any `json:"anthropic"`
		OpenAI         map[string]any `json:"openai"`
		Vertex         map[string]any `json:"vertex"`
	} `json:"parameters"`
	// Models is setup's models = { ["<model or prefix>"] = {…} }: what
	// flemma takes a model for (its output limit, context, thinking form,
	// prices), over the built-in catalogue. Setup only: a file cannot
	// change it.
	Models    map[string]ModelOverride  `json:"models"`
	Providers map[string]ProviderConfig `json:"providers"`
	// MCPServers is setup's mcp_servers: MCP servers whose tools become
	// mcp__<server>__<tool>. Setup only: Resolve never reads it, so a
	// file's frontmatter can neither start a server nor add one.
	MCPServers map[string]MCPServer `json:"mcp_servers"`
	Tools      struct {
		Mode                 string                `json:"mode"`
		RequireApproval      *bool                 `json:"require_approval"`
		AutoApprove          json.RawMessage       `json:"auto_approve"`
		AutoApproveSandboxed *bool                 `json:"auto_approve_sandboxed"`
		Presets              map[string]presetJSON `json:"presets"`
		Autopilot            struct {
			Enabled  *bool `json:"enabled"`
			MaxTurns int   `json:"max_turns"`
		} `json:"autopilot"`
		MaxConcurrent *int `json:"max_concurrent"`
		// MaxCallsPerResponse bounds the calls of one response that run
		// (0: no bound); nil: DefaultMaxCallsPerResponse.
		MaxCallsPerResponse *int `json:"max_calls_per_response"`
		Truncate            struct {
			MaxLines int `json:"max_lines"`
			MaxBytes int `json:"max_bytes"`
		} `json:"truncate"`
		Bash struct {
			Shell string            `json:"shell"`
			Env   map[string]string `json:"env"`
		} `json:"bash"`
		// WebSearch and WebFetch are the providers' own web tools
		// (tools.web_search, tools.web_fetch), off unless Enabled.
		WebSearch struct {
			Enabled bool `json:"enabled"`
			MaxUses int  `json:"max_uses"`
		} `json:"web_search"`
		WebFetch struct {
			Enabled bool `json:"enabled"`
			MaxUses int  `json:"max_uses"`
		} `json:"web_fetch"`
		// Fetch is tools.fetch: the fetch tool, off unless Enabled.
		Fetch struct {
			Enabled      bool    `json:"enabled"`
			AllowPrivate bool    `json:"allow_private"`
			MaxBytes     int     `json:"max_bytes"`
			Timeout      float64 `json:"timeout"`
			MaxRedirects int     `json:"max_redirects"`
		} `json:"fetch"`
		DefaultTimeout float64 `json:"default_timeout"`
		// Timeouts is tools.timeouts: seconds by tool name, tag or
		// "default" (which wins over default_timeout, its older name).
		Timeouts          map[string]float64 `json:"timeouts"`
		CursorAfterResult string             `json:"cursor_after_result"`
		// AutoApproveFileCalls lets policies decide the calls that were
		// already in a file (read or pasted into a buffer), as if every
		// file were trusted; otherwise they ask (approval.Gate).
		AutoApproveFileCalls bool `json:"auto_approve_file_calls"`
		// Editor bounds the questions the diagnostics, lsp and buffers
		// tools ask Neovim, and the diagnostics after a write or an edit
		// (seconds; nil = the default). Setup only.
		Editor struct {
			Timeout              *float64 `json:"timeout"`
			MaxResults           int      `json:"max_results"`
			DiagnosticsAfterEdit *bool    `json:"diagnostics_after_edit"`
			DiagnosticsWait      *float64 `json:"diagnostics_wait"`
		} `json:"editor"`
	} `json:"tools"`
	// Paths are Neovim's directories, computed by the plugin: state is
	// flemma's state folder (journal, trust store, log), config Neovim's
	// configuration folder. A policy-approved call may not write there.
	Paths struct {
		State  string `json:"state"`
		Config string `json:"config"`
		// Data is flemma's folder in Neovim's data folder
		// (stdpath("data")/flemma): sign-ins are stored there.
		Data string `json:"data"`
		// Private are the editor's own state (Neovim's state folder,
		// 'undodir', 'directory', 'backupdir', the shada file's folder,
		// flemma's log file): with State, tools never read them and
		// sandboxed commands never see them (issue 24 #3).
		Private []string `json:"private"`
	} `json:"paths"`
	// Send: retries and timeouts of a request, in seconds (nil = the
	// default; Resolve applies them).
	Send struct {
		Retries       *float64 `json:"retries"`
		RetryDelay    *float64 `json:"retry_delay"`
		RetryMaxDelay *float64 `json:"retry_max_delay"`
		Timeouts      struct {
			FirstByte *float64 `json:"first_byte"`
			Idle      *float64 `json:"idle"`
			Total     *float64 `json:"total"`
		} `json:"timeouts"`
		// CompactThreshold is the share of the model's context window at
		// which a send is held once to offer :Flemma compact (nil = 0.8,
		// 0 = never).
		CompactThreshold *float64 `json:"compact_threshold"`
		// Budget bounds what one send evaluates (nil = the default).
		Budget struct {
			TemplateMS      *float64 `json:"template_ms"`
			TemplateBytes   *int     `json:"template_bytes"`
			References      *int     `json:"references"`
			AttachmentBytes *int     `json:"attachment_bytes"`
		} `json:"budget"`
	} `json:"send"`
	Sandbox struct {
		Enabled  *bool    `json:"enabled"`
		Backend  string   `json:"backend"`
		Writable []string `json:"writable"`
		// Readable are roots besides the writable ones that read, grep,
		// find and ls may read by policy ("/" : everywhere).
		Readable []string `json:"readable"`
		DenyRead []string `json:"deny_read"`
		EnvDeny  []string `json:"env_deny"`
		Network  *bool    `json:"network"`
		// UnixSockets: sandbox.unix_sockets (off: no AF_UNIX socket in
		// sandboxed commands).
		UnixSockets *bool `json:"unix_sockets"`
		// Limits: sandbox.limits (nil fields keep the default). Memory is
		// MiB (a number) or "N%" of the machine's memory; FileSize MiB;
		// CPU seconds; 0 = no limit.
		Limits struct {
			Processes *float64 `json:"processes"`
			Memory    any      `json:"memory"`
			FileSize  *float64 `json:"file_size"`
			OpenFiles *float64 `json:"open_files"`
			CPU       *float64 `json:"cpu"`
		} `json:"limits"`
	} `json:"sandbox"`
}

// MCPServer is one entry of mcp_servers: a command run over stdio, or the
// URL of a streamable HTTP server (mcp.ServerConfig).
type MCPServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// ModelOverride is one entry of models = {…} (provider.ModelOverride).
type ModelOverride struct {
	MaxOutputTokens int      `json:"max_output_tokens"`
	ContextWindow   int      `json:"context_window"`
	Thinking        string   `json:"thinking"` // adaptive | budget | effort | none
	InputPrice      *float64 `json:"input_price"`
	OutputPrice     *float64 `json:"output_price"`
	CacheReadPrice  *float64 `json:"cache_read_price"`
	CacheWritePrice *float64 `json:"cache_write_price"`
}

// ProviderConfig is providers.<name> of setup: a built-in provider's
// endpoint, or a named provider (any other name) with its wire. Only setup
// may set these: a frontmatter can choose a provider by name, never point
// one somewhere else.
type ProviderConfig struct {
	BaseURL  string `json:"base_url"`
	File     string `json:"file"` // replay: the script
	Project  string `json:"project"`
	Location string `json:"location"`
	// Wire is the API a named provider speaks: chat_completions (the
	// default for a new name), openai (Responses), anthropic or vertex.
	Wire string `json:"wire"`
	// Model is the provider's model when none is chosen for it.
	Model string `json:"model"`
	// APIKeyEnv names the environment variable(s) holding the key: a
	// string, a list, or false for none.
	APIKeyEnv any `json:"api_key_env"`
	// APIKeyCmd is the argv of a command printing the key (no shell).
	APIKeyCmd []string `json:"api_key_cmd"`
	// APIKeyCache (seconds) keeps a command's key; APIKeyTimeout bounds
	// the command.
	APIKeyCache   *float64 `json:"api_key_cache"`
	APIKeyTimeout *float64 `json:"api_key_timeout"`
	// APIKeyHeader sends the key in this header as it is (Azure: api-key).
	APIKeyHeader string            `json:"api_key_header"`
	Headers      map[string]string `json:"headers"`
	ExtraBody    map[string]any    `json:"extra_body"`
	// Reasoning is how a chat_completions server gets its reasoning back:
	// "reasoning_content" or "none" ("" = what its host documents).
	Reasoning string `json:"reasoning"`
	// GitHubURL and GitHubAPIURL are where the copilot provider signs in
	// (GitHub Enterprise; "" = github.com and api.github.com).
	GitHubURL    string `json:"github_url"`
	GitHubAPIURL string `json:"github_api_url"`
}

// BuiltinProviders are the providers that need no providers.<name> entry.
var BuiltinProviders = []string{"anthropic", "copilot", "gemini", "openai", "replay", "vertex"}

// Wire is the API a provider of this setup speaks: a built-in's own name
// (unless providers.<name>.wire gives it another), a named provider's
// wire (chat_completions by default).
func (c *Config) Wire(name string) string {
	p, ok := c.Providers[name]
	for _, n := range BuiltinProviders {
		if n == name {
			if ok && p.Wire != "" {
				return p.Wire
			}
			return name
		}
	}
	if ok && p.Wire != "" {
		return p.Wire
	}
	return "chat_completions"
}

// ProviderNames are the built-in providers and the named ones of setup,
// sorted.
func (c *Config) ProviderNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range BuiltinProviders {
		seen[n] = true
		out = append(out, n)
	}
	for n := range c.Providers {
		if !seen[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

type presetJSON struct {
	Approve []string `json:"approve"`
	Deny    []string `json:"deny"`
}

// DefaultConfig is the configuration before the plugin sends its setup.
func DefaultConfig() Config {
	var c Config
	c.Provider = "anthropic"
	c.Tools.Mode = "enabled"
	c.Tools.AutoApprove = json.RawMessage(`["$default"]`)
	c.Tools.DefaultTimeout = 30
	c.Tools.Timeouts = map[string]float64{}
	for k, v := range DefaultToolTimeouts {
		c.Tools.Timeouts[k] = v
	}
	c.Tools.CursorAfterResult = "result"
	c.Tools.Autopilot.MaxTurns = 100
	return c
}

// Decode reads the setup the plugin sends (JSON).
func Decode(configJSON string) (Config, error) {
	var raw any
	if err := json.Unmarshal([]byte(configJSON), &raw); err != nil {
		return DefaultConfig(), fmt.Errorf("setup: %w", err)
	}
	return decodeConfig(raw)
}

// decodeConfig turns the decoded setup table into a Config.
func decodeConfig(raw any) (Config, error) {
	c := DefaultConfig()
	b, err := json.Marshal(normalize(raw))
	if err != nil {
		return c, fmt.Errorf("setup: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("setup: %w", err)
	}
	return c, nil
}

// normalize makes msgpack values JSON-marshalable: map[any]any keys become
// strings and Lua's empty tables (sent as empty arrays) become null so they
// decode into maps and slices alike.
func normalize(v any) any { return NormalizeLua(v, true) }

// NormalizeLua is normalize; emptyToNull false keeps empty arrays (a JSON
// Schema's `required = {}` must stay a list).
func NormalizeLua(v any, emptyToNull bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = NormalizeLua(e, emptyToNull)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = NormalizeLua(e, emptyToNull)
		}
		return out
	case []any:
		if len(x) == 0 && emptyToNull {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = NormalizeLua(e, emptyToNull)
		}
		return out
	default:
		return v
	}
}

// AutoApproveList returns the setup auto_approve when it is a list, and
// whether it was one. A string is a module path; {__lua_function=true} a Lua
// function (both are called back in Neovim).
func (c *Config) AutoApproveList() ([]string, bool) {
	var list []string
	if len(c.Tools.AutoApprove) == 0 || string(c.Tools.AutoApprove) == "null" {
		return []string{}, true
	}
	if err := json.Unmarshal(c.Tools.AutoApprove, &list); err != nil {
		return nil, false
	}
	return list, true
}

// AutoApproveModule returns the module path when auto_approve is a string.
func (c *Config) AutoApproveModule() (string, bool) {
	var path string
	if err := json.Unmarshal(c.Tools.AutoApprove, &path); err != nil || path == "" {
		return "", false
	}
	return path, true
}

// AutoApproveIsFunction reports the {__lua_function = true} marker.
func (c *Config) AutoApproveIsFunction() bool {
	var m struct {
		Fn bool `json:"__lua_function"`
	}
	return json.Unmarshal(c.Tools.AutoApprove, &m) == nil && m.Fn
}
