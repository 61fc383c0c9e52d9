package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Executor runs tool calls: it validates the input against the tool's schema,
// enforces the timeout, contains panics and turns every failure into a
// Result the model can read.
type Executor struct {
	Registry *Registry
	Logf     func(format string, args ...any)
	// ReleaseAfter: when the calls that ran together allocated more than
	// this many bytes (a large output, a large Lua result), the last of
	// them to finish has the garbage collected and the freed memory
	// returned to the system (debug.FreeOSMemory) before it returns.
	// Otherwise an idle host keeps it: Go collects only as the heap
	// grows, or every two minutes. 0 means DefaultReleaseAfter; negative
	// never.
	ReleaseAfter int64

	running   atomic.Int64 // calls in Run
	allocated atomic.Bool  // one of them allocated more than ReleaseAfter

	mu      sync.Mutex
	schemas map[schemaKey]compiledSchema // the last schema compiled for each tool and role
}

// schemaKey names a tool's input or output schema in the cache.
type schemaKey struct {
	tool   string
	output bool
}

// compiledSchema is a compiled schema with the map it came from. Holding
// the map keeps its identity unique: a cache keyed by its address alone
// could hand a tool re-registered with a new schema (at the address the
// old one was freed from) the old compiled form.
type compiledSchema struct {
	src map[string]any
	s   *jsonschema.Schema
	err error // it does not compile (kept: it is not tried again)
}

// DefaultReleaseAfter is Executor.ReleaseAfter's default: 32 MiB.
const DefaultReleaseAfter = 32 << 20

// releaseMemory collects the garbage and returns free memory to the system
// (a variable for tests).
var releaseMemory = debug.FreeOSMemory

// Run executes one call. It never returns an error: failures are results.
func (e *Executor) Run(ctx context.Context, call Call, rawInput json.RawMessage) Result {
	e.running.Add(1)
	start := time.Now()
	allocs := heapAllocs()
	res := e.run(ctx, call, rawInput)
	res.Duration = time.Since(start)
	limit := e.ReleaseAfter
	if limit == 0 {
		limit = DefaultReleaseAfter
	}
	if limit > 0 && heapAllocs()-allocs > uint64(limit) {
		e.allocated.Store(true)
	}
	if e.running.Add(-1) == 0 && e.allocated.Swap(false) {
		releaseMemory()
	}
	return res
}

