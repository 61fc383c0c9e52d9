package frontmatter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// PieceKind says what a Piece of a template is.
type PieceKind uint8

const (
	PieceText PieceKind = iota // literal text
	PieceExpr                  // {{ expr }}: its value is written
	PieceCode                  // {% statements %}: a fragment of the template's Lua chunk
	PieceSlot                  // something the caller writes itself (a file reference) when the template reaches it
)

// Piece is one part of a template, in order. Text is the literal text of a
// PieceText and the Lua code of a PieceExpr or PieceCode; Line is the
// buffer line it starts on (for messages).
type Piece struct {
	Kind PieceKind
	Text string
	Line int
}

// Out is one thing a rendered template wrote: Text, or (Slot ≥ 0) the
// index of the PieceSlot it reached.
type Out struct {
	Text string
	Slot int
}

// IncludeFunc reads the file include(path) names, for the template of the
// file from ("" = the chat itself), and returns its name (the from of the
// templates it includes in turn) and its template cut into pieces (no
// PieceSlot). It is where the caller confines what may be read.
type IncludeFunc func(from, path string) (name string, pieces []Piece, err error)

// Limits of the templates of one send beyond the VM's own.
const (
	MaxIncludes     = 64 // include() calls in one send
	MaxIncludeDepth = 8  // files including files
)

// ErrTemplateBytes: the templates of a send wrote more than the Renderer's
// byte budget.
var ErrTemplateBytes = errors.New("template output budget exceeded")

// RenderError is a template that failed: the buffer line and what went wrong.
type RenderError struct {
	Line int
	Msg  string
	Err  error // ErrTemplateBudget or ErrTemplateBytes when one of those, else nil
}

func (e *RenderError) Error() string { return e.Msg }
func (e *RenderError) Unwrap() error { return e.Err }

// Renderer renders the templates of one send — each user message's text,
// {{ expr }} and {% statements %} as one Lua chunk — in one VM of the
// frontmatter's sandbox (the same whitelist, rewrites and limits as
// Evaluate and Expand), whose globals are the frontmatter's variables.
// Globals a {% %} block assigns stay for the later messages of the send.
// include(path [, vars]) renders a template file in a fresh environment
// that holds only vars (and the built-ins) and returns its text. A
// Renderer is used by one goroutine; Close releases it.
type Renderer struct {
	e        *Evaluator
	v        *vm
	include  IncludeFunc
	maxBytes int
	written  int
	includes int
	files    []string           // the including files, innermost last ("" = the chat)
	sinks    []*renderSink      // the running templates' outputs, innermost last (for print)
	parent   context.Context    // the running template's ctx
	ctx      context.Context    // the running piece's: parent and the VM's deadline
	cancel   context.CancelFunc // ctx's
	overflow bool
}

// NewRenderer prepares a Renderer over vars; the templates of a send may
// write maxBytes bytes together. include may be nil (include() is then an
// error).
func (e *Evaluator) NewRenderer(vars map[string]any, include IncludeFunc, maxBytes int) (*Renderer, error) {
	es := newEvalState(Setup{}, "flemma.opt", 0, e.limits)
	v := newVM(e.limits, 0, es)
	r := &Renderer{e: e, v: v, include: include, maxBytes: maxBytes, files: []string{""}}
	conv := &toLua{budget: newBudget(e.limits), L: v.L}
	conv.ctx = context.Background()
	for name, val := range vars {
		lv, err := conv.convert(val, 0)
		if err != nil {
			v.L.Close()
			return nil, fmt.Errorf("template variable '%s': %s", clip(name), describeConvError(err))
		}
		v.env.RawSetString(name, lv)
	}
	r.addFunctions(v.env)
	return r, nil
}

// Close releases the Renderer's VM.
func (r *Renderer) Close() { r.v.L.Close() }

