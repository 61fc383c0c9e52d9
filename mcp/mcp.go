// Package mcp runs the MCP servers of setup's mcp_servers and exposes each
// tool they list as a tools.Tool named mcp__<server>__<tool>, so that it
// goes through the same registry, approval chain, previews, truncation and
// redaction as every other tool.
//
// Servers start lazily (Ensure: on the first request that needs the tool
// list), a crashed server is restarted a bounded number of times with a
// backoff, and a call to a server that is not running gets an error result
// at once. Only setup configures servers: nothing in a buffer reaches
// Configure. A stdio server's process is started by the host in its own
// process group, with a scrubbed environment and the server's env on top,
// and is killed with the host (Close, and on Linux the parent-death signal).
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerConfig is one entry of setup's mcp_servers: a command (stdio) or a
// URL (streamable HTTP).
type ServerConfig struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// Validate reports a server entry that cannot be started.
func (c ServerConfig) Validate() error {
	switch {
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("set either command (stdio) or url (streamable HTTP), not both")
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("needs command (stdio) or url (streamable HTTP)")
	case c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
		return fmt.Errorf("url %q must start with http:// or https://", c.URL)
	case c.URL != "" && (len(c.Args) > 0 || len(c.Env) > 0):
		return fmt.Errorf("args and env are for a command; a url server takes headers")
	case c.Command != "" && len(c.Headers) > 0:
		return fmt.Errorf("headers are for a url server; a command takes args and env")
	}
	return nil
}

// serverNameRE: no "__" and no _ at the ends, which the wire name
// (mcp__<server>__<tool>) could not carry.
var serverNameRE = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)

// Status of a server.
const (
	StatusIdle     = "not started" // configured, no request needed it yet
	StatusStarting = "starting"
	StatusReady    = "ready"
	StatusFailed   = "failed"
)

// Tuning (variables for the tests).
var (
	// StartTimeout bounds one start: the process or connection, the
	// initialize handshake and the tool list.
	StartTimeout = 15 * time.Second
	// MaxRestarts is how often a server that crashed is started again
	// before it stays failed (until the next setup()).
	MaxRestarts = 5
	// Backoff is the wait before the n-th restart (1-based).
	Backoff = func(n int) time.Duration {
		return min(250*time.Millisecond<<(n-1), 8*time.Second)
	}
)

// Manager owns the clients of every configured server and their tools in
// the registry. It is safe for concurrent use.
type Manager struct {
	reg  *tools.Registry
	logf func(string, ...any)

	// Connect makes the transport of a server (nil: the real ones; the
	// tests connect in-memory servers).
	Connect func(name string, cfg ServerConfig) (sdk.Transport, error)

	mu      sync.Mutex
	servers map[string]*server
	envDeny []string
	closed  bool
}

// New returns a manager that registers its tools in reg.
func New(reg *tools.Registry, logf func(string, ...any)) *Manager {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Manager{reg: reg, logf: logf, servers: map[string]*server{}}
}

type server struct {
	name string
	cfg  ServerConfig

	// with Manager.mu held:
	status   string
	reason   string // why it failed
	restarts int    // restarts after a crash so far
	session  *sdk.ClientSession
	proc     *process      // the stdio server's process
	tools    []string      // registered names
	starting chan struct{} // closed when the start in progress ends
	stopped  bool          // removed or closed: never start again
}

