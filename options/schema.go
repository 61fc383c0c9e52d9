package options

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The option schema: every option of setup() declared once — its path,
// the values it takes, its default, a line of documentation and its scope.
// From it come the Lua defaults and checks (lua/flemma/schema.lua, written
// by `go generate ./options`), the host's per-key validation (Decode),
// Resolve's fallbacks (Default), and tests that hold the frontmatter's key
// tree and the help's option list (doc/flemma.txt) to it.
//
// A new option is one entry of Schema (and the field of Config that reads
// it, when the host uses it); docs/design.md "One option schema" lists the
// rest.

// Scope says who may set an option.
type Scope int

const (
	// SetupOnly: setup() alone; a frontmatter is refused.
	SetupOnly Scope = iota
	// Session: setup(), and a :Flemma command of this editor session.
	Session
	// Narrow: a frontmatter may make it stricter (lower, off, fewer); a
	// trusted buffer's may set it.
	Narrow
	// Free: a frontmatter sets it (provider, model, parameters).
	Free
)

func (s Scope) String() string {
	return [...]string{"setup", "session", "narrow", "free"}[s]
}

// Option is one key of setup().
type Option struct {
	Path string
	// Types are the Lua types it takes: boolean, number, string, table,
	// function, nil (nil: the option may be unset).
	Types []string
	// Whole: a number must be a whole number; Min its least value.
	Whole bool
	Min   *float64
	// Enum: a string must be one of these.
	Enum []string
	// List: a table must be a list of strings, and a user's list replaces
	// the default instead of being merged into it.
	List bool
	// Open: a table whose keys are the user's own (names of providers,
	// presets, variables): never merged key by key against the defaults'.
	Open bool
	// Percent: a string must be "N%" (1 to 100).
	Percent bool
	Default any
	// Fallback is what a wrong value is replaced with when it is stricter
	// than the default (approval, sandbox: never looser than the user's
	// choice could have been); nil = the default. Why is the reason.
	Fallback any
	Why      string
	// Keep says how a wrong list keeps what it can: "strings" (its
	// strings, none = an empty list), "strings_or_default" (its strings,
	// none = the default), "default_and_strings" (the default and its
	// strings). "" = Fallback or Default.
	Keep  string
	Doc   string
	Scope Scope
	// LuaOnly: the host never reads it (keys, windows, the host's command).
	LuaOnly bool
	// FM is the option's path in a frontmatter when it is not Path
	// (tools.web_search takes a boolean there).
	FM string
}

func fptr(f float64) *float64 { return &f }

var zero = fptr(0)

func boolean(path string, def bool, doc string) Option {
	return Option{Path: path, Types: []string{"boolean"}, Default: def, Doc: doc}
}

func whole(path string, def float64, doc string) Option {
	return Option{Path: path, Types: []string{"number"}, Whole: true, Min: zero, Default: def, Doc: doc}
}

func number(path string, def float64, doc string) Option {
	return Option{Path: path, Types: []string{"number"}, Min: zero, Default: def, Doc: doc}
}

func str(path, def, doc string) Option {
	return Option{Path: path, Types: []string{"string"}, Default: def, Doc: doc}
}

func enum(path, def string, values []string, doc string) Option {
	return Option{Path: path, Types: []string{"string"}, Enum: values, Default: def, Doc: doc}
}

func list(path string, def []string, doc string) Option {
	return Option{Path: path, Types: []string{"table"}, List: true, Default: def, Doc: doc}
}

func open(path string, def map[string]any, doc string) Option {
	if def == nil {
		def = map[string]any{}
	}
	return Option{Path: path, Types: []string{"table"}, Open: true, Default: def, Doc: doc}
}

func key(path, def, doc string) Option {
	return Option{Path: path, Types: []string{"string", "boolean"}, Default: def, Doc: doc, LuaOnly: true}
}

func (o Option) scope(s Scope) Option              { o.Scope = s; return o }
func (o Option) luaOnly() Option                   { o.LuaOnly = true; return o }
func (o Option) fm(path string) Option             { o.FM = path; return o }
func (o Option) types(t ...string) Option          { o.Types = t; return o }
func (o Option) stricter(v any, why string) Option { o.Fallback, o.Why = v, why; return o }
func (o Option) keep(how, why string) Option       { o.Keep, o.Why = how, why; return o }

