package frontmatter

import (
	"context"
	"errors"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// evaluateLua runs a Lua frontmatter in a fresh sandboxed VM.
func (e *Evaluator) evaluateLua(src Source, setup Setup, res *Result) {
	c, err := e.compiledChunk(src.Code)
	if err != nil {
		line := src.StartLine
		var ce *codeError
		if errors.As(err, &ce) && ce.line > 0 {
			line = src.StartLine + ce.line
		}
		res.Diagnostics = append(res.Diagnostics, Diagnostic{Line: line, Severity: SeverityError, Message: err.Error()})
		return
	}
	es := newEvalState(setup, "flemma.opt", src.StartLine, e.limits)
	v := newVM(e.limits, src.StartLine, es)
	fn := v.L.NewFunctionFromProto(c.proto)
	fn.Env = v.env
	ctx, cancel := context.WithTimeout(context.Background(), e.limits.Deadline)
	rerr := v.run(ctx, e.limits.Deadline, fn, 0)
	cancel()
	es.frozen = true

	res.Diagnostics = append(res.Diagnostics, es.diags...)
	if rerr != nil {
		res.Diagnostics = append(res.Diagnostics, Diagnostic{Line: v.bufferLine(rerr.line), Severity: SeverityError,
			Message: evalMessage(rerr)})
	} else {
		// A chunk that failed defines no variables (its globals may be half
		// built); options recorded before the error stay, and the error blocks.
		vars, d := v.exportVars(c.proto)
		res.Vars = vars
		if d != nil {
			res.Diagnostics = append(res.Diagnostics, *d)
		}
	}
	res.Opts = es.options()
	if es.b.approveFn == nil {
		v.L.Close()
		return
	}
	f := &Func{vm: v, fn: es.b.approveFn, line: src.StartLine}
	if p := es.b.approveFn.Proto; p != nil {
		f.line = v.bufferLine(p.LineDefined)
	}
	if size := v.retainedSize(e.limits.MaxBytes, es.b.approveFn); size > e.limits.MaxBytes {
		v.broken = true
		res.Diagnostics = append(res.Diagnostics, Diagnostic{Line: f.line, Severity: SeverityError,
			Message: fmt.Sprintf("memory limit exceeded: the frontmatter keeps more than %s of state for its auto_approve function",
				formatSize(e.limits.MaxBytes))})
	}
	res.Opts.AutoApproveFunc = f
}

func evalMessage(err *runError) string {
	switch err.kind {
	case errDeadline:
		return "frontmatter " + err.msg
	case errLua:
		return "Lua error: " + err.msg
	}
	return err.msg
}

// Decisions returned by Func.Call.
const (
	DecisionApprove         = "approve"
	DecisionRequireApproval = "require_approval"
	DecisionDeny            = "deny"
	DecisionPass            = ""
)

// Func is an auto_approve function defined by a frontmatter. It stays in the
// frontmatter's VM and can be called after Evaluate returned, from any
// goroutine: calls are serialised.
type Func struct {
	vm   *vm
	fn   *lua.LFunction
	line int
}

// Line is the buffer line where the function was defined (for provenance).
func (f *Func) Line() int { return f.line }

// Call calls the function as fn(tool_name, input, ctx) and maps what it
// returns: true → "approve", false → "require_approval", "deny" → "deny",
// nil (or nothing) → "" (pass to the next resolver). Any other value, a Lua
// error, the deadline or the memory bound is an error; the approval chain
// logs it and skips the resolver. input and callCtx are converted to Lua
// tables (JSON-like values: maps, slices, strings, numbers, bools, nil),
// within Limits.MaxValues and MaxBytes.
//
// A call takes at most CallDeadline, or less when ctx's deadline is earlier
// (then the error wraps ctx's error). When ctx carries a Budget (WithBudget),
// the call also stops when the budget runs out, the time it took is charged
// to it, and once it is used up Call fails at once with an error wrapping
// ErrBudget, without entering the VM.
func (f *Func) Call(ctx context.Context, toolName string, input map[string]any, callCtx map[string]any) (decision string, err error) {
	if f == nil || f.vm == nil {
		return "", errors.New("frontmatter: no auto_approve function")
	}
	b := BudgetFrom(ctx)
	if b != nil && b.Remaining() == 0 {
		return "", f.budgetError()
	}
	v := f.vm
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.broken {
		return "", fmt.Errorf("auto_approve function (line %d) is disabled after an earlier internal or memory error", f.line)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("auto_approve function (line %d): %w", f.line, err)
	}
	limit, byBudget := v.limits.CallDeadline, false
	if b != nil {
		// Admitted after waiting for the VM: what is left now counts.
		left, ok := b.start()
		if !ok {
			return "", f.budgetError()
		}
		if left < limit {
			limit, byBudget = left, true
		}
		start := time.Now()
		defer func() { b.spend(time.Since(start)) }()
	}
	defer func() {
		if p := recover(); p != nil {
			v.broken = true
			decision, err = "", fmt.Errorf("auto_approve function (line %d): internal error: %v", f.line, p)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// stopped explains a run or conversion that ended because a context
	// was done: the caller's, the budget's or the call's own deadline.
	stopped := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("auto_approve function (line %d): %w", f.line, context.Cause(ctx))
		}
		if byBudget {
			return fmt.Errorf("auto_approve function (line %d): stopped after %v: %w", f.line, limit, ErrBudget)
		}
		return fmt.Errorf("auto_approve function (line %d): did not finish within %v (an endless loop or a pathological pattern?)", f.line, limit)
	}

	L := v.L
	conv := &toLua{budget: newBudget(v.limits), L: L}
	conv.ctx = cctx
	in, err := conv.convert(input, 0)
	var cx lua.LValue
	if err == nil {
		cx, err = conv.convert(callCtx, 0)
	}
	if err != nil {
		if ce, ok := err.(*convError); ok && ce.kind == convDeadline {
			return "", stopped()
		}
		return "", fmt.Errorf("auto_approve function (line %d): cannot pass the tool input: %s", f.line, describeConvError(err))
	}
	ret, rerr := v.run1(cctx, limit, f.fn, lua.LString(toolName), in, cx)
	if size := v.retainedSize(v.limits.MaxBytes, f.fn); size > v.limits.MaxBytes {
		v.broken = true
		return "", fmt.Errorf("auto_approve function (line %d): memory limit exceeded: it keeps more than %s of state; disabled for this buffer",
			f.line, formatSize(v.limits.MaxBytes))
	}
	if rerr != nil {
		if rerr.kind == errCanceled || rerr.kind == errDeadline {
			return "", stopped()
		}
		msg := rerr.msg
		if rerr.line > 0 {
			msg = fmt.Sprintf("line %d: %s", v.bufferLine(rerr.line), msg)
		}
		return "", fmt.Errorf("auto_approve function (line %d): %s", f.line, msg)
	}
	switch r := ret.(type) {
	case *lua.LNilType:
		return DecisionPass, nil
	case lua.LBool:
		if r {
			return DecisionApprove, nil
		}
		return DecisionRequireApproval, nil
	case lua.LString:
		if r == "deny" {
			return DecisionDeny, nil
		}
		return "", fmt.Errorf("auto_approve function (line %d) returned the string %q; want true, false, \"deny\" or nil", f.line, clip(string(r)))
	}
	return "", fmt.Errorf("auto_approve function (line %d) returned a %s; want true, false, \"deny\" or nil", f.line, ret.Type().String())
}

func (f *Func) budgetError() error {
	return fmt.Errorf("auto_approve function (line %d) not called: %w", f.line, ErrBudget)
}
