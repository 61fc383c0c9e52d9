package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/cycle"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/preview"
)

// Exit codes of a run (flemma-host run).
const (
	ExitDone     = 0 // the conversation is done: the model answered without calls
	ExitError    = 1 // an error: the provider, the file, a write refused; the message says which
	ExitUsage    = 2 // bad flags or configuration
	ExitApproval = 3 // a call needs the user's approval (Result.Pending)
	ExitCut      = 4 // the response was cut short (output limit, filter) or interrupted
	ExitTurns    = 5 // the turn limit stopped autopilot with work left (run again to go on)
)

// Options are one run's: the file, and the user's configuration from
// flags. Everything here is the user's word; nothing in the file widens it.
type Options struct {
	Path string // the .chat file
	Cwd  string // the tools' working directory ("" = the process's)
	// Config is a setup table as JSON, the shape the plugin sends the
	// host (lua/flemma/config.lua for_host, options.Decode); "" = {}.
	Config string
	// Provider and Model override the configuration's ("" = keep).
	Provider, Model string
	// Approve, when not nil, replaces tools.auto_approve: tool names,
	// presets ($readonly, $files, $commands, …) and bash(<glob>) rules.
	Approve []string
	// MaxTurns > 0 bounds the requests of the run: 1 sends once
	// (autopilot off), N sends at most N times (tools.autopilot.max_turns
	// = N-1 after the first). 0 keeps the configuration's.
	MaxTurns int
	// Trust is the user's word that the file is theirs (--trust): its calls
	// are decided by the policy, its frontmatter may approve, and the
	// "approved" statuses in it count.
	Trust bool
	// ApproveCalls are tool-use ids the user approves (--approve-call),
	// as :Flemma tool:approve does in Neovim.
	ApproveCalls []string
	// StateDir is flemma's state folder (journal, backups); "" = the
	// configuration's paths.state, else DefaultStateDir.
	StateDir string
	// ConfigDir is Neovim's configuration folder, which a policy-approved
	// call may not write ("" = the configuration's paths.config, else
	// DefaultConfigDir).
	ConfigDir string
	Version   string
	Log       *log.Logger // the host log (nil: discarded)
	// Events receives the run's events as they happen (nil: none).
	Events func(Event)
}

// Usage is token accounting, summed over a run's responses.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
}

func (u *Usage) add(x *cycle.UsageEvent) {
	if x == nil {
		return
	}
	u.InputTokens += x.InputTokens
	u.OutputTokens += x.OutputTokens
	u.CacheReadTokens += x.CacheReadTokens
	u.CacheWriteTokens += x.CacheWriteTokens
	u.ReasoningTokens += x.ReasoningTokens
}

