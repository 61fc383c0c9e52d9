package options

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Config is the part of the Lua setup() table the host uses. Its defaults
// and the values each key takes are the schema's (schema.go); it arrives as
// JSON and is decoded key by key (Decode); Lua's empty tables are forgiven.
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

// DefaultConfig is the configuration before the plugin sends its setup:
// the schema's defaults (the options the host reads).
func DefaultConfig() Config {
	tree := map[string]any{}
	for _, o := range Schema {
		if !o.LuaOnly && o.Default != nil && !empty(o.Default) {
			setPath(tree, o.Path, o.Default)
		}
	}
	var c Config
	b, err := json.Marshal(tree)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		panic("options: the schema's defaults do not decode: " + err.Error())
	}
	return c
}

func empty(v any) bool {
	switch x := v.(type) {
	case []string:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// Decode reads the setup the plugin sends (JSON), key by key: a wrong
// value is a Problem and is replaced by its fallback (the default, or the
// stricter choice for approval and the sandbox); every other key is
// applied. The error is for a text that is not JSON at all.
func Decode(configJSON string) (Config, []Problem, error) {
	var raw any
	if err := json.Unmarshal([]byte(configJSON), &raw); err != nil {
		return DefaultConfig(), nil, fmt.Errorf("setup: %w", err)
	}
	c, probs := decodeConfig(raw)
	return c, probs, nil
}

// decodeConfig turns the decoded setup table into a Config.
func decodeConfig(raw any) (Config, []Problem) {
	tree, ok := normalize(raw).(map[string]any)
	if !ok {
		if raw == nil {
			return DefaultConfig(), nil
		}
		return DefaultConfig(), []Problem{{Path: "setup", Want: "a table", Got: gotString(normalize(raw)), Used: "the defaults are used"}}
	}
	probs := Validate(tree)
	// What the schema does not describe (an entry of providers, models,
	// mcp_servers) is decoded key by key too: a value of the wrong type is
	// dropped and reported, the rest decodes.
	c := DefaultConfig()
	decodeInto(reflect.ValueOf(&c).Elem(), tree, "", &probs)
	return c, probs
}

// decodeInto decodes raw into v one key at a time: structs by their json
// names, maps entry by entry, everything else whole. A value that does not
// decode is reported with its path and leaves v as it was.
func decodeInto(v reflect.Value, raw any, path string, probs *[]Problem) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	m, isMap := raw.(map[string]any)
	switch {
	case raw == nil:
		// null (Lua's empty table): an empty list or table, as
		// encoding/json decodes it.
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			v.Set(reflect.Zero(v.Type()))
		}
		return
	case v.Kind() == reflect.Struct && isMap:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if x, ok := m[name]; ok && name != "" && name != "-" {
				decodeInto(v.Field(i), x, join(name), probs)
			}
		}
		return
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String && isMap:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		for k, x := range m {
			e := reflect.New(v.Type().Elem()).Elem()
			if old := v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())); old.IsValid() {
				e.Set(old)
			}
			before := len(*probs)
			decodeInto(e, x, join(k), probs)
			if len(*probs) == before || e.Kind() == reflect.Struct {
				v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
			}
		}
		return
	}
	b, err := json.Marshal(raw)
	if err == nil {
		n := reflect.New(v.Type())
		if err = json.Unmarshal(b, n.Interface()); err == nil {
			v.Set(n.Elem())
			return
		}
	}
	*probs = append(*probs, Problem{Path: path, Want: jsonWant(v.Type()), Got: gotString(raw), Used: "it is ignored"})
}

// jsonWant says what a Go type takes, for a message.
func jsonWant(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonWant(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "a list of strings"
		}
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a table"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	}
	return "a value of type " + t.String()
}

// Validate checks every option of tree (a setup table, as JSON values)
// against the schema: a wrong value is replaced by its fallback, and
// reported. A boolean standing for a table (tools.autopilot = false) is
// made the table.
func Validate(tree map[string]any) []Problem {
	var probs []Problem
	for path, field := range Shorthands {
		if b, ok := getPath(tree, path).(bool); ok {
			setPath(tree, path, map[string]any{field: b})
		}
	}
	bad := map[string]bool{}
	for _, o := range Schema {
		// Each table above the option must be a table.
		parts := strings.Split(o.Path, ".")
		for i := 1; i < len(parts); i++ {
			group := strings.Join(parts[:i], ".")
			v := getPath(tree, group)
			if v == nil || bad[group] {
				continue
			}
			if _, ok := v.(map[string]any); !ok {
				bad[group] = true
				want := "a table"
				if _, short := Shorthands[group]; short {
					want = "a table or a boolean"
				}
				probs = append(probs, Problem{Path: group, Want: want, Got: gotString(v), Used: "its defaults are used"})
				deletePath(tree, group)
				if group == "tools.autopilot" {
					// Stricter: autopilot off.
					setPath(tree, "tools.autopilot.enabled", false)
				}
			}
		}
		v := getPath(tree, o.Path)
		if v == nil || o.Check(v) {
			continue
		}
		use, how := o.fallbackFor(v)
		probs = append(probs, Problem{Path: o.Path, Want: o.Want(), Got: gotString(v), Used: how})
		if use == nil {
			deletePath(tree, o.Path)
		} else {
			setPath(tree, o.Path, use)
		}
	}
	// The keys of each entry of providers, models, mcp_servers: a wrong
	// one is left out, the rest of the entry applies.
	for _, table := range []string{"mcp_servers", "models", "providers"} {
		keys := Entries[table]
		entries, _ := tree[table].(map[string]any)
		for _, name := range sortedKeys(entries) {
			entry, ok := entries[name].(map[string]any)
			if !ok {
				continue // decodeInto reports it
			}
			for _, o := range keys {
				if v, ok := entry[o.Path]; ok && v != nil && !o.Check(v) {
					probs = append(probs, Problem{Path: table + "." + name + "." + o.Path, Want: o.Want(), Got: gotString(v), Used: "it is ignored"})
					delete(entry, o.Path)
				}
			}
		}
	}
	return probs
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func getPath(tree map[string]any, path string) any {
	var cur any = tree
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// setPath sets path in tree, making the tables on the way.
func setPath(tree map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	m := tree
	for _, k := range parts[:len(parts)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// deletePath removes path from tree; false when it was not there.
func deletePath(tree map[string]any, path string) bool {
	parts := strings.Split(path, ".")
	m := tree
	for _, k := range parts[:len(parts)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return false
		}
		m = next
	}
	if _, ok := m[parts[len(parts)-1]]; !ok {
		return false
	}
	delete(m, parts[len(parts)-1])
	return true
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