// Shorthands are tables a boolean may stand for: tools.autopilot = false
// is { enabled = false }.
var Shorthands = map[string]string{"tools.autopilot": "enabled"}

// DefaultDenyRead, DefaultEnvDeny and DefaultWritable are the sandbox's
// lists (tools/sandbox has the same; cycle's TestSchemaMatchesSandbox
// holds them equal).
var (
	DefaultWritable = []string{"urn:flemma:cwd", "urn:flemma:buffer:path", "${TMPDIR:-/tmp}"}
	DefaultDenyRead = []string{
		// keys and certificates, anywhere
		"**/.ssh/**", "**/.gnupg/**",
		"**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
		"**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/*.jks", "**/*.keystore",
		"!**/cacert.pem",
		// environment files, anywhere
		"**/.env", "**/.env.*", "**/.envrc",
		"!**/.env.example", "!**/.env.sample", "!**/.env.template", "!**/.env.dist", "!**/.env.defaults",
		// credential stores in the home directory
		"~/.aws/**", "~/.azure/**", "~/.config/gcloud/**", "~/.kube/**", "~/.docker/**",
		"~/.config/gh/**", "~/.config/hub", "~/.config/glab-cli/**", "~/.config/git/credentials",
		"~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.yarnrc.yml", "~/.pypirc", "~/.pgpass", "~/.my.cnf",
		"~/.cargo/credentials*", "~/.gem/credentials", "~/.vault-token", "~/.terraform.d/credentials*",
		"~/.password-store/**", "~/.local/share/keyrings/**", "~/.config/op/**", "~/.config/rclone/**",
		"~/.config/github-copilot/**", "~/.claude/.credentials.json", "~/.codex/auth.json",
		// shell histories
		"~/.*_history", "~/.local/share/fish/fish_history",
	}
	DefaultEnvDeny = []string{
		"*SECRET*", "*TOKEN*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*", "*_CREDS",
		"*API_KEY*", "*APIKEY*", "*PRIVATE_KEY*", "*_KEY", "*_KEY_*", "*_PAT", "*_PASS", "*_PWD",
		"*_AUTH", "*_COOKIE", "*_SALT", "*WEBHOOK*", "*_DSN",
		"*DATABASE_URL*", "*_DB_URL", "*_DB_URI", "*CONNECTION_STRING*", "*_CONN_STR*",
		"*MONGO*_URI*", "*MONGO*_URL*", "*REDIS*_URL*", "*POSTGRES*_URL*", "*MYSQL*_URL*", "*AMQP*_URL*", "*RABBITMQ*_URL*",
		"NPM_CONFIG__AUTH*", "NPM_CONFIG_//*", "SSH_AUTH_SOCK", "BW_SESSION", "OP_SESSION_*", "KRB5CCNAME",
		"AWS_*", "ANTHROPIC_*", "OPENAI_*",
	}
)

