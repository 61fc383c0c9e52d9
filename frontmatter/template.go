package frontmatter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Expand evaluates the expression of a {{ expr }} in a user message and
// returns its value as text. It runs in a fresh VM of the frontmatter's
// sandbox (the same whitelist, rewrites and limits: Limits.Deadline, the
// memory and value bounds), whose globals are the template variables of the
// buffer's frontmatter (Result.Vars). A string, number or boolean is
// written as Lua's tostring would; nil, a table or an error is an error.
func (e *Evaluator) Expand(vars map[string]any, expr string) (out string, err error) {
	return e.ExpandContext(context.Background(), vars, expr)
}

// ErrTemplateBudget: the caller's time for templates (the press's budget,
// ExpandContext's ctx) was used up.
var ErrTemplateBudget = errors.New("the time for templates in this send is used up (send.budget.template_ms)")

// ExpandContext is Expand within ctx: the expression runs until its own
// deadline (Limits.Deadline) or ctx's, whichever comes first — a press's
// budget for all its templates travels in ctx. When ctx ends first the
// error is ErrTemplateBudget.
func (e *Evaluator) ExpandContext(parent context.Context, vars map[string]any, expr string) (out string, err error) {
	if parent.Err() != nil {
		return "", ErrTemplateBudget
	}
	defer func() {
		if err != nil && parent.Err() != nil {
			out, err = "", ErrTemplateBudget
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("internal error: %v", p)
		}
	}()
	code := strings.TrimSpace(expr)
	if code == "" {
		return "", errors.New("empty expression")
	}
	if len(code) > MaxCodeBytes {
		return "", fmt.Errorf("expression too large (%d bytes)", len(code))
	}
	c, err := e.compiledChunk("return (" + code + "\n)")
	if err != nil {
		var ce *codeError
		if errors.As(err, &ce) {
			return "", errors.New(ce.msg)
		}
		return "", err
	}
	es := newEvalState(Setup{}, "flemma.opt", 0, e.limits)
	v := newVM(e.limits, 0, es)
	defer v.L.Close()
	ctx, cancel := context.WithTimeout(parent, e.limits.Deadline)
	defer cancel()
	conv := &toLua{budget: newBudget(e.limits), L: v.L}
	conv.ctx = ctx
	for name, val := range vars {
		lv, err := conv.convert(val, 0)
		if err != nil {
			return "", fmt.Errorf("template variable '%s': %s", clip(name), describeConvError(err))
		}
		v.env.RawSetString(name, lv)
	}
	fn := v.L.NewFunctionFromProto(c.proto)
	fn.Env = v.env
	ret, rerr := v.run1(ctx, e.limits.Deadline, fn)
	if rerr != nil {
		return "", errors.New(clipMessage(evalMessage(rerr)))
	}
	switch r := ret.(type) {
	case lua.LString:
		return string(r), nil
	case lua.LBool:
		return strconv.FormatBool(bool(r)), nil
	case lua.LNumber:
		f := float64(r)
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return strconv.FormatInt(int64(f), 10), nil
		}
		return strconv.FormatFloat(f, 'g', 14, 64), nil
	case *lua.LNilType:
		return "", errors.New("the expression is nil")
	}
	return "", fmt.Errorf("the expression is a %s; a template writes strings, numbers and booleans", ret.Type().String())
}
