package frontmatter

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// VM sizing. gopher-lua's defaults (a 256-frame stack, a 5120-slot registry)
// cost more to allocate than a frontmatter needs; these are set deliberately:
//   - callStackSize bounds recursion: f() calling f() fails with "stack
//     overflow" after this many frames, well inside Go's own stack;
//   - the registry (the value stack) grows in big steps so that filling it is
//     not quadratic, up to registryMaxSize slots (1 MiB).
const (
	callStackSize    = 200
	registrySize     = 1024
	registryGrowStep = 4096
	registryMaxSize  = 1 << 16
)

// vm is one sandboxed gopher-lua state. It lives for one evaluation, or as
// long as a Result that holds a stored function.
type vm struct {
	// mu serialises every use of L after the evaluation (Func.Call).
	mu        sync.Mutex
	L         *lua.LState
	env       *lua.LTable
	limits    Limits
	startLine int
	// allocated is what the current run charged (see charge).
	allocated int
	// broken is set when a run panicked in Go or the kept state grew past
	// MaxBytes; a broken VM refuses further calls.
	broken bool
	// es is the flemma.opt state of the evaluation; frozen afterwards.
	es *evalState
	// proxies caches one userdata per schema node, so that
	// flemma.opt.tools == flemma.opt.tools.
	proxies map[*node]*lua.LUserData
	proxyMT *lua.LTable
	methods map[string]*lua.LFunction
	// builtins are the globals present before the chunk ran: not variables.
	builtins map[string]bool
	walker   *sizeWalker
}

func newVM(limits Limits, startLine int, es *evalState) *vm {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    callStackSize,
		RegistrySize:     registrySize,
		RegistryGrowStep: registryGrowStep,
		RegistryMaxSize:  registryMaxSize,
	})
	// No library is opened into gopher-lua's own globals table: the chunk
	// runs in env, which holds only the sandbox's whitelist.
	v := &vm{L: L, limits: limits, startLine: startLine, es: es}
	env := L.NewTable()
	v.env = env
	v.openLibs(env)
	v.openFlemma(env)
	v.builtins = make(map[string]bool, 24)
	env.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); ok {
			v.builtins[string(s)] = true
		}
	})
	// Reading an undefined global is an error, as in the Lua plugin.
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Undefined variable '%s'", L.Get(2).String())
		return 0
	}))
	env.Metatable = mt
	return v
}