// Schema is every option, in the order lua/flemma/schema.lua and the help
// list them.
var Schema = []Option{
	str("provider", "anthropic", "the provider; :Flemma switch changes it at runtime").scope(Free),
	str("model", "", "the provider's default model when nil").types("string", "nil").scope(Free).def(nil),
	whole("parameters.max_tokens", 0, "output limit of a response").types("number", "nil").scope(Free).def(nil),
	number("parameters.temperature", 0, "not sent when nil").types("number", "nil").scope(Free).def(nil),
	Option{Path: "parameters.thinking", Types: []string{"string", "number", "boolean", "nil"},
		Doc: `"off", "minimal", "low", "medium", "high", "max", or a token budget`, Scope: Free},
	enum("parameters.cache_retention", "", []string{"short", "long", "none"}, `"short" (the default), "long", "none"`).types("string", "nil").scope(Free).def(nil),
	open("parameters.anthropic", nil, "the provider's own parameters").scope(Free),
	open("parameters.openai", nil, "the provider's own parameters (e.g. reasoning_summary)").scope(Free),
	open("parameters.vertex", nil, "the provider's own parameters (Vertex and Gemini)").scope(Free),
	open("models", nil, `what flemma takes a model for, over its built-in catalogue, by model id or prefix: ["my-model"] = { max_output_tokens, context_window, thinking = "adaptive" | "budget" | "effort" | "none", input_price, output_price, cache_read_price, cache_write_price }`),
	open("presets", nil, `named choices for :Flemma switch $name: ["name"] = { provider, model, parameters = { max_tokens, temperature, thinking, cache_retention } } or "<provider> [model] [key=value…]"`).luaOnly(),
	open("providers", map[string]any{"anthropic": map[string]any{}, "openai": map[string]any{}, "vertex": map[string]any{},
		"gemini": map[string]any{}, "copilot": map[string]any{}, "replay": map[string]any{}},
		"endpoints and credentials per provider; any other name is a named provider (wire, base_url, model, api_key_env, api_key_cmd, …)"),
	open("mcp_servers", nil, "MCP servers whose tools the model may call (mcp__<server>__<tool>): { command, args, env } or { url, headers }; setup only"),

	whole("send.retries", 4, "a request failing before any answer is sent again up to this many times (0: never)").anySign(),
	number("send.retry_delay", 2, "seconds before the first retry, doubling").anySign(),
	number("send.retry_max_delay", 60, "the longest wait; a longer retry-after is not waited for").anySign(),
	number("send.timeouts.first_byte", 120, "seconds from sending to the first byte of the answer (0: no limit)").anySign(),
	number("send.timeouts.idle", 120, "seconds of silence within a streaming answer (0: no limit)").anySign(),
	number("send.timeouts.total", 600, "seconds for one whole request (0: no limit)").anySign(),
	number("send.compact_threshold", 0.8, "share of the context window at which a send offers :Flemma compact (0: never)"),
	number("send.budget.template_ms", 1000, "milliseconds for all the templates ({{ }}, {% %}, include()) of one send"),
	whole("send.budget.template_bytes", 1048576, "bytes they may write together (1 MiB)"),
	whole("send.budget.references", 100, "@./file references in one send"),
	whole("send.budget.attachment_bytes", 33554432, "bytes of the files one send attaches (32 MiB)"),

	Option{Path: "host.cmd", Types: []string{"string", "table", "nil"}, List: true, LuaOnly: true,
		Doc: "the host binary (default: <plugin>/bin/flemma-host, then flemma-host on $PATH)"},
	Option{Path: "host.log_file", Types: []string{"string", "nil"}, LuaOnly: true,
		Doc: `default: stdpath("state")/flemma/host.log (stdpath("data") on Neovim 0.7)`},
	number("host.timeout", 10, "seconds an answer of the host may take before flemma says it may be hung").luaOnly(),

	enum("tools.mode", "enabled", []string{"enabled", "parse_only", "disabled"}, `"enabled" | "parse_only" | "disabled"`).
		stricter("parse_only", "a wrong mode runs no tool: parse_only shows calls and never runs them"),
	boolean("tools.require_approval", true, "calls no policy approves ask"),
	Option{Path: "tools.auto_approve", Types: []string{"table", "function", "string"}, List: true, Default: []string{"$default"},
		Doc: `list | function(tool_name, input, ctx) | "module.path"`, Scope: Narrow}.
		keep("strings", "a wrong auto_approve approves no more than the names it spells (the rest are dropped)"),
	boolean("tools.auto_approve_sandboxed", true, "bash runs without asking when a working sandbox confines it").
		stricter(false, "a wrong value asks before every bash command"),
	boolean("tools.auto_approve_file_calls", false, "let policies approve calls that were already in a file when it was opened"),
	open("tools.presets", nil, `["$name"] = { approve = {...}, deny = {...} }`).
		stricter(map[string]any{}, "wrong presets are none (names that use them approve nothing)"),
	boolean("tools.autopilot.enabled", true, "after a response with tool calls, run what is approved and send on").scope(Narrow).
		stricter(false, "a wrong value leaves autopilot off"),
	whole("tools.autopilot.max_turns", 100, "consecutive autopilot sends").scope(Narrow),
	whole("tools.max_concurrent", 2, "calls running at once (0: unlimited)").scope(Narrow),
	whole("tools.max_calls_per_response", 32, "the calls of one response that run; the later ones get an error result saying so (0: no limit)"),
	number("tools.default_timeout", 30, `seconds: the "default" class of tools.timeouts (timeouts.default wins when set)`),
	open("tools.timeouts", map[string]any{"bash": 300.0}, `time limits by class, in seconds: a tool's name, a tag or "default"; bash's is also the cap of the timeout the model asks for`),
	enum("tools.cursor_after_result", "result", []string{"result", "stay", "next"}, `"result" | "stay" | "next"`),
	list("tools.modules", []string{}, "Lua modules that register tools, loaded on first use").luaOnly(),
	whole("tools.truncate.max_lines", 2000, "tool output lines kept in the buffer"),
	whole("tools.truncate.max_bytes", 51200, "tool output bytes kept in the buffer"),
	str("tools.bash.shell", "bash", "the shell bash runs commands with"),
	open("tools.bash.env", nil, "variables added to commands, as set"),
	boolean("tools.fetch.enabled", false, "offer the fetch tool (an HTTP GET from the host, the page as Markdown)"),
	boolean("tools.fetch.allow_private", false, "let it reach loopback, private and link-local addresses"),
	whole("tools.fetch.max_bytes", 2097152, "bytes of a page read"),
	number("tools.fetch.timeout", 30, "seconds for the whole request"),
	whole("tools.fetch.max_redirects", 5, "redirects followed (same host only)"),
	boolean("tools.web_search.enabled", false, "the provider's own web search; a buffer may turn it off, only a trusted one on").scope(Narrow).fm("tools.web_search"),
	whole("tools.web_search.max_uses", 5, "searches per answer"),
	boolean("tools.web_fetch.enabled", false, "Anthropic's web_fetch; a buffer may turn it off, only a trusted one on").scope(Narrow).fm("tools.web_fetch"),
	whole("tools.web_fetch.max_uses", 5, "fetches per answer"),
	number("tools.editor.timeout", 10, "seconds an lsp or diagnostics question may take"),
	whole("tools.editor.max_results", 100, "locations, symbols or diagnostics per answer"),
	boolean("tools.editor.diagnostics_after_edit", true, "write and edit results carry the language servers' errors for the new text"),
	number("tools.editor.diagnostics_wait", 3, "seconds to wait for them"),

	boolean("sandbox.enabled", true, "confine bash (a frontmatter may turn it on, never off)").scope(Narrow),
	enum("sandbox.backend", "auto", []string{"auto", "bwrap", "none"}, `"auto" | "bwrap" | "none"`),
	list("sandbox.writable", DefaultWritable, `roots write/edit (and bash under bubblewrap) may change; "/" and $HOME are never roots`).
		keep("strings_or_default", "a wrong list keeps its strings; with none, the default roots"),
	list("sandbox.readable", []string{}, `roots besides the writable ones where read, grep, find and ls run by policy; a read elsewhere asks ({ "/" }: everywhere)`).
		stricter([]string{}, "a wrong list adds no readable root (reads outside the project ask)"),
	list("sandbox.deny_read", DefaultDenyRead, `never read by any tool, hidden from bash; "!glob" keeps a base name readable`).
		keep("default_and_strings", "never fewer paths hidden than the default"),
	boolean("sandbox.network", false, "bash gets no network unless true"),
	boolean("sandbox.unix_sockets", false, "true lets bash create unix sockets"),
	whole("sandbox.limits.processes", 1024, "processes of one command at once (0: no limit)"),
	Option{Path: "sandbox.limits.memory", Types: []string{"number", "string"}, Whole: true, Min: zero, Percent: true, Default: "50%",
		Doc: `MiB, or "N%" of the machine's memory: each process, and the tree together`},
	whole("sandbox.limits.file_size", 4096, "MiB, the largest file a command writes"),
	whole("sandbox.limits.open_files", 8192, "files open in one process"),
	whole("sandbox.limits.cpu", 600, "seconds of processor time per process"),
	list("sandbox.env_deny", DefaultEnvDeny, "variables never passed to commands, and redacted from output").
		keep("default_and_strings", "never more variables passed than by default"),

	key("keymaps.send", "<C-]>", "run the next phase of the cycle"),
	key("keymaps.tool_execute", "<M-CR>", "execute or resolve the tool block under the cursor"),
	key("keymaps.cancel", "<C-c>", "cancel what runs"),
	key("keymaps.tool_diff", "<CR>", "on a pending write/edit: its diff in a new tab"),
	Option{Path: "keymaps.tool_allow_always", Types: []string{"string", "boolean"}, Default: false, LuaOnly: true,
		Doc: "on a pending call: approve it and always allow its tool (bash: its command rule) in this chat (unmapped by default)"},
	Option{Path: "keymaps.tool_approve_all", Types: []string{"string", "boolean"}, Default: false, LuaOnly: true,
		Doc: ":Flemma tool:approve-all: every call of the message under the cursor (unmapped by default)"},
	Option{Path: "keymaps.tool_reject_all", Types: []string{"string", "boolean"}, Default: false, LuaOnly: true,
		Doc: ":Flemma tool:reject-all: every call of the message under the cursor (unmapped by default)"},
	key("keymaps.next_message", "]m", "motion: the next message"),
	key("keymaps.prev_message", "[m", "motion: the previous message"),
	key("keymaps.next_tool", "]t", "motion: the next Tool Use or Tool Result block"),
	key("keymaps.prev_tool", "[t", "motion: the previous tool block"),
	key("keymaps.message_inner", "im", "text object: a message's text"),
	key("keymaps.message_around", "am", "text object: a message with its role line"),
	key("keymaps.tool_inner", "iT", "text object: a tool block's fence"),
	key("keymaps.tool_around", "aT", "text object: a whole tool block"),
	str("highlights.tool_preview", "Comment", `a highlight group to link to, a "#rrggbb" colour, or a table for nvim_set_hl`).types("string", "table").luaOnly(),
	str("chat.template", "@You:\n", `what a new, empty chat buffer starts with ("": nothing)`).types("string", "boolean").luaOnly(),
	enum("chat.markdown", "auto", []string{"auto", "treesitter", "syntax", "none"}, `"auto" | "treesitter" | "syntax" | "none"`).luaOnly(),
	boolean("chat.conceal_fences", false, "hide the backticks of code fences").luaOnly(),
	boolean("chat.rulers", true, "a line after each role line").luaOnly(),
	boolean("chat.role_backgrounds", false, "role lines drawn with a background (FlemmaRoleLine*)").luaOnly(),
	boolean("editing.auto_write", false, "after a response, write the chat to its file (as :write, no prompt)").luaOnly(),
	boolean("fold.enabled", true, "'foldmethod' expr in chat windows").luaOnly(),
	boolean("fold.thinking", true, "thinking blocks start folded").luaOnly(),
	whole("fold.result_lines", 10, "tool results longer than this start folded (0: none)").luaOnly(),
	whole("fold.input_chars", 500, "tool inputs longer than this many characters start folded (0: none)").luaOnly(),
}

