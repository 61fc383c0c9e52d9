package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Executor runs tool calls: it validates the input against the tool's schema,
// enforces the timeout, contains panics and turns every failure into a
// Result the model can read.
type Executor struct {
	Registry       *Registry
	DefaultTimeout time.Duration
	Logf           func(format string, args ...any)

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema // by tool name + schema text
}

// Run executes one call. It never returns an error: failures are results.
func (e *Executor) Run(ctx context.Context, call Call, rawInput json.RawMessage) Result {
	start := time.Now()
	res := e.run(ctx, call, rawInput)
	res.Duration = time.Since(start)
	return res
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
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = call.Timeout
	}
	if timeout <= 0 {
		timeout = e.DefaultTimeout
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
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
		return e.failure(spec, call, r.err)
	}
	if spec.OutputSchema != nil && r.out.JSON != nil {
		if msg := e.validateOutput(spec, r.out.JSON); msg != "" {
			return e.failure(spec, call, &Internal{Err: errors.New(msg)})
		}
	}
	if r.out.JSON != nil {
		b, err := json.MarshalIndent(r.out.JSON, "", "  ")
		if err != nil {
			return e.failure(spec, call, &Internal{Err: err})
		}
		return Result{Content: e.finish(string(b), call, spec), Lang: "json"}
	}
	return Result{Content: e.finish(r.out.Text, call, spec)}
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

func errResult(kind, msg string) Result { return Result{Content: msg, IsError: true, Kind: kind} }

func (e *Executor) failure(spec Spec, call Call, err error) Result {
	name := spec.Name
	var in *Internal
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errResult("Timeout", fmt.Sprintf("Tool '%s' timed out.", name))
	case errors.Is(err, context.Canceled):
		return errResult("Canceled", "User aborted tool execution.")
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

func (e *Executor) compiled(name string, schema map[string]any) (*jsonschema.Schema, error) {
	// A schema map is never modified after registration (re-registering a
	// tool makes a new one), so its identity is a sound cache key and saves
	// marshalling the schema on every call.
	key := fmt.Sprintf("%s\x00%p", name, schema)
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.schemas[key]; ok {
		return s, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	url := "mem://" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	if e.schemas == nil {
		e.schemas = map[string]*jsonschema.Schema{}
	}
	e.schemas[key] = s
	return s, nil
}

// validate returns "" when raw satisfies the tool's input schema, else a
// message for the model listing what is wrong.
func (e *Executor) validate(spec Spec, raw json.RawMessage) string {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return fmt.Sprintf("Invalid input for tool '%s': the input is not valid JSON.", spec.Name)
	}
	if spec.InputSchema == nil {
		return ""
	}
	fillNullables(spec.InputSchema, inst)
	s, err := e.compiled(spec.Name, spec.InputSchema)
	if err != nil {
		e.logf("tool %s: input schema does not compile: %v", spec.Name, err)
		return fmt.Sprintf("Tool '%s' has an invalid input schema — see logs", spec.Name)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Sprintf("Invalid input for tool '%s':\n%s", spec.Name, describe(err))
	}
	return ""
}

func (e *Executor) validateOutput(spec Spec, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		return err.Error()
	}
	s, err := e.compiled(spec.Name+"#output", spec.OutputSchema)
	if err != nil {
		return "output schema does not compile: " + err.Error()
	}
	if err := s.Validate(inst); err != nil {
		return "output does not match output_schema: " + describe(err)
	}
	return ""
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