// run calls fn with args under ctx, which carries the deadline (limit is its
// length, for messages), and returns the error, if any, as a runError. It
// never panics.
func (v *vm) run(ctx context.Context, limit time.Duration, fn *lua.LFunction, nret int, args ...lua.LValue) (err *runError) {
	L := v.L
	v.allocated = 0
	L.SetContext(ctx)
	defer L.RemoveContext()
	defer func() {
		if p := recover(); p != nil {
			v.broken = true
			err = &runError{kind: errInternal, msg: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	if e := L.PCall(len(args), nret, nil); e != nil {
		return v.toRunError(ctx, limit, e)
	}
	return nil
}

// run1 is run for a function with one result, which it returns.
func (v *vm) run1(ctx context.Context, limit time.Duration, fn *lua.LFunction, args ...lua.LValue) (lua.LValue, *runError) {
	if err := v.run(ctx, limit, fn, 1, args...); err != nil {
		return lua.LNil, err
	}
	ret := v.L.Get(-1)
	v.L.Pop(1)
	return ret, nil
}

// runError is a failed run: message and 1-based code line (0 = unknown).
type runError struct {
	kind errKind
	line int
	msg  string
}

type errKind uint8

const (
	errLua      errKind = iota // a Lua error: syntax, runtime, error()
	errDeadline                // the deadline passed
	errCanceled                // the caller's context was cancelled
	errMemory                  // the memory bound was hit
	errInternal                // a Go panic (the VM is marked broken)
)

func (e *runError) Error() string { return e.msg }

var (
	errPosition  = regexp.MustCompile(`^` + chunkName + `:(\d+):\s*`)
	errTraceLine = regexp.MustCompile(`(?m)^\s*` + chunkName + `:(\d+):`)
)

func (v *vm) toRunError(ctx context.Context, deadline time.Duration, e error) *runError {
	var ae *lua.ApiError
	if !errors.As(e, &ae) {
		return &runError{kind: errInternal, msg: e.Error()}
	}
	if ae.Type == lua.ApiErrorPanic {
		v.broken = true
	}
	var msg string
	line := 0
	switch obj := ae.Object.(type) {
	case lua.LString:
		msg = string(obj)
	case *lua.LTable:
		// error({...}): use a message or error field if there is one.
		for _, k := range []string{"message", "error", "msg"} {
			if s, ok := obj.RawGetString(k).(lua.LString); ok {
				msg = string(s)
				break
			}
		}
		if msg == "" {
			msg = "error called with a table value"
		}
	case nil:
		msg = ae.Error()
	default:
		msg = "error called with a " + obj.Type().String() + " value"
	}
	msg = clipMessage(msg)
	// Strip every "frontmatter:N:" prefix (error() adds one per level), keep
	// the first line number.
	for {
		m := errPosition.FindStringSubmatch(msg)
		if m == nil {
			break
		}
		if line == 0 {
			line, _ = strconv.Atoi(m[1])
		}
		msg = msg[len(m[0]):]
	}
	if line == 0 {
		// error(obj) and error(msg, 0) carry no position: take the innermost
		// frontmatter frame of the traceback.
		if m := errTraceLine.FindStringSubmatch(ae.StackTrace); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.Canceled) {
			return &runError{kind: errCanceled, line: line, msg: "cancelled"}
		}
		return &runError{kind: errDeadline, line: line,
			msg: fmt.Sprintf("did not finish within %v (an endless loop or a pathological pattern?)", deadline)}
	}
	switch {
	case ae.Type == lua.ApiErrorPanic:
		return &runError{kind: errInternal, line: line, msg: "internal error: " + msg}
	case strings.HasPrefix(msg, "memory limit exceeded"):
		return &runError{kind: errMemory, line: line, msg: msg}
	case strings.HasPrefix(msg, "stack overflow"):
		msg = "stack overflow (recursion deeper than " + strconv.Itoa(callStackSize) + " calls)"
	case strings.Contains(msg, "registry overflow"):
		msg = "too many values on the Lua stack"
	}
	return &runError{kind: errLua, line: line, msg: msg}
}

// bufferLine maps a 1-based code line to the buffer line.
func (v *vm) bufferLine(codeLine int) int {
	if codeLine <= 0 {
		return v.startLine
	}
	return v.startLine + codeLine
}

// currentLine is the code line of the innermost running Lua function (the
// line of the statement that called into Go), or 0.
func currentLine(L *lua.LState) int {
	for level := 0; level < 8; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("l", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
			return dbg.CurrentLine
		}
	}
	return 0
}

// exportVars converts the globals the chunk created into template variables,
// all of them under one conversion budget (see convert.go). When a bound is
// hit it returns no variables and an error diagnostic at the first line of
// chunk that assigns the variable that hit it.
func (v *vm) exportVars(chunk *lua.FunctionProto) (map[string]any, *Diagnostic) {
	names := make([]string, 0, 8)
	v.env.ForEach(func(k, _ lua.LValue) {
		if name, ok := k.(lua.LString); ok && !v.builtins[string(name)] {
			names = append(names, string(name))
		}
	})
	// In order, so that the variable blamed for a shared bound is always
	// the same one.
	slices.Sort(names)
	vars := make(map[string]any, len(names))
	c := &toGo{budget: newBudget(v.limits)}
	for _, name := range names {
		g, _, ok, err := c.convert(v.env.RawGetString(name), 0)
		if err != nil {
			line := v.bufferLine(assignmentLine(chunk, name))
			return map[string]any{}, &Diagnostic{Line: line, Severity: SeverityError,
				Message: fmt.Sprintf("template variable '%s': %s", clip(name), describeVarError(err))}
		}
		if ok {
			vars[name] = g
		}
	}
	return vars, nil
}

// assignmentLine returns the code line of the first assignment to global
// name in p or the functions it defines, or 0. It reads the compiled code
// (only when a diagnostic needs it), so evaluations pay nothing for it.
func assignmentLine(p *lua.FunctionProto, name string) int {
	if p == nil {
		return 0
	}
	for pc, inst := range p.Code {
		if int(inst>>26) != lua.OP_SETGLOBAL {
			continue
		}
		bx := int(inst & 0x3ffff)
		if bx < len(p.Constants) && pc < len(p.DbgSourcePositions) {
			if s, ok := p.Constants[bx].(lua.LString); ok && string(s) == name {
				return p.DbgSourcePositions[pc]
			}
		}
	}
	for _, c := range p.FunctionPrototypes {
		if line := assignmentLine(c, name); line > 0 {
			return line
		}
	}
	return 0
}

func describeVarError(err error) string {
	ce, ok := err.(*convError)
	if !ok {
		return err.Error()
	}
	switch ce.kind {
	case convValues:
		return "too large: the template variables hold " + ce.Error()
	case convBytes:
		return "too large: the template variables are " + ce.Error()
	}
	return ce.Error()
}

// retainedSize estimates the memory reachable from the VM's globals and the
// given functions, stopping once it exceeds limit. A kept VM (one holding an
// auto_approve function) is checked after every run, so that a function that
// appends to an upvalue on every call cannot grow the host without bound.
func (v *vm) retainedSize(limit int, roots ...lua.LValue) int {
	if v.walker == nil {
		v.walker = &sizeWalker{tables: map[*lua.LTable]struct{}{}, funcs: map[*lua.LFunction]struct{}{}}
	}
	w := v.walker
	w.limit, w.size = limit, 0
	clear(w.tables)
	clear(w.funcs)
	w.walk(v.env)
	for _, r := range roots {
		w.walk(r)
	}
	return w.size
}

// sizeWalker estimates sizes in gopher-lua's terms (an interface slot per
// array entry, a key and a value per hash entry). It is reused between walks
// to keep a call of a stored function cheap.
type sizeWalker struct {
	limit, size int
	tables      map[*lua.LTable]struct{}
	funcs       map[*lua.LFunction]struct{}
}

func (w *sizeWalker) walk(val lua.LValue) {
	if w.size > w.limit {
		return
	}
	switch x := val.(type) {
	case lua.LString:
		w.size += 16 + len(x)
	case *lua.LTable:
		if _, ok := w.tables[x]; ok {
			return
		}
		w.tables[x] = struct{}{}
		w.size += 64 + slotBytes*x.MaxN()
		x.ForEach(func(k, e lua.LValue) {
			if w.size > w.limit {
				return
			}
			w.size += 2 * slotBytes
			w.walk(k)
			w.walk(e)
		})
	case *lua.LFunction:
		w.size += 64
		if len(x.Upvalues) == 0 { // every library function: nothing to follow
			return
		}
		if _, ok := w.funcs[x]; ok {
			return
		}
		w.funcs[x] = struct{}{}
		for _, uv := range x.Upvalues {
			if uv != nil {
				w.size += 32
				w.walk(uv.Value())
			}
		}
	case *lua.LUserData:
		w.size += 64
	default:
		w.size += slotBytes
	}
}