func (o Option) def(v any) Option { o.Default = v; return o }

// Entries are the keys of one entry of an open table whose entries have a
// shape of their own (providers.<name>, models[<id>], mcp_servers.<name>):
// Path is the key within the entry. flemma.config checks them (with the
// few rules a type cannot say: an argv is a list of strings, a server has
// a command or a url); the host decodes them key by key.
var Entries = map[string][]Option{
	"providers": {
		enum("wire", "", []string{"chat_completions", "openai", "responses", "anthropic", "vertex", "gemini"}, "the API a named provider speaks").def(nil),
		str("base_url", "", "the endpoint, ending with the version (…/v1)").def(nil),
		str("model", "", "the model when none is chosen").def(nil),
		Option{Path: "api_key_env", Types: []string{"string", "table", "boolean"}, Doc: "the variable holding the key: a name, a list, or false for none"},
		Option{Path: "api_key_cmd", Types: []string{"table"}, List: true, Doc: "a command printing the key, as an argv list (no shell)"},
		number("api_key_cache", 0, "seconds a command's key is kept").def(nil).anySign(),
		number("api_key_timeout", 0, "seconds the command may take").def(nil).anySign(),
		str("api_key_header", "", "send the key in this header as is").def(nil),
		open("headers", nil, "extra request headers").def(nil),
		open("extra_body", nil, "fields merged into the JSON body").def(nil),
		enum("reasoning", "", []string{"reasoning_content", "none"}, "how a Chat Completions server gets its reasoning back").def(nil),
		str("project", "", "Vertex: the project").def(nil),
		str("location", "", "Vertex: the location").def(nil),
		str("file", "", "replay: the script").def(nil),
		str("github_url", "", "copilot: GitHub Enterprise's sign-in").def(nil),
		str("github_api_url", "", "copilot: GitHub Enterprise's API").def(nil),
	},
	"models": {
		whole("max_output_tokens", 0, "the most max_tokens the model takes").def(nil),
		whole("context_window", 0, "input and output, tokens").def(nil),
		enum("thinking", "", []string{"adaptive", "budget", "effort", "none"}, "the form of thinking it takes").def(nil),
		number("input_price", 0, "USD per million input tokens").def(nil),
		number("output_price", 0, "USD per million output tokens").def(nil),
		number("cache_read_price", 0, "USD per million cache-read tokens").def(nil),
		number("cache_write_price", 0, "USD per million cache-write tokens").def(nil),
	},
	"mcp_servers": {
		str("command", "", "a program spoken to over stdio").def(nil),
		Option{Path: "args", Types: []string{"table"}, List: true, Doc: "its arguments (argv, no shell)"},
		open("env", nil, "variables added to its environment").def(nil),
		str("url", "", "a streamable HTTP server").def(nil),
		open("headers", nil, "headers sent with every request").def(nil),
	},
}