// Event is one line of `flemma-host run --json`. Event names the kind:
// request_start, request_end (with status, stop_reason, usage,
// duration_ms), tool_start, tool_finish (with status), message (the
// engine's notifications, with level and text), pending (a call that needs
// approval) and done (the last event: exit, status, requests, usage).
type Event struct {
	Event      string `json:"event"`
	Provider   string `json:"provider,omitempty"`
	Model      string `json:"model,omitempty"`
	Status     string `json:"status,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	Error      string `json:"error,omitempty"`
	Usage      *Usage `json:"usage,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	Tool       string `json:"tool,omitempty"`
	ID         string `json:"id,omitempty"`
	Line       int    `json:"line,omitempty"` // 1-based: the call's **Tool Use:** line
	Preview    string `json:"preview,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Level      string `json:"level,omitempty"`
	Text       string `json:"text,omitempty"`
	Exit       *int   `json:"exit,omitempty"`
	Requests   int    `json:"requests,omitempty"`
}

// Pending is the call a run stopped at.
type Pending struct {
	Tool, ID string
	Line     int    // its **Tool Use:** line
	Fence    int    // the line of its placeholder's fence (0: none)
	Preview  string // what it would do, in one line
	Reason   string // why it asks, when flemma said why
}

// Result is how a run ended.
type Result struct {
	Code     int
	Status   string // done, pending, error, empty, usage, cut, max_turns
	Message  string // one line for stderr ("" when done)
	Pending  *Pending
	Requests int
	Usage    Usage
}

func levelName(l int) string {
	switch {
	case l >= 4:
		return "error"
	case l == 3:
		return "warn"
	}
	return "info"
}

// runState collects what the engine tells the editor during a run.
type runState struct {
	mu       sync.Mutex
	events   func(Event)
	errs     []string // error-level messages
	last     cycle.RequestEvent
	requests int
	usage    Usage
	stopped  bool // autopilot reached its turn limit
}

func (s *runState) emit(e Event) {
	if s.events != nil {
		s.events(e)
	}
}

func (s *runState) notify(msg string, level int) {
	s.mu.Lock()
	if level >= 4 {
		s.errs = append(s.errs, msg)
	}
	if strings.HasPrefix(msg, "Autopilot stopped after") {
		s.stopped = true
	}
	s.mu.Unlock()
	s.emit(Event{Event: "message", Level: levelName(level), Text: Plain(msg)})
}

func (s *runState) event(pattern string, data any) {
	switch d := data.(type) {
	case cycle.RequestEvent:
		if pattern == "FlemmaRequestStart" {
			s.mu.Lock()
			s.requests++
			s.mu.Unlock()
			s.emit(Event{Event: "request_start", Provider: d.Provider, Model: d.Model})
			return
		}
		var u *Usage
		if d.Usage != nil {
			u = &Usage{}
			u.add(d.Usage)
		}
		s.mu.Lock()
		s.last = d
		s.usage.add(d.Usage)
		s.mu.Unlock()
		s.emit(Event{Event: "request_end", Provider: d.Provider, Model: d.Model, Status: d.Status, StopReason: d.StopReason,
			Error: d.Error, Usage: u, DurationMS: d.DurationMS})
	case cycle.ToolEvent:
		kind := "tool_finish"
		if pattern == "FlemmaToolExecuting" {
			kind = "tool_start"
		}
		s.emit(Event{Event: kind, Tool: d.ToolName, ID: d.ToolID, Status: d.Status})
	}
}

// Run runs the cycle on a file until it is done or must stop. Cancelling
// ctx interrupts the response or the calls in progress (as <C-c> does);
// the run then ends with ExitCut.
func Run(ctx context.Context, o Options, deps cycle.Deps) Result {
	st := &runState{events: o.Events}
	res := run(ctx, o, deps, st)
	st.mu.Lock()
	res.Requests, res.Usage = st.requests, st.usage
	st.mu.Unlock()
	if res.Pending != nil {
		p := res.Pending
		st.emit(Event{Event: "pending", Tool: p.Tool, ID: p.ID, Line: p.Line, Preview: p.Preview, Reason: p.Reason})
	}
	code, u := res.Code, res.Usage
	st.emit(Event{Event: "done", Exit: &code, Status: res.Status, Requests: res.Requests, Usage: &u, Text: res.Message})
	return res
}

func fail(code int, status, format string, a ...any) Result {
	return Result{Code: code, Status: status, Message: fmt.Sprintf(format, a...)}
}

func run(ctx context.Context, o Options, deps cycle.Deps, st *runState) Result {
	cwd := o.Cwd
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return fail(ExitError, "error", "working directory: %v", err)
		}
	}
	cfg, err := BuildConfig(o)
	if err != nil {
		return fail(ExitUsage, "usage", "%v", err)
	}
	f, err := Open(o.Path, cwd, o.Trust)
	if err != nil {
		return fail(ExitError, "error", "%v", err)
	}
	f.OnNotify, f.OnEvent = st.notify, st.event
	logger := o.Log
	if logger == nil {
		logger = log.New(discard{}, "", 0)
	}
	h := cycle.NewEngine(o.Version, logger, deps)
	h.Connect(f, NoLua{})
	defer h.Shutdown()
	if err := h.Setup(cfg); err != nil {
		return fail(ExitUsage, "usage", "configuration: %v", err)
	}
	if f.Trusted() {
		logger.Printf("run: %s is trusted (%s)", f.Path(), map[bool]string{true: "--trust", false: "blank"}[o.Trust])
	}

	// A write refused (the file changed on disk) or the caller's cancel
	// stops the response and the calls in progress, as <C-c> would.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-f.Changed():
		case <-ctx.Done():
		case <-stop:
			return
		}
		h.Cancel(Bufnr)
	}()

	doc := buffer.Parse(f.Lines())
	for _, id := range o.ApproveCalls {
		u := doc.Use(id)
		if u == nil {
			return fail(ExitUsage, "usage", "--approve-call %s: %s has no tool call with that id", id, o.Path)
		}
		if r := doc.Result(id); r != nil && r.Status == "" {
			return fail(ExitUsage, "usage", "--approve-call %s: the call on line %d already has a result", id, u.HeaderLine)
		}
		rep, err := h.SetStatus(Bufnr, u.HeaderLine, string(buffer.StatusApproved), "")
		if err != nil {
			return fail(ExitError, "error", "--approve-call %s: %v", id, err)
		}
		if rep.Level >= 4 {
			return fail(ExitError, "error", "--approve-call %s: %s", id, rep.Message)
		}
		logger.Printf("run: %s approved by the user (--approve-call)", id)
	}
	if _, conflict := f.Conflict(); conflict != nil {
		return fail(ExitError, "error", "%v", conflict)
	}
	if d := buffer.Parse(f.Lines()); done(d) {
		return Result{Code: ExitDone, Status: "done", Message: "nothing to send: the conversation ends with the model's answer (write your next message under a last @You: and run again)"}
	}

	// One press of <C-]>; autopilot chains the rest. Then, as a user's
	// next press would: when autopilot stopped (its turn limit, or off)
	// with calls of the last response still without a result, a press with
	// autopilot off categorizes them and runs the approved ones (they came
	// from the provider in this run; a later run would find them in the
	// file and ask), without sending; when the press stopped at a call
	// that asks, a press runs the calls the policy approved beside it. So
	// the file is left with only the calls that ask.
	for press := 0; ; press++ {
		rep, err := h.Cycle(Bufnr)
		h.WaitIdle(Bufnr)
		if err != nil {
			return fail(ExitError, "error", "%v", err)
		}
		if rep.Message != "" {
			st.notify(rep.Message, rep.Level)
		}
		if _, conflict := f.Conflict(); conflict != nil {
			return fail(ExitError, "error", "%v", conflict)
		}
		d := buffer.Parse(f.Lines())
		if press >= 2 || !st.clean() || ctx.Err() != nil {
			return outcome(ctx, f, d, st)
		}
		switch {
		case len(d.Unresolved()) > 0:
			if _, err := h.Autopilot("disable"); err != nil {
				return fail(ExitError, "error", "%v", err)
			}
			st.mu.Lock()
			st.stopped = true
			st.mu.Unlock()
		case approvedWaiting(d) && firstPending(d) != nil:
		default:
			return outcome(ctx, f, d, st)
		}
	}
}

// clean: no error so far, and the last response (if any) ended well.
func (s *runState) clean() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs) == 0 && (s.last.Status == "" || s.last.Status == "ok")
}

// outcome classifies how the run stopped, from the text and what the
// engine said.
func outcome(ctx context.Context, f *File, d *buffer.Document, st *runState) Result {
	st.mu.Lock()
	errs, last, stopped := st.errs, st.last, st.stopped
	st.mu.Unlock()
	switch {
	case last.Status == "cancelled" || ctx.Err() != nil:
		return fail(ExitCut, "cut", "the run was interrupted; what arrived is in the file, marked as interrupted")
	case last.Status == "error":
		// The error names its provider already ("rec: …").
		msg := last.Error
		if !strings.HasPrefix(msg, last.Provider+": ") {
			msg = last.Provider + ": " + msg
		}
		return fail(ExitError, "error", "%s", Plain(msg))
	case last.Status == "empty":
		out := 0
		if last.Usage != nil {
			out = last.Usage.OutputTokens
		}
		return fail(ExitError, "empty", "%s: the model's answer was empty (stop reason %q, %d output tokens); nothing was written: run again, or check the model and its parameters", last.Provider, last.StopReason, out)
	case len(errs) > 0:
		return fail(ExitError, "error", "%s", Plain(oneLine(errs[0])))
	case last.Status == "cut":
		return fail(ExitCut, "cut", "the response was cut short (stop reason %q): its calls did not run; run again to send that back to the model", last.StopReason)
	}
	if p := firstPending(d); p != nil {
		pend := pendingOf(f, d, p)
		return Result{Code: ExitApproval, Status: "pending", Pending: pend,
			Message: fmt.Sprintf("needs approval: %s call %s on line %d (%s): run again with --approve-call %s, or set its fence on line %d to status=approved and run again with --trust",
				pend.Tool, pend.ID, pend.Line, pend.Preview, pend.ID, pend.Fence)}
	}
	if r := editedApproved(d); r != nil {
		return fail(ExitApproval, "pending", "the approved block of %s on line %d holds edited text, so flemma did not run the call: remove its flemma:tool fence to send your text as the result", r.ToolUseID, r.HeaderLine)
	}
	if done(d) {
		return Result{Code: ExitDone, Status: "done"}
	}
	if stopped || unresolvedOrUnsent(d) {
		return fail(ExitTurns, "max_turns", "autopilot stopped (turn limit: --max-turns, tools.autopilot) before the conversation was done: run again to go on")
	}
	return fail(ExitError, "error", "the run stopped before the conversation was done; see the file's last lines")
}

// done: every call has its result and the last message with content is
// the model's.
func done(d *buffer.Document) bool {
	for _, u := range d.ToolUses() {
		if r := d.Result(u.ID); r == nil || r.Status != "" {
			return false
		}
	}
	last := lastWithContent(d)
	if last == nil || last.Role != "Assistant" {
		return false
	}
	for _, s := range last.Segments {
		if _, ok := s.(*buffer.ToolUse); ok {
			return false
		}
	}
	return true
}

// unresolvedOrUnsent: a call without a result, or results not sent yet.
func unresolvedOrUnsent(d *buffer.Document) bool {
	if len(d.Unresolved()) > 0 {
		return true
	}
	last := lastWithContent(d)
	return last != nil && last.Role != "Assistant"
}

func lastWithContent(d *buffer.Document) *buffer.Message {
	for i := len(d.Messages) - 1; i >= 0; i-- {
		if len(d.Messages[i].Segments) > 0 {
			return d.Messages[i]
		}
	}
	return nil
}

// firstPending is the first call, in the file's order, whose placeholder
// waits for the user.
func firstPending(d *buffer.Document) *buffer.ToolUse {
	for _, u := range d.ToolUses() {
		if r := d.Result(u.ID); r != nil && r.Status == buffer.StatusPending && strings.TrimSpace(r.Content) == "" {
			return u
		}
	}
	return nil
}

// approvedWaiting: an approved placeholder nothing ran yet.
func approvedWaiting(d *buffer.Document) bool {
	for _, r := range d.ToolResults() {
		if r.Status == buffer.StatusApproved && strings.TrimSpace(r.Content) == "" {
			return true
		}
	}
	return false
}

// editedApproved is an approved block holding text (which the engine
// protects rather than run the call).
func editedApproved(d *buffer.Document) *buffer.ToolResult {
	for _, r := range d.ToolResults() {
		if r.Status == buffer.StatusApproved && strings.TrimSpace(r.Content) != "" {
			return r
		}
	}
	return nil
}

func pendingOf(f *File, d *buffer.Document, u *buffer.ToolUse) *Pending {
	p := &Pending{Tool: u.Name, ID: u.ID, Line: u.HeaderLine,
		Preview: preview.Format(u.Name, u.Input(), 100, preview.Options{EOL: "↵"})}
	if r := d.Result(u.ID); r != nil {
		p.Fence = r.FenceLine
	}
	// Why it asks: the decision recorded for it (the resolver and rule,
	// or why an approval did not count).
	if r, ok := f.Record(u.ID); ok && r.Status == string(buffer.StatusPending) {
		p.Reason = strings.TrimPrefix(r.By, "not counted: ")
	}
	return p
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BuildConfig is the setup the engine gets: Options.Config with the flags
// applied over it. A configuration that needs Lua is refused: a headless
// run has none.
func BuildConfig(o Options) (string, error) {
	raw := map[string]any{}
	if strings.TrimSpace(o.Config) != "" {
		if err := json.Unmarshal([]byte(o.Config), &raw); err != nil {
			return "", fmt.Errorf("--config: not a JSON object: %w", err)
		}
	}
	sub := func(m map[string]any, key string) map[string]any {
		if v, ok := m[key].(map[string]any); ok {
			return v
		}
		v := map[string]any{}
		m[key] = v
		return v
	}
	if o.Provider != "" {
		raw["provider"] = o.Provider
	}
	if o.Model != "" {
		raw["model"] = o.Model
	}
	tools := sub(raw, "tools")
	if o.Approve != nil {
		tools["auto_approve"] = o.Approve
	}
	if b, ok := tools["autopilot"].(bool); ok { // the Lua shorthand
		tools["autopilot"] = map[string]any{"enabled": b}
	}
	switch {
	case o.MaxTurns < 0:
		return "", fmt.Errorf("--max-turns %d: want 1 or more", o.MaxTurns)
	case o.MaxTurns == 1:
		sub(tools, "autopilot")["enabled"] = false
	case o.MaxTurns > 1:
		ap := sub(tools, "autopilot")
		ap["enabled"], ap["max_turns"] = true, o.MaxTurns-1
	}
	paths := sub(raw, "paths")
	if o.StateDir != "" || paths["state"] == nil {
		dir := o.StateDir
		if dir == "" {
			dir = DefaultStateDir(os.Getenv)
		}
		paths["state"] = dir
	}
	if o.ConfigDir != "" || paths["config"] == nil {
		dir := o.ConfigDir
		if dir == "" {
			dir = DefaultConfigDir(os.Getenv)
		}
		paths["config"] = dir
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return "", err
	}
	cfg, probs, err := options.Decode(string(b))
	if err != nil {
		return "", fmt.Errorf("--config: %w", err)
	}
	// A run has nobody to warn while it works: a wrong value stops it
	// before anything runs.
	if len(probs) > 0 {
		msgs := make([]string, len(probs))
		for i, p := range probs {
			msgs[i] = p.String()
		}
		return "", fmt.Errorf("--config: %s", strings.Join(msgs, "; "))
	}
	if _, ok := cfg.AutoApproveList(); !ok {
		return "", errors.New("tools.auto_approve is a Lua function or module: a headless run has no Lua; give a list (--approve or --config)")
	}
	return string(b), nil
}

// DefaultStateDir is the plugin's state folder, stdpath("state")/flemma:
// $XDG_STATE_HOME/nvim/flemma, or ~/.local/state/nvim/flemma ("nvim" is
// $NVIM_APPNAME when set).
func DefaultStateDir(getenv func(string) string) string {
	return filepath.Join(xdg(getenv, "XDG_STATE_HOME", ".local/state"), "flemma")
}

// DefaultConfigDir is Neovim's configuration folder, stdpath("config").
func DefaultConfigDir(getenv func(string) string) string {
	return xdg(getenv, "XDG_CONFIG_HOME", ".config")
}

func xdg(getenv func(string) string, env, fallback string) string {
	app := getenv("NVIM_APPNAME")
	if app == "" {
		app = "nvim"
	}
	if base := getenv(env); base != "" {
		return filepath.Join(base, app)
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, filepath.FromSlash(fallback), app)
}
