package builtin

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/tools"
	lua "github.com/yuin/gopher-lua"
)

// CalculatorInput is the input of the calculator tools.
type CalculatorInput struct {
	Expression string  `json:"expression" desc:"A Lua arithmetic expression, e.g. 2^10 or math.sqrt(16)"`
	Label      *string `json:"label" desc:"A short label shown in the preview (optional)"`
}

// CalculatorAsyncInput is the input of calculator_async.
type CalculatorAsyncInput struct {
	Expression string   `json:"expression" desc:"A Lua arithmetic expression, e.g. 2^10 or math.sqrt(16)"`
	Delay      *float64 `json:"delay" desc:"Milliseconds to wait before answering (default 1000)"`
	Label      *string  `json:"label" desc:"A short label shown in the preview (optional)"`
}

// Calculator is the built-in calculator: the expression is evaluated with Lua
// number semantics (2^10 → 1024, 15/3 → 5) in a VM whose only global is math.
func Calculator() tools.Tool {
	return tools.Typed(tools.Spec{
		Name:        "calculator",
		Description: "Evaluate an arithmetic expression with Lua semantics. The math library is available (math.sqrt, math.floor, math.pi, ...).",
		Tags:        []string{"math"},
		Enabled:     true,
		Timeout:     5 * time.Second,
	}, func(ctx context.Context, _ tools.Call, in CalculatorInput) (tools.Output, error) {
		v, err := Evaluate(ctx, in.Expression)
		if err != nil {
			return tools.Output{}, err
		}
		return tools.Output{Text: v}, nil
	})
}

// CalculatorAsync is the calculator that answers after a delay; cancelling
// the call stops the wait.
func CalculatorAsync() tools.Tool {
	return tools.Typed(tools.Spec{
		Name:        "calculator_async",
		Description: "Evaluate an arithmetic expression after a delay (for testing asynchronous tools).",
		Tags:        []string{"math", "test"},
		Async:       true,
		Enabled:     false,
	}, func(ctx context.Context, _ tools.Call, in CalculatorAsyncInput) (tools.Output, error) {
		delay := 1000.0
		if in.Delay != nil {
			delay = *in.Delay
		}
		if delay < 0 {
			return tools.Output{}, errors.New("delay must not be negative")
		}
		select {
		case <-time.After(time.Duration(delay * float64(time.Millisecond))):
		case <-ctx.Done():
			return tools.Output{}, ctx.Err()
		}
		v, err := Evaluate(ctx, in.Expression)
		if err != nil {
			return tools.Output{}, err
		}
		return tools.Output{Text: v}, nil
	})
}

// Evaluate computes a calculator expression. The VM has only the math
// library, so the expression can compute but can reach nothing else; ctx
// bounds the time it may take.
func Evaluate(ctx context.Context, expr string) (string, error) {
	if strings.TrimSpace(expr) == "" {
		return "", tools.Failf("No expression provided")
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 200, RegistrySize: 1024 * 16})
	defer L.Close()
	lua.OpenMath(L)
	// OpenMath leaves only "math" as a global; the base library (print,
	// load, ...) is never opened.
	fn, err := L.LoadString("return " + expr)
	if err != nil {
		return "", tools.Failf("Invalid expression: %s", cleanLuaErr(err))
	}
	if len(fn.Proto.FunctionPrototypes) > 0 {
		// A function literal is the only way to get loops and statements
		// into an expression; a calculator needs neither.
		return "", tools.Failf("Invalid expression: function definitions are not allowed")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	L.SetContext(ctx)
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		if ctx.Err() != nil {
			return "", tools.Failf("Evaluation failed: the expression took too long")
		}
		return "", tools.Failf("Evaluation failed: %s", cleanLuaErr(err))
	}
	ret := L.Get(-1)
	switch ret.Type() {
	case lua.LTNumber:
		return lua.LVAsString(ret), nil
	case lua.LTNil:
		return "", tools.Failf("Evaluation failed: the expression has no value (unknown name? functions live in math, e.g. math.sqrt)")
	case lua.LTBool, lua.LTString:
		return ret.String(), nil
	default:
		return "", tools.Failf("Evaluation failed: the result is a %s, not a number", ret.Type())
	}
}

// cleanLuaErr drops gopher-lua's chunk name and stack traceback so the model
// sees only the message.
func cleanLuaErr(err error) string {
	msg := err.Error()
	var ae *lua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		msg = ae.Object.String()
	}
	if i := strings.Index(msg, "\nstack traceback:"); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.TrimPrefix(msg, "<string>:")
	// "<string> line:1(column:5) near 'x':   syntax error" → keep the tail.
	if i := strings.Index(msg, "<string> "); i >= 0 {
		msg = msg[i+len("<string> "):]
	}
	return strings.TrimSpace(msg)
}