// anySign: a negative number is taken (as 0: no retries, no limit).
func (o Option) anySign() Option { o.Min = nil; return o }

// byPath indexes Schema.
var byPath = func() map[string]*Option {
	m := make(map[string]*Option, len(Schema))
	for i := range Schema {
		m[Schema[i].Path] = &Schema[i]
	}
	return m
}()

// Lookup returns the option at path.
func Lookup(path string) (Option, bool) {
	o, ok := byPath[path]
	if !ok {
		return Option{}, false
	}
	return *o, true
}

// Default is the default of the option at path (it panics for a path not
// in the schema: a typo in the host's own code).
func Default(path string) any {
	o, ok := byPath[path]
	if !ok {
		panic("options: no option " + path)
	}
	return o.Default
}

// DefaultNumber is Default as a float64.
func DefaultNumber(path string) float64 { return Default(path).(float64) }

// Want says what the option takes, for a message.
func (o Option) Want() string {
	var parts []string
	for _, t := range o.Types {
		switch {
		case t == "nil":
		case t == "number" && o.Whole && o.Min != nil && *o.Min == 0:
			parts = append(parts, "a whole number (0 or more)")
		case t == "number" && o.Whole:
			parts = append(parts, "a whole number")
		case t == "number" && o.Min != nil && *o.Min == 0:
			parts = append(parts, "a number (0 or more)")
		case t == "number":
			parts = append(parts, "a number")
		case t == "string" && len(o.Enum) > 0:
			q := make([]string, len(o.Enum))
			for i, e := range o.Enum {
				q[i] = strconv.Quote(e)
			}
			parts = append(parts, "one of "+strings.Join(q, ", "))
		case t == "string" && o.Percent:
			parts = append(parts, `a string "N%" (1 to 100)`)
		case t == "string":
			parts = append(parts, "a string")
		case t == "table" && o.List:
			parts = append(parts, "a list of strings")
		case t == "table":
			parts = append(parts, "a table")
		case t == "boolean":
			parts = append(parts, "a boolean")
		case t == "function":
			parts = append(parts, "a function")
		}
	}
	return strings.Join(parts, " or ")
}

