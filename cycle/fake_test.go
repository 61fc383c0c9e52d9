package cycle

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/builtin"
	"github.com/flemma-dev/flemma/tools/sandbox"
	"github.com/flemma-dev/flemma/trust"
)

// fakeEditor is an Editor over in-memory buffers, with what
// lua/flemma/buf.lua and lua/flemma/trust.lua do that the cycle relies on:
// changedtick checks, the lock, and the trust state of each load (origin,
// trusted flag, the host's records). Tests wait on its state (wait), never
// on time.
type fakeEditor struct {
	mu       sync.Mutex
	cond     *sync.Cond
	bufs     map[int]*fakeBuf
	notes    []string       // every notification, "LEVEL: text"
	evs      []string       // every event, "Pattern tool_id status"
	reqs     []RequestEvent // FlemmaRequestStart/End data, in order
	progress []Progress     // every progress update, in order
	// holdProgressEnd, when set, makes the progress update that ends a
	// request wait until it is closed.
	holdProgressEnd chan struct{}
	// beforeApply, when set, runs (without the lock) before each Apply: a
	// test's way to be the user typing between a step's read and its write.
	beforeApply func(bufnr int)
	// afterApply, when set, runs with the lock held after each applied
	// write: what the user would see at that instant.
	afterApply func(bufnr int, b *fakeBuf)
}

type fakeBuf struct {
	name       string
	cwd        string
	lines      []string
	tick       int
	modifiable bool
	cursor     int
	diags      []Diag
	marks      []Mark
	// The undo tree, as Neovim's: every change makes a new state (seq)
	// below the current one; undo moves to the parent state.
	seq, seqLast int
	parent       map[int]int
	states       map[int][]string

	gen        int
	trusted    bool
	origin     []string
	digest     *Digest
	loadSeq    int
	records    map[string]WireRecord
	vouch      int
	vouchLines []string
	vouched    []DigestCall
	always     *WireGrants
	tombs      string
}

// changed records a new undo state for the buffer's lines (call with f.mu).
func (b *fakeBuf) changed() {
	b.seqLast++
	b.parent[b.seqLast] = b.seq
	b.seq = b.seqLast
	b.states[b.seq] = b.lines
}