var allocsMetric = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// heapAllocs is the total of heap allocations of the process so far (a
// cheap read: no stop of the world, unlike runtime.ReadMemStats).
func heapAllocs() uint64 {
	s := []metrics.Sample{allocsMetric[0]}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func (e *Executor) run(ctx context.Context, call Call, rawInput json.RawMessage) Result {
	t, ok := e.Registry.Lookup(call.Tool)
	if !ok {
		return errResult("ToolError", fmt.Sprintf("Unknown tool: %s", call.Tool))
	}
	spec := t.Spec()
	if len(rawInput) == 0 {
		rawInput = json.RawMessage("{}")
	}
	if msg := e.validate(spec, rawInput); msg != "" {
		return errResult("ToolValidationError", msg)
	}
	timeout := call.Timeout // the host always sets it (tools.timeouts)
	if timeout <= 0 {
		timeout = spec.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	if spec.SelfTimed && call.Timeout > 0 {
		// The tool reports its own timeout; this deadline is a backstop.
		timeout += selfTimedGrace
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	type ret struct {
		out Output
		err error
	}
	done := make(chan ret, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- ret{err: &Internal{Err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}}
			}
		}()
		out, err := t.Run(ctx, call, rawInput)
		done <- ret{out, err}
	}()
	var r ret
	select {
	case r = <-done:
	case <-ctx.Done():
		// Give the tool a moment to notice the cancellation (and kill its
		// process tree) before we report.
		select {
		case r = <-done:
		case <-time.After(2 * time.Second):
			r = ret{err: ctx.Err()}
		}
		if r.err == nil {
			r.err = ctx.Err()
		}
	}
	if r.err != nil {
		// What a failing call changed stays undoable (a command that
		// exits non-zero after writing, a tool chain whose write step ran
		// before a later step failed): a tool returns its Changes with
		// its error.
		res := e.failure(spec, call, r.err)
		res.Changes = r.out.Changes
		return res
	}
	if r.out.JSON == nil && objectSchema(spec.OutputSchema) {
		// A text result of a tool whose output_schema describes an object
		// is held to it too (issue 28 item 9; seed 002): parsed as JSON
		// and validated, or flagged as not matching.
		var v any
		if err := json.Unmarshal([]byte(r.out.Text), &v); err != nil {
			e.logf("tool %s (%s): text output is not JSON: %v", spec.Name, call.ID, err)
			return e.failure(spec, call, Failf("Tool '%s' returned text that is not the JSON its output_schema describes (%v).\nThe output was discarded. This is a fault of the tool, not of your input; retrying the same call will likely fail the same way.", spec.Name, err))
		}
		r.out.JSON = v
	}
	if spec.OutputSchema != nil && r.out.JSON != nil {
		if err := e.validateOutput(spec, r.out.JSON); err != nil {
			if !errors.As(err, new(*Internal)) {
				e.logf("tool %s (%s): %v", spec.Name, call.ID, err)
			}
			return e.failure(spec, call, err)
		}
	}
	if r.out.JSON != nil {
		b, err := json.MarshalIndent(r.out.JSON, "", "  ")
		if err != nil {
			return e.failure(spec, call, &Internal{Err: err})
		}
		return Result{Content: e.finish(string(b), call, spec), Lang: "json", Changes: r.out.Changes}
	}
	return Result{Content: e.finish(r.out.Text, call, spec), Changes: r.out.Changes}
}

// finish applies to every result what no tool may skip: terminal control
// sequences removed and secrets redacted. Output of tools that do not
// truncate themselves (Spec.Truncates) is truncated here when over the
// limits, head kept, the full text saved to a file named in the notice.
func (e *Executor) finish(text string, call Call, spec Spec) string {
	text = Finish(text, call.Env)
	if spec.Truncates {
		return text
	}
	var l Limits
	dir := ""
	if call.Env != nil {
		l, dir = call.Env.Truncate, call.Env.OutputDir
	}
	return TruncateWithOverflow(text, false, l, func(full string) (string, error) {
		return SaveFullOutput(dir, call, full)
	})
}

// selfTimedGrace is how long after its own timeout a SelfTimed tool may
// take to stop and report it before the executor's deadline.
const selfTimedGrace = 5 * time.Second

// Aborted is the result of a call the user cancelled (<C-c>), as the Lua
// original words it.
const Aborted = "User aborted tool execution."

func errResult(kind, msg string) Result { return Result{Content: msg, IsError: true, Kind: kind} }

func (e *Executor) failure(spec Spec, call Call, err error) Result {
	name := spec.Name
	var in *Internal
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errResult("Timeout", fmt.Sprintf("Tool '%s' timed out.", name))
	case errors.Is(err, context.Canceled):
		return errResult("Canceled", Aborted)
	case errors.As(err, &in):
		e.logf("tool %s (%s) internal error: %v", name, call.ID, in.Err)
		b, _ := json.Marshal(map[string]string{"error": "InternalError", "message": fmt.Sprintf("Tool '%s' failed — see logs", name)})
		return errResult("InternalError", string(b))
	default:
		return errResult("ToolError", e.finish(err.Error(), call, spec))
	}
}

func (e *Executor) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