// Problem is one wrong value of a setup: the option, what it takes, the
// value given, and what is used instead.
type Problem struct {
	Path, Want, Got, Used string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: expected %s, got %s (%s)", p.Path, p.Want, p.Got, p.Used)
}

// Check reports whether v (a value decoded from JSON: bool, float64,
// string, []any, map[string]any; nil is unset) is one the option takes.
func (o Option) Check(v any) bool {
	for _, t := range o.Types {
		if o.checkType(t, v) {
			return true
		}
	}
	return false
}

func (o Option) checkType(t string, v any) bool {
	switch t {
	case "nil":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		f, ok := toFloat(v)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		if o.Whole && f != math.Trunc(f) {
			return false
		}
		return o.Min == nil || f >= *o.Min
	case "string":
		s, ok := v.(string)
		if !ok {
			return false
		}
		if len(o.Enum) > 0 {
			for _, e := range o.Enum {
				if s == e {
					return true
				}
			}
			return false
		}
		if o.Percent {
			n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
			return strings.HasSuffix(s, "%") && err == nil && n >= 1 && n <= 100
		}
		return true
	case "function":
		m, ok := v.(map[string]any)
		return ok && m["__lua_function"] == true
	case "table":
		switch x := v.(type) {
		case []any:
			if !o.List {
				return !o.Open && len(x) == 0
			}
			for _, e := range x {
				if _, ok := e.(string); !ok {
					return false
				}
			}
			return true
		case map[string]any:
			return !o.List && x["__lua_function"] != true
		}
	}
	return false
}