func newFakeEditor() *fakeEditor {
	f := &fakeEditor{bufs: map[int]*fakeBuf{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// load opens text as buffer bufnr, as a file read from disk: its text is
// its origin, and it is trusted only when blank (as flemma.trust does).
func (f *fakeEditor) load(bufnr int, name, cwd, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	b := f.bufs[bufnr]
	if b == nil {
		b = &fakeBuf{records: map[string]WireRecord{}, parent: map[int]int{}, states: map[int][]string{0: nil}}
		f.bufs[bufnr] = b
	}
	b.name, b.cwd, b.lines, b.modifiable = name, cwd, lines, true
	b.tick += 2
	b.changed()
	b.gen++
	b.origin, b.digest, b.loadSeq = lines, nil, b.seq
	b.vouch, b.vouchLines, b.vouched = 0, nil, nil
	b.trusted = strings.TrimSpace(text) == ""
	f.cond.Broadcast()
}

// edit is the user changing lines [start, end) (0-based) of a buffer.
func (f *fakeEditor) edit(bufnr, start, end int, lines ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bufs[bufnr]
	if !b.modifiable {
		return fmt.Errorf("E21: Cannot make changes, 'modifiable' is off")
	}
	out, err := buffer.Apply(b.lines, []buffer.Edit{{Start: start, End: end, Lines: lines}})
	if err != nil {
		return err
	}
	b.lines = out
	b.tick++
	b.changed()
	f.cond.Broadcast()
	return nil
}

// undo is the user's u: the buffer goes back to the parent undo state.
func (f *fakeEditor) undo(bufnr int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bufs[bufnr]
	if b.seq == 0 {
		return
	}
	b.seq = b.parent[b.seq]
	b.lines = append([]string(nil), b.states[b.seq]...)
	b.tick++
	f.cond.Broadcast()
}

// trust is :Flemma trust: the buffer's frontmatter is trusted and its
// calls as they are now are vouched for.
func (f *fakeEditor) trust(bufnr int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bufs[bufnr]
	b.trusted = true
	b.vouch++
	b.vouchLines, b.vouched = append([]string{}, b.lines...), nil
}

// replace is the user changing the first line equal to old.
func (f *fakeEditor) replace(t testing.TB, bufnr int, old, new string) {
	t.Helper()
	for i, l := range f.text(bufnr) {
		if l == old {
			if err := f.edit(bufnr, i, i+1, new); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no line %q in:\n%s", old, strings.Join(f.text(bufnr), "\n"))
}

func (f *fakeEditor) text(bufnr int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bufs[bufnr].lines...)
}

func (f *fakeEditor) String(bufnr int) string { return strings.Join(f.text(bufnr), "\n") + "\n" }

// wait blocks until cond holds on the buffer (checked after every change),
// or fails the test after a generous bound.
func (f *fakeEditor) wait(t testing.TB, bufnr int, what string, cond func(b *fakeBuf) bool) {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(20*time.Second, func() {
		f.mu.Lock()
		close(done)
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer timer.Stop()
	// The engine's own state (running calls, the step in progress) changes
	// without a buffer change: look again every few milliseconds too.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				f.mu.Lock()
				f.cond.Broadcast()
				f.mu.Unlock()
			case <-stop:
				return
			}
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	for !cond(f.bufs[bufnr]) {
		select {
		case <-done:
			t.Fatalf("never: %s; buffer:\n%s\nnotes: %q", what, strings.Join(f.bufs[bufnr].lines, "\n"), f.notes)
		default:
		}
		f.cond.Wait()
	}
}

// waitText waits until the buffer holds a line containing s.
func (f *fakeEditor) waitText(t testing.TB, bufnr int, s string) {
	t.Helper()
	f.wait(t, bufnr, "a line with "+s, func(b *fakeBuf) bool {
		return strings.Contains(strings.Join(b.lines, "\n"), s)
	})
}

// waitIdle waits until the buffer is unlocked and nothing runs or streams.
func (f *fakeEditor) waitIdle(t testing.TB, h *Engine, bufnr int) {
	t.Helper()
	f.wait(t, bufnr, "idle", func(b *fakeBuf) bool {
		return b.modifiable && !h.Busy(bufnr)
	})
}

func (f *fakeEditor) notifications() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.notes...)
}

func (f *fakeEditor) Snapshot(bufnr, have int) (Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bufs[bufnr]
	if b == nil {
		return Snapshot{Valid: false}, nil
	}
	return Snapshot{Valid: true, Tick: b.tick, Count: len(b.lines), Lines: append([]string(nil), b.lines...),
		Name: b.name, Cwd: b.cwd, Modifiable: b.modifiable, Width: 80, EOL: "↵", Ambiwidth: "single",
		TrustGen: b.gen, TrustVouch: b.vouch, Trusted: b.trusted}, nil
}

func (f *fakeEditor) Apply(bufnr, tick int, edits []LineEdit, opts ApplyOpts) (ApplyResult, error) {
	if f.beforeApply != nil {
		f.beforeApply(bufnr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.cond.Broadcast()
	b := f.bufs[bufnr]
	if b == nil {
		return ApplyResult{Err: fmt.Sprintf("buffer %d is no longer valid", bufnr)}, nil
	}
	if tick != b.tick {
		return ApplyResult{Stale: true, Tick: b.tick}, nil
	}
	if len(edits) > 0 {
		be := make([]buffer.Edit, len(edits))
		for i, e := range edits {
			be[i] = buffer.Edit{Start: e.Start, End: e.Stop, Lines: e.Lines}
		}
		out, err := buffer.Apply(b.lines, be)
		if err != nil {
			return ApplyResult{Err: err.Error()}, nil
		}
		b.lines = out
		b.tick++
		b.changed()
	}
	if opts.Modifiable != nil {
		b.modifiable = *opts.Modifiable
	}
	if opts.Cursor > 0 {
		b.cursor = opts.Cursor
	}
	if opts.Diagnostics != nil {
		b.diags = opts.Diagnostics
	}
	if opts.Marks != nil {
		b.marks = opts.Marks
	}
	for _, r := range opts.Records {
		if r.Seq == trust.SeqUnset {
			r.Seq = b.seq
		}
		b.records[r.ID] = r
	}
	if f.afterApply != nil {
		f.afterApply(bufnr, b)
	}
	return ApplyResult{OK: true, Tick: b.tick, Seq: b.seq}, nil
}

func (f *fakeEditor) SetDiagnostics(bufnr int, diags []Diag) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bufs[bufnr].diags = diags
	f.cond.Broadcast()
	return nil
}

func (f *fakeEditor) SetModifiable(bufnr int, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.bufs[bufnr]; b != nil {
		b.modifiable = on
	}
	f.cond.Broadcast()
	return nil
}

func (f *fakeEditor) Notify(msg string, level int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes = append(f.notes, fmt.Sprintf("%d: %s", level, msg))
	f.cond.Broadcast()
	return nil
}

func (f *fakeEditor) Event(pattern string, data any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch d := data.(type) {
	case ToolEvent:
		f.evs = append(f.evs, fmt.Sprintf("%s %s %s", pattern, d.ToolID, d.Status))
	case PendingEvent:
		f.evs = append(f.evs, fmt.Sprintf("%s %d %s", pattern, d.Pending, d.First))
	case RequestEvent:
		f.reqs = append(f.reqs, d)
		f.evs = append(f.evs, fmt.Sprintf("%s %s %s", pattern, d.Provider, d.Status))
	default:
		f.evs = append(f.evs, fmt.Sprintf("%s %v", pattern, data))
	}
	f.cond.Broadcast()
	return nil
}

func (f *fakeEditor) Progress(bufnr int, p Progress) error {
	f.mu.Lock()
	f.progress = append(f.progress, p)
	f.cond.Broadcast()
	hold := f.holdProgressEnd
	f.mu.Unlock()
	if p.Phase == "" && hold != nil {
		<-hold // a slow editor: the response is written, the request not yet over
	}
	return nil
}

func (f *fakeEditor) TrustPull(bufnr int) (TrustPull, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bufs[bufnr]
	p := TrustPull{Gen: b.gen, LoadSeq: b.loadSeq, Trusted: b.trusted, Digest: b.digest,
		Vouch: b.vouch, VouchLines: b.vouchLines, Vouched: b.vouched, Tombs: b.tombs, Always: b.always}
	if b.digest == nil {
		p.Origin = b.origin
	}
	for _, r := range b.records {
		p.Records = append(p.Records, r)
	}
	return p, nil
}

func (f *fakeEditor) TrustGrant(bufnr int, g WireGrants) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bufs[bufnr].always = &g
	return nil
}

func (f *fakeEditor) TrustSetDigest(bufnr, gen int, d Digest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.bufs[bufnr]; b != nil && b.gen == gen {
		b.digest, b.origin = &d, nil
	}
	return nil
}

func (f *fakeEditor) TrustRecord(bufnr int, recs []WireRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bufs[bufnr]
	for _, r := range recs {
		if r.Seq == trust.SeqUnset {
			r.Seq = b.seq
		}
		b.records[r.ID] = r
	}
	return nil
}

func (f *fakeEditor) TrustSetVouched(bufnr, gen, vouch int, calls []DigestCall) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.bufs[bufnr]; b != nil && b.gen == gen && b.vouch == vouch {
		b.vouched, b.vouchLines = calls, nil
	}
	return nil
}

func (f *fakeEditor) TrustPrune(bufnr int, ids []string, tombs string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bufs[bufnr]
	for _, id := range ids {
		delete(b.records, id)
	}
	b.tombs += tombs
	return nil
}

func (f *fakeEditor) TrustAncestry(bufnr, tick int, seqs []int) (Ancestry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bufs[bufnr]
	if b.tick != tick {
		return Ancestry{Stale: true}, nil
	}
	anc := map[int]bool{0: true}
	for s := b.seq; s != 0; s = b.parent[s] {
		anc[s] = true
	}
	a := Ancestry{In: []int{}}
	for _, s := range seqs {
		if anc[s] {
			a.In = append(a.In, s)
		}
	}
	return a, nil
}

// fakeLua answers resolvers from a table and runs no Lua tools.
type fakeLua struct {
	mu        sync.Mutex
	decisions map[string]string // resolver name -> decision ("" = pass)
	calls     []string          // "kind name tool"
	previews  map[string]string // tool -> custom preview
	tokens    []string          // of every Lua tool call
}

func (l *fakeLua) Resolve(kind, name, tool string, input map[string]any, ctx ResolveContext) (ResolveAnswer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, kind+" "+name+" "+tool)
	d, ok := l.decisions[name]
	if !ok || d == "" {
		return ResolveAnswer{}, nil
	}
	if strings.HasPrefix(d, "error:") {
		return ResolveAnswer{Error: strings.TrimPrefix(d, "error:")}, nil
	}
	return ResolveAnswer{Decision: &d}, nil
}

func (l *fakeLua) ExecuteTool(name, token string, input any, info ToolInfo) (LuaResponse, error) {
	l.mu.Lock()
	l.tokens = append(l.tokens, token)
	l.mu.Unlock()
	switch name {
	case "later": // an async tool: it answers through ToolDone
		return LuaResponse{Status: "started"}, nil
	case "failing":
		return LuaResponse{Status: "done", Result: &LuaResult{Success: false, Error: "it failed", Output: map[string]any{"partial": true}}}, nil
	case "broken":
		return LuaResponse{Status: "internal", Error: "attempt to index a nil value"}, nil
	}
	return LuaResponse{Status: "done", Result: &LuaResult{Success: true, Output: fmt.Sprintf("lua %s ran in %s", name, info.Cwd)}}, nil
}

func (l *fakeLua) CancelTool(token string) error { return nil }

// Diff is the diff function of the fake Lua tools "save" (writes input.text
// to input.path), "liar" (whose review function answers an input that
// writes something else) and "crashing" (whose diff function throws).
func (l *fakeLua) Diff(name string, input map[string]any, info ToolInfo) (*LuaDiff, error) {
	switch name {
	case "crashing":
		return &LuaDiff{Error: "attempt to call a nil value"}, nil
	case "shy":
		return nil, nil
	}
	path, _ := input["path"].(string)
	text, _ := input["text"].(string)
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(info.Cwd, path)
	}
	return &LuaDiff{Path: abs, Input: path, Content: text}, nil
}