func (e *Executor) compiled(key schemaKey, schema map[string]any) (*jsonschema.Schema, error) {
	// A schema map is never modified after registration (re-registering a
	// tool makes a new one), so its identity is a sound cache key and saves
	// marshalling the schema on every call.
	same := func(c compiledSchema) bool {
		return reflect.ValueOf(c.src).UnsafePointer() == reflect.ValueOf(schema).UnsafePointer()
	}
	e.mu.Lock()
	if c, ok := e.schemas[key]; ok && same(c) {
		e.mu.Unlock()
		return c.s, c.err
	}
	e.mu.Unlock()
	// Compiled outside the lock: a schema that is slow to compile (or
	// refused) holds up its own tool's calls only, never another buffer's.
	s, err := CompileSchema(schema)
	if errors.Is(err, ErrSchemaTimeout) {
		return nil, err // perhaps a busy machine: the next call tries again
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.schemas == nil {
		e.schemas = map[schemaKey]compiledSchema{}
	}
	e.schemas[key] = compiledSchema{src: schema, s: s, err: err}
	return s, err
}

// validate returns "" when raw satisfies the tool's input schema, else a
// message for the model listing what is wrong.
func (e *Executor) validate(spec Spec, raw json.RawMessage) string {
	if why := buffer.InputTooLarge(string(raw)); why != "" {
		// Before decoding: nothing downstream (a Lua tool through Neovim's
		// RPC channel first) is handed it (issue 24, class 12).
		return fmt.Sprintf("Invalid input for tool '%s': %s.", spec.Name, why)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Sprintf("Invalid input for tool '%s': the input is not valid JSON.", spec.Name)
	}
	if spec.InputSchema == nil {
		return ""
	}
	fillNullables(spec.InputSchema, inst)
	s, err := e.compiled(schemaKey{tool: spec.Name}, spec.InputSchema)
	if err != nil {
		e.logf("tool %s: input schema does not compile: %v", spec.Name, err)
		return fmt.Sprintf("Tool '%s' has an invalid input schema — see logs", spec.Name)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Sprintf("Invalid input for tool '%s':\n%s", spec.Name, describe(err))
	}
	return ""
}

// objectSchema reports whether an output_schema describes an object (its
// type is "object", or it names properties): then a text result must be
// that object as JSON. A schema of a string, or none, leaves text alone.
func objectSchema(s map[string]any) bool {
	if s == nil {
		return false
	}
	if t, _ := s["type"].(string); t == "object" {
		return true
	}
	if ts, ok := s["type"].([]any); ok {
		// A list of types: an object, unless a string may be the answer.
		return slices.Contains(ts, any("object")) && !slices.Contains(ts, any("string"))
	}
	_, props := s["properties"]
	return props && s["type"] == nil
}

// validateOutput checks a structured result against the tool's
// output_schema. A mismatch is the model-facing error the executor returns
// instead of the output (the tool broke its own contract: the model should
// know the call did not give a usable answer, and where it went wrong); a
// schema that does not compile, or a value that cannot be encoded, is an
// internal error.
func (e *Executor) validateOutput(spec Spec, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &Internal{Err: fmt.Errorf("encode output: %w", err)}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return &Internal{Err: fmt.Errorf("decode output: %w", err)}
	}
	s, err := e.compiled(schemaKey{tool: spec.Name, output: true}, spec.OutputSchema)
	if err != nil {
		return &Internal{Err: fmt.Errorf("output_schema does not compile: %w", err)}
	}
	if err := s.Validate(inst); err != nil {
		return Failf("Tool '%s' returned output that does not match its output_schema:\n%s\nThe output was discarded. This is a fault of the tool, not of your input; retrying the same call will likely fail the same way.", spec.Name, describe(err))
	}
	return nil
}

var printer = message.NewPrinter(language.English)

// describe flattens a validation error into one line per problem, with the
// JSON pointer of the offending value.
func describe(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "- " + err.Error()
	}
	var lines []string
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			loc := "/" + strings.Join(v.InstanceLocation, "/")
			lines = append(lines, fmt.Sprintf("- at %s: %s", loc, v.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(lines, "\n")
}

// fillNullables sets absent properties whose type admits null to null.
// Strict-mode schemas list optional fields as required-but-nullable, and
// providers without strict mode (and the buffer parser, which drops JSON
// nulls) leave them out: absent and null mean the same to a tool.
func fillNullables(schema map[string]any, inst any) {
	obj, ok := inst.(map[string]any)
	if !ok {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		if _, present := obj[name]; present {
			continue
		}
		ps, _ := p.(map[string]any)
		if types, ok := ps["type"].([]any); ok {
			for _, t := range types {
				if t == "null" {
					obj[name] = nil
				}
			}
		}
	}
}