// Configure replaces the set of servers (setup() was called): servers that
// left or changed are stopped and their tools removed; new ones wait for
// Ensure. envDeny is the sandbox's env_deny list (nil: the default).
func (m *Manager) Configure(cfgs map[string]ServerConfig, envDeny []string) error {
	var errs []string
	m.mu.Lock()
	m.envDeny = envDeny
	var stop []*server
	for name, s := range m.servers {
		if c, ok := cfgs[name]; !ok || !sameConfig(c, s.cfg) {
			stop = append(stop, s)
			delete(m.servers, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfgs)) {
		c := cfgs[name]
		if !serverNameRE.MatchString(name) {
			errs = append(errs, fmt.Sprintf("mcp_servers.%s: a server name is lower-case letters and digits, words joined by one _", name))
			continue
		}
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Sprintf("mcp_servers.%s: %v", name, err))
			continue
		}
		if _, ok := m.servers[name]; !ok {
			m.servers[name] = &server{name: name, cfg: c, status: StatusIdle}
		}
	}
	m.mu.Unlock()
	for _, s := range stop {
		m.stop(s)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func sameConfig(a, b ServerConfig) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Ensure starts every server that has not been started and waits until
// each start ended (ready or failed) or ctx is done. A server that failed
// is not started again here: crashes restart on their own (bounded).
func (m *Manager) Ensure(ctx context.Context) {
	m.mu.Lock()
	var wait []chan struct{}
	for _, s := range m.servers {
		if s.status == StatusIdle && !m.closed {
			m.startLocked(s, 0)
		}
		if s.starting != nil {
			wait = append(wait, s.starting)
		}
	}
	m.mu.Unlock()
	for _, ch := range wait {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// startLocked begins a start of s after delay, in the background.
func (m *Manager) startLocked(s *server, delay time.Duration) {
	s.status = StatusStarting
	done := make(chan struct{})
	s.starting = done
	go func() {
		defer close(done)
		if delay > 0 {
			time.Sleep(delay)
		}
		m.mu.Lock()
		if s.stopped {
			m.mu.Unlock()
			return
		}
		envDeny := m.envDeny
		m.mu.Unlock()
		sess, proc, list, err := m.connect(s, envDeny)
		// The server's schemas are compiled here, outside the lock: one
		// that is refused or slow holds up nothing else.
		specs := toolSpecs(s.name, list, m.logf)
		m.mu.Lock()
		defer m.mu.Unlock()
		if s.starting == done {
			s.starting = nil
		}
		if s.stopped {
			if sess != nil {
				go closeSession(sess, proc)
			}
			return
		}
		if err != nil {
			s.status, s.reason = StatusFailed, err.Error()
			m.logf("mcp server %s failed to start: %v", s.name, err)
			// Only a server that ran and crashed is started again: one
			// that never came up (a wrong command, a refused token)
			// stays failed with its reason until the next setup().
			if s.restarts > 0 {
				m.scheduleRestartLocked(s)
			}
			return
		}
		s.session, s.proc, s.status, s.reason = sess, proc, StatusReady, ""
		m.registerLocked(s, specs)
		m.logf("mcp server %s ready: %d tools", s.name, len(s.tools))
		go m.watch(s, sess, proc)
	}()
}

// scheduleRestartLocked restarts a failed server after the backoff, unless
// it already restarted MaxRestarts times.
func (m *Manager) scheduleRestartLocked(s *server) {
	if m.closed || s.stopped || s.restarts >= MaxRestarts {
		if s.restarts >= MaxRestarts {
			s.reason += fmt.Sprintf(" (gave up after %d restarts)", s.restarts)
		}
		return
	}
	s.restarts++
	m.startLocked(s, Backoff(s.restarts))
	// Keep showing why it is being restarted.
	s.status = StatusStarting
}

// watch waits for the session to end; an end that nobody asked for is a
// crash: the tools stay registered (a call gets a clear error) and the
// server is restarted.
func (m *Manager) watch(s *server, sess *sdk.ClientSession, proc *process) {
	err := sess.Wait()
	reason := "connection closed"
	if proc != nil {
		reason = proc.exitReason()
	} else if err != nil {
		reason = err.Error()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.stopped || s.session != sess {
		return
	}
	s.session, s.proc = nil, nil
	s.status, s.reason = StatusFailed, "crashed: "+reason
	m.logf("mcp server %s ended: %s", s.name, reason)
	m.scheduleRestartLocked(s)
}

// connect starts one session and lists its tools.
func (m *Manager) connect(s *server, envDeny []string) (*sdk.ClientSession, *process, []*sdk.Tool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	var (
		t    sdk.Transport
		proc *process
		err  error
	)
	switch {
	case m.Connect != nil:
		t, err = m.Connect(s.name, s.cfg)
	case s.cfg.Command != "":
		deny := envDeny
		if deny == nil {
			deny = sandbox.DefaultEnvDeny
		}
		// The allow-list environment of commands (issue 24 #5), plus
		// what setup's env sets.
		env := sandbox.AllowEnv(os.Environ(), sandbox.DefaultEnvAllow, deny)
		for _, k := range slices.Sorted(maps.Keys(s.cfg.Env)) {
			env = append(env, k+"="+s.cfg.Env[k])
		}
		proc = newProcess(s.cfg.Command, s.cfg.Args, env)
		t = proc
	default:
		t = httpTransport(s.cfg)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "flemma", Version: "1"}, nil)
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		if proc != nil && proc.cmd.Process != nil {
			proc.kill()
			return nil, nil, nil, fmt.Errorf("%v (%s)", err, proc.exitReason())
		}
		return nil, nil, nil, err
	}
	var list []*sdk.Tool
	for tool, err := range sess.Tools(ctx, nil) {
		if err != nil {
			closeSession(sess, proc)
			return nil, nil, nil, fmt.Errorf("listing tools: %v", err)
		}
		list = append(list, tool)
	}
	return sess, proc, list, nil
}

func closeSession(sess *sdk.ClientSession, proc *process) {
	if proc != nil {
		proc.kill() // closing stdin and waiting 5 s is for polite servers
	}
	_ = sess.Close()
}

// ToolName is the registry name of a server's tool: mcp:<server>:<tool>,
// which the providers send the model as mcp__<server>__<tool> (a tool
// name's ':' travels as "__" and is decoded back). The tool's own name is
// lower-cased, every character but a-z and 0-9 becomes _, and runs of _
// become one (a "__" would decode as ':'). "" when nothing is left.
func ToolName(server, tool string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(tool) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	name := strings.TrimSuffix(b.String(), "_")
	if name == "" {
		return ""
	}
	return "mcp:" + server + ":" + name
}

// toolSpec is a server's tool, ready to register.
type toolSpec struct {
	remote string // its name on the server
	spec   tools.Spec
}

// toolSpecs turns a server's tool list into specs, leaving out (with a log
// line) a tool whose name is not valid or whose schemas flemma refuses
// (tools.CheckSchemas: not self-contained, too large or deep, too slow to
// compile). It takes no lock.
func toolSpecs(server string, list []*sdk.Tool, logf func(string, ...any)) []toolSpec {
	var out []toolSpec
	seen := map[string]bool{}
	for _, t := range list {
		name := ToolName(server, t.Name)
		if name == "" || !tools.ValidName(name) {
			logf("mcp server %s: tool %q skipped: %q is not a valid tool name (at most 64 characters)", server, t.Name, name)
			continue
		}
		if seen[name] {
			logf("mcp server %s: tool %q skipped: another tool already maps to %s", server, t.Name, name)
			continue
		}
		spec := tools.Spec{
			Name:         name,
			Description:  t.Description,
			InputSchema:  schemaMap(t.InputSchema),
			OutputSchema: schemaMap(t.OutputSchema),
			Enabled:      true,
			Source:       "mcp " + server,
			Tags:         []string{"mcp", server},
		}
		if spec.Description == "" {
			spec.Description = fmt.Sprintf("%s (MCP server %s)", t.Name, server)
		}
		if spec.InputSchema == nil {
			spec.InputSchema = map[string]any{"type": "object"}
		}
		if err := tools.CheckSchemas(spec); err != nil {
			logf("mcp server %s: tool %q skipped: %v", server, t.Name, err)
			continue
		}
		if ro := t.Annotations; ro == nil || !ro.ReadOnlyHint {
			// An MCP tool may do anything: a call already in the file is
			// never auto-approved.
			spec.Capabilities = []string{tools.CapSideEffects}
		}
		seen[name] = true
		out = append(out, toolSpec{remote: t.Name, spec: spec})
	}
	return out
}

// registerLocked replaces the server's tools in the registry with specs.
func (m *Manager) registerLocked(s *server, specs []toolSpec) {
	for _, n := range s.tools {
		m.reg.Remove(n)
	}
	s.tools = nil
	for _, ts := range specs {
		tool := &Tool{m: m, server: s, remote: ts.remote, spec: ts.spec}
		if err := m.reg.Add(tool); err != nil {
			m.logf("mcp server %s: tool %q skipped: %v", s.name, ts.remote, err)
			continue
		}
		s.tools = append(s.tools, ts.spec.Name)
	}
}

func schemaMap(v any) map[string]any {
	if v == nil {
		return nil
	}
	if mm, ok := v.(map[string]any); ok {
		return mm
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// stop ends a server for good and removes its tools.
func (m *Manager) stop(s *server) {
	m.mu.Lock()
	s.stopped = true
	sess, proc := s.session, s.proc
	s.session, s.proc = nil, nil
	for _, n := range s.tools {
		m.reg.Remove(n)
	}
	s.tools = nil
	m.mu.Unlock()
	if sess != nil {
		closeSession(sess, proc)
	}
}

// Close stops every server (the host is exiting).
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := slices.Collect(maps.Values(m.servers))
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() { defer wg.Done(); m.stop(s) }()
	}
	wg.Wait()
}

// ServerStatus is one line of :Flemma mcp.
type ServerStatus struct {
	Name      string
	Transport string // "stdio: <command>" or "http: <url>"
	Status    string
	Reason    string
	Restarts  int
	Tools     []string
}

// Status lists the servers, sorted by name.
func (m *Manager) Status() []ServerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ServerStatus
	for _, s := range m.servers {
		tr := "stdio: " + s.cfg.Command
		if s.cfg.URL != "" {
			tr = "http: " + s.cfg.URL
		}
		out = append(out, ServerStatus{Name: s.name, Transport: tr, Status: s.status, Reason: s.reason,
			Restarts: s.restarts, Tools: slices.Sorted(slices.Values(s.tools))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Tool is one tool of a server.
type Tool struct {
	m      *Manager
	server *server
	remote string // the name the server knows it by
	spec   tools.Spec
}

func (t *Tool) Spec() tools.Spec { return t.spec }

// Run calls the tool. A server that is not running gives an error at once
// (a restart in progress is waited for, within the call's timeout).
func (t *Tool) Run(ctx context.Context, _ tools.Call, input json.RawMessage) (tools.Output, error) {
	s := t.server
	t.m.mu.Lock()
	sess, starting := s.session, s.starting
	t.m.mu.Unlock()
	if sess == nil && starting != nil {
		select {
		case <-starting:
		case <-ctx.Done():
			return tools.Output{}, ctx.Err()
		}
		t.m.mu.Lock()
		sess = s.session
		t.m.mu.Unlock()
	}
	if sess == nil {
		t.m.mu.Lock()
		st, why := s.status, s.reason
		t.m.mu.Unlock()
		if why != "" {
			st += ": " + why
		}
		return tools.Output{}, fmt.Errorf("MCP server %s is not running (%s); see :Flemma mcp", s.name, st)
	}
	var args any = json.RawMessage(input)
	if len(input) == 0 {
		args = map[string]any{}
	}
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return tools.Output{}, ctx.Err()
		}
		return tools.Output{}, fmt.Errorf("MCP server %s: calling %s failed: %v", s.name, t.remote, err)
	}
	text := redactConfig(contentText(res.Content), s.cfg)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return tools.Output{}, fmt.Errorf("%s", text)
	}
	if t.spec.OutputSchema != nil && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return tools.Output{}, &tools.Internal{Err: err}
		}
		var v any
		if err := json.Unmarshal([]byte(redactConfig(string(b), s.cfg)), &v); err != nil {
			return tools.Output{Text: redactConfig(string(b), s.cfg)}, nil
		}
		return tools.Output{JSON: v}, nil
	}
	return tools.Output{Text: text}, nil
}

// redactConfig replaces the values of the server's env and headers (its
// tokens, from setup) by [redacted]: the executor redacts the host's secret
// variables, these are the server's own.
func redactConfig(text string, cfg ServerConfig) string {
	var pairs []string
	for _, m := range []map[string]string{cfg.Env, cfg.Headers} {
		for _, v := range m {
			if len(v) >= 6 {
				pairs = append(pairs, v, "[redacted]")
			}
		}
	}
	if len(pairs) == 0 {
		return text
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// contentText renders a result's content blocks as text: text as it is,
// anything else as a short description.
func contentText(cs []sdk.Content) string {
	var parts []string
	for _, c := range cs {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	return strings.Join(parts, "\n")
}