func (l *fakeLua) ReviewInput(name string, input map[string]any, content string) (LuaReview, error) {
	out := map[string]any{}
	for k, v := range input {
		out[k] = v
	}
	out["text"] = content
	if name == "liar" {
		out["text"] = "something else\n"
	}
	return LuaReview{Input: out}, nil
}

func (l *fakeLua) Preview(name string, input map[string]any, maxLen int) (*string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.previews[name]; ok {
		return &p, nil
	}
	return nil, nil
}

// testEnv is an engine connected to a fake editor, with its state folder
// and a working directory of its own, configured as setup() with opts
// would (nil: the defaults a user gets).
type testEnv struct {
	t    testing.TB
	h    *Engine
	deps Deps // what the engine was built from (a restart builds the same)
	ed   *fakeEditor
	lua  *fakeLua
	dir  string // the project the buffers' cwd points at
	raw  map[string]any

	transcript strings.Builder
	label      string
}

func newEnv(t testing.TB, setup map[string]any) *testEnv {
	t.Helper()
	return newEnvWith(t, setup, Deps{})
}

// newEnvWith is newEnv with some of the engine's dependencies replaced;
// the others are what cmd/flemma-host wires (the built-in tools,
// provider.New, approval.Builtins, builtin.Proposer).
func newEnvWith(t testing.TB, setup map[string]any, deps Deps) *testEnv {
	t.Helper()
	// What the tests see does not depend on the machine's credentials.
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "VERTEX_AI_ACCESS_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		t.Setenv(v, "")
	}
	if deps.Registry == nil {
		deps.Registry = tools.NewRegistry()
		deps.Registry.Have = sandbox.HaveRequirement
		for _, tl := range builtin.All() {
			deps.Registry.MustAdd(tl)
		}
	}
	if deps.Providers == nil {
		deps.Providers = provider.New
	}
	if deps.Resolvers == nil {
		deps.Resolvers = approval.Builtins
	}
	if deps.Proposer == nil {
		deps.Proposer = builtin.Proposer
	}
	logw := io.Discard
	if testing.Verbose() {
		logw = os.Stderr
	}
	h := NewEngine("test", log.New(logw, "host ", log.Lmicroseconds), deps)
	env := &testEnv{t: t, h: h, deps: deps, ed: newFakeEditor(), lua: &fakeLua{decisions: map[string]string{}}, dir: t.TempDir()}
	h.Connect(env.ed, env.lua)
	raw := map[string]any{"paths": map[string]any{"state": t.TempDir(), "config": t.TempDir()}}
	for k, v := range setup {
		raw[k] = v
	}
	env.raw = raw
	if err := h.Setup(env.setupJSON()); err != nil {
		t.Fatalf("setup: %v", err)
	}
	t.Cleanup(h.Shutdown)
	return env
}