// Render runs one template within ctx (a press's budget for all its
// templates) and the VM's deadline, and returns what it wrote in order.
// A failure is a *RenderError on the line of the piece that failed.
func (r *Renderer) Render(parent context.Context, pieces []Piece) (outs []Out, err error) {
	defer func() {
		if p := recover(); p != nil {
			outs, err = nil, &RenderError{Line: firstLine(pieces), Msg: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	if parent.Err() != nil {
		return nil, &RenderError{Line: firstLine(pieces), Msg: ErrTemplateBudget.Error(), Err: ErrTemplateBudget}
	}
	if r.v.broken {
		return nil, &RenderError{Line: firstLine(pieces), Msg: "the template VM broke in an earlier message of this send"}
	}
	fn, lines, rerr := r.chunk(pieces, r.v.env)
	if rerr != nil {
		return nil, rerr
	}
	sink := &renderSink{r: r, pieces: pieces}
	r.sinks = append(r.sinks[:0], sink)
	if e := r.exec(parent, fn, r.v.L.NewFunction(sink.out)); e != nil {
		return nil, r.failure(parent, e, lines, pieces)
	}
	sink.endText()
	return sink.outs, nil
}

// exec runs a template's chunk under parent. Each expression and block
// has the VM's deadline from when it starts (the chunk calls
// __flemma_at before each, see chunk), as each {{ }} had alone; parent (a
// press's budget) bounds them all, loops included.
func (r *Renderer) exec(parent context.Context, fn, write *lua.LFunction) (err *runError) {
	L := r.v.L
	r.v.allocated = 0
	r.parent = parent
	r.startPiece()
	defer func() {
		L.RemoveContext()
		r.cancel()
	}()
	defer func() {
		if p := recover(); p != nil {
			r.v.broken = true
			err = &runError{kind: errInternal, msg: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	L.Push(fn)
	L.Push(write)
	L.Push(L.NewFunction(func(*lua.LState) int { r.startPiece(); return 0 }))
	if e := L.PCall(2, 0, nil); e != nil {
		return r.v.toRunError(r.ctx, r.e.limits.Deadline, e)
	}
	return nil
}

// startPiece starts the deadline of the next expression or block.
func (r *Renderer) startPiece() {
	if r.cancel != nil {
		r.cancel()
	}
	r.ctx, r.cancel = context.WithTimeout(r.parent, r.e.limits.Deadline)
	r.v.L.SetContext(r.ctx)
}

// failure turns a failed run into a RenderError on its buffer line.
func (r *Renderer) failure(parent context.Context, e *runError, lines []int, pieces []Piece) *RenderError {
	line := firstLine(pieces)
	if e.line > 0 && e.line <= len(lines) {
		line = lines[e.line-1]
	}
	switch {
	case r.overflow:
		return &RenderError{Line: line, Msg: ErrTemplateBytes.Error(), Err: ErrTemplateBytes}
	case parent.Err() != nil:
		return &RenderError{Line: line, Msg: ErrTemplateBudget.Error(), Err: ErrTemplateBudget}
	}
	return &RenderError{Line: line, Msg: clipMessage(evalMessage(e))}
}

// chunk compiles pieces into one function of env that takes the writer as
// its argument, and maps each of the chunk's lines (1-based, index+1) to
// its piece's buffer line.
func (r *Renderer) chunk(pieces []Piece, env *lua.LTable) (*lua.LFunction, []int, *RenderError) {
	var b strings.Builder
	lines := []int{firstLine(pieces)}
	b.WriteString("local __flemma_write, __flemma_at = ...\n")
	for i, p := range pieces {
		var code string
		switch p.Kind {
		case PieceText, PieceSlot:
			code = "__flemma_write(" + strconv.Itoa(i) + ")\n"
		case PieceExpr:
			if strings.TrimSpace(p.Text) == "" {
				return nil, nil, &RenderError{Line: p.Line, Msg: "empty expression"}
			}
			code = "__flemma_at(); __flemma_write(" + strconv.Itoa(i) + ", (" + p.Text + "\n))\n"
		case PieceCode:
			code = "__flemma_at(); " + p.Text + "\n"
		}
		for n := range strings.Count(code, "\n") {
			lines = append(lines, p.Line+n) // a multi-line piece counts from its first line
		}
		b.WriteString(code)
	}
	code := b.String()
	if len(code) > MaxCodeBytes {
		return nil, nil, &RenderError{Line: firstLine(pieces), Msg: fmt.Sprintf("template too large (%d bytes of code)", len(code))}
	}
	c, err := r.e.compiledChunk(code)
	if err != nil {
		var ce *codeError
		if errors.As(err, &ce) {
			line := firstLine(pieces)
			switch {
			case ce.line > len(lines): // the end of the chunk: a block left open
				line = lines[len(lines)-1]
			case ce.line > 0:
				line = lines[ce.line-1]
			}
			return nil, nil, &RenderError{Line: line, Msg: strings.Replace(ce.msg, "the end of the frontmatter", "the end of the template (a block not closed?)", 1)}
		}
		return nil, nil, &RenderError{Line: firstLine(pieces), Msg: err.Error()}
	}
	fn := r.v.L.NewFunctionFromProto(c.proto)
	fn.Env = env
	return fn, lines, nil
}

func firstLine(pieces []Piece) int {
	if len(pieces) == 0 {
		return 0
	}
	return pieces[0].Line
}

// renderSink collects what one template writes.
type renderSink struct {
	r      *Renderer
	pieces []Piece
	outs   []Out
	run    strings.Builder  // the text written since the last slot
	text   *strings.Builder // when set (an included file), everything goes here as text
}

// endText closes the current run of text into outs.
func (s *renderSink) endText() {
	if s.run.Len() > 0 {
		s.outs = append(s.outs, Out{Text: s.run.String(), Slot: -1})
		s.run.Reset()
	}
}

// out is __flemma_write(i [, value]): the text or slot of piece i, or the
// value of its expression.
func (s *renderSink) out(L *lua.LState) int {
	i := L.CheckInt(1)
	if i < 0 || i >= len(s.pieces) {
		L.RaiseError("no such template piece")
	}
	p := s.pieces[i]
	switch {
	case p.Kind == PieceSlot:
		s.endText()
		s.outs = append(s.outs, Out{Slot: i})
	case L.GetTop() >= 2:
		v, err := templateValue(L.Get(2))
		if err != nil {
			L.RaiseError("%s", err.Error())
		}
		s.write(L, v)
	default:
		s.write(L, p.Text)
	}
	return 0
}

// write appends text within the send's byte budget.
func (s *renderSink) write(L *lua.LState, text string) {
	if text == "" {
		return
	}
	if s.text != nil {
		if s.text.Len()+len(text) > s.r.maxBytes {
			s.r.overflow = true
			L.RaiseError("%s", ErrTemplateBytes.Error())
		}
		s.text.WriteString(text)
		return
	}
	s.r.written += len(text)
	if s.r.written > s.r.maxBytes {
		s.r.overflow = true
		L.RaiseError("%s", ErrTemplateBytes.Error())
	}
	s.run.WriteString(text)
}

// templateValue is a value as a template writes it: strings, numbers and
// booleans (as Lua's tostring); nil or a table is an error.
func templateValue(v lua.LValue) (string, error) {
	switch r := v.(type) {
	case lua.LString:
		return string(r), nil
	case lua.LBool, lua.LNumber:
		return formatScalar(r), nil
	case *lua.LNilType:
		return "", errors.New("the expression is nil")
	}
	return "", fmt.Errorf("the expression is a %s; a template writes strings, numbers and booleans", v.Type().String())
}

// addFunctions puts include() and a print() that writes into the output
// into env.
func (r *Renderer) addFunctions(env *lua.LTable) {
	L := r.v.L
	env.RawSetString("include", L.NewFunction(r.includeFn))
	env.RawSetString("print", L.NewFunction(func(L *lua.LState) int {
		s := r.sinks[len(r.sinks)-1]
		parts := make([]string, L.GetTop())
		for i := range parts {
			v := L.Get(i + 1)
			if t, err := templateValue(v); err == nil {
				parts[i] = t
			} else {
				parts[i] = v.String()
			}
		}
		s.write(L, strings.Join(parts, "\t")+"\n")
		return 0
	}))
}

// includeFn is include(path [, vars]).
func (r *Renderer) includeFn(L *lua.LState) int {
	path := L.CheckString(1)
	var vars *lua.LTable
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		vars = L.CheckTable(2)
	}
	if r.include == nil {
		L.RaiseError("include() is not available here")
	}
	if r.includes++; r.includes > MaxIncludes {
		L.RaiseError("more than %d include() calls in one send", MaxIncludes)
	}
	if len(r.files) > MaxIncludeDepth {
		L.RaiseError("include('%s'): files include each other deeper than %d (does a file include itself?)", clip(path), MaxIncludeDepth)
	}
	name, pieces, err := r.include(r.files[len(r.files)-1], path)
	if err != nil {
		L.RaiseError("include('%s'): %s", clip(path), err.Error())
	}
	// A fresh environment: the built-ins and the variables passed.
	env := L.NewTable()
	r.v.openLibs(env)
	r.addFunctions(env)
	if vars != nil {
		vars.ForEach(func(k, v lua.LValue) {
			if s, ok := k.(lua.LString); ok {
				env.RawSetString(string(s), v)
			}
		})
	}
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Undefined variable '%s'", L.Get(2).String())
		return 0
	}))
	env.Metatable = mt
	fn, lines, rerr := r.chunk(pieces, env)
	if rerr != nil {
		L.RaiseError("include('%s') line %d: %s", clip(path), rerr.Line, rerr.Msg)
	}
	var text strings.Builder
	sink := &renderSink{r: r, pieces: pieces, text: &text}
	r.files = append(r.files, name)
	r.sinks = append(r.sinks, sink)
	defer func() {
		r.files = r.files[:len(r.files)-1]
		r.sinks = r.sinks[:len(r.sinks)-1]
	}()
	L.Push(fn)
	L.Push(L.NewFunction(sink.out))
	L.Push(L.NewFunction(func(*lua.LState) int { r.startPiece(); return 0 }))
	if e := L.PCall(2, 0, nil); e != nil {
		re := r.v.toRunError(r.ctx, r.e.limits.Deadline, e)
		if r.overflow || r.ctx.Err() != nil {
			L.RaiseError("%s", re.msg)
		}
		line := 0
		if re.line > 0 && re.line <= len(lines) {
			line = lines[re.line-1]
		}
		L.RaiseError("include('%s') line %d: %s", clip(path), line, strings.TrimPrefix(re.msg, "Lua error: "))
	}
	L.Push(lua.LString(text.String()))
	return 1
}