// fallbackFor is what replaces a wrong value v, and how the message says
// it: the default, or the stricter choice of the option's Fallback.
// Lists keep the strings of a wrong list where that is stricter.
func (o Option) fallbackFor(v any) (any, string) {
	strs := func() []string {
		var out []string
		if l, ok := v.([]any); ok {
			for _, e := range l {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	switch o.Keep {
	case "strings":
		kept := strs()
		if kept == nil {
			kept = []string{}
		}
		return kept, fmt.Sprintf("%s is used: %s", luaLiteral(kept), o.Why)
	case "strings_or_default":
		if kept := strs(); len(kept) > 0 {
			return kept, fmt.Sprintf("%s is used: %s", luaLiteral(kept), o.Why)
		}
		return o.Default, "the default is used: " + o.Why
	case "default_and_strings":
		kept := append([]string{}, o.Default.([]string)...)
		seen := map[string]bool{}
		for _, s := range kept {
			seen[s] = true
		}
		for _, s := range strs() {
			if !seen[s] {
				kept = append(kept, s)
			}
		}
		return kept, "the default list and the strings given are used: " + o.Why
	}
	if o.Fallback != nil {
		return o.Fallback, fmt.Sprintf("%s is used: %s", luaLiteral(o.Fallback), o.Why)
	}
	if o.Default == nil {
		return nil, "it is left unset"
	}
	return o.Default, fmt.Sprintf("the default %s is used", luaLiteral(o.Default))
}

// luaLiteral writes v as Lua (a string quoted, a list in braces).
func luaLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return luaString(x)
	case []string:
		if len(x) == 0 {
			return "{}"
		}
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = luaString(s)
		}
		return "{ " + strings.Join(q, ", ") + " }"
	case []any:
		if len(x) == 0 {
			return "{}"
		}
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = luaLiteral(s)
		}
		return "{ " + strings.Join(q, ", ") + " }"
	case map[string]any:
		if len(x) == 0 {
			return "{}"
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		q := make([]string, len(keys))
		for i, k := range keys {
			q[i] = luaKey(k) + " = " + luaLiteral(x[k])
		}
		return "{ " + strings.Join(q, ", ") + " }"
	}
	return fmt.Sprint(v)
}

// luaString quotes s for Lua (and for the help: "@You:\n").
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, "\\%03d", r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func luaKey(k string) string {
	ident := k != ""
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			ident = false
		}
	}
	if ident {
		return k
	}
	return "[" + luaString(k) + "]"
}

// gotString shows a given value in a message.
func gotString(v any) string {
	switch v.(type) {
	case []any, map[string]any:
		s := luaLiteral(v)
		if len(s) > 60 {
			s = s[:57] + "…"
		}
		return s
	}
	return luaLiteral(v)
}

// toFloat is a number decoded from JSON (float64) or msgpack (integers).
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case uint64:
		return float64(x), true
	case int8, int16, int32, uint8, uint16, uint32:
		f, err := strconv.ParseFloat(fmt.Sprint(x), 64)
		return f, err == nil
	}
	return 0, false
}