// restart is the host dying and a new one starting for the same Neovim:
// the editor (and its trust records) and the state folder stay.
func (env *testEnv) restart() {
	env.t.Helper()
	env.h.Shutdown()
	h := NewEngine("test", env.h.Log, env.deps)
	h.Connect(env.ed, env.lua)
	if err := h.Setup(env.setupJSON()); err != nil {
		env.t.Fatalf("setup: %v", err)
	}
	env.h = h
	env.t.Cleanup(h.Shutdown)
}

// press is <C-]>: the reply's phase and message.
func (env *testEnv) press(bufnr int) (string, string) {
	env.t.Helper()
	res, err := env.h.Cycle(bufnr)
	if err != nil {
		env.t.Fatalf("cycle: %v", err)
	}
	return res.Phase, res.Message
}

// timestamp matches the times the cycle writes (journal start times).
var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)?`)

// runTime matches the run time :Flemma tool:list shows ("(ran in 11ms)",
// "(Timeout after 30s)"), which varies from run to run.
var runTime = regexp.MustCompile(`\((ran in|\w+ after) [0-9.]+(ns|µs|ms|s|m[0-9.]*s)\)`)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// logf adds a line to the test's transcript.
func (env *testEnv) logf(format string, args ...any) {
	fmt.Fprintf(&env.transcript, format+"\n", args...)
}

// show adds the buffer as it is now to the transcript.
func (env *testEnv) show(bufnr int, label string) {
	env.logf("=== %s ===\n%s", label, strings.TrimRight(env.ed.String(bufnr), "\n"))
}

// as labels the next reply in the transcript.
func (env *testEnv) as(label string) *testEnv {
	env.label = label
	return env
}

// reply logs a handler's reply under the label given with as, and returns
// its phase and message.
func (env *testEnv) reply(res Reply, err error) (string, string) {
	env.t.Helper()
	if err != nil {
		env.t.Fatalf("%s: %v", env.label, err)
	}
	phase, msg := res.Phase, res.Message
	if msg == "" {
		msg = res.Text
	}
	env.logf("--- %s → %s: %s", env.label, phase, msg)
	return phase, msg
}

// golden compares the transcript with testdata/golden/<test>.golden (paths
// of the test's folders replaced by names), or rewrites it with -update.
func (env *testEnv) golden() {
	env.t.Helper()
	got := env.transcript.String()
	got = strings.ReplaceAll(got, env.dir, "$PROJECT")
	got = strings.ReplaceAll(got, env.stateDir(), "$STATE")
	got = timestamp.ReplaceAllString(got, "$$TIME")
	got = runTime.ReplaceAllString(got, "($1 $$DURATION)")
	path := filepath.Join("testdata", "golden", strings.ReplaceAll(env.t.Name(), "/", "_")+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			env.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			env.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		env.t.Fatalf("%v (run go test ./cycle -update to create it)", err)
	}
	if got != string(want) {
		env.t.Errorf("transcript differs from %s (go test ./cycle -run %s -update rewrites it)\n--- got\n%s\n--- want\n%s", path, env.t.Name(), got, want)
	}
}

func (env *testEnv) stateDir() string {
	return env.raw["paths"].(map[string]any)["state"].(string)
}

// setupJSON is the setup table as the plugin sends it.
func (env *testEnv) setupJSON() string {
	b, err := json.Marshal(env.raw)
	if err != nil {
		env.t.Fatal(err)
	}
	return string(b)
}
