package frontmatter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// chunkName is the name gopher-lua puts in front of error positions
// ("frontmatter:3: boom").
const chunkName = "frontmatter"

// Hidden globals that the rewritten chunk calls. Their names are not valid
// Lua identifiers, so frontmatter code can neither name, shadow nor replace
// them, and the sandbox exposes no way (_G, rawget, getfenv) to reach a global
// by a computed name.
const (
	hiddenConcat   = "(concat)"
	hiddenSetIndex = "(setindex)"
	hiddenKey      = "(key)"
)

// compiled is a frontmatter chunk ready to run: parsed, rewritten and
// compiled. A FunctionProto is immutable, so one can be shared by many VMs.
type compiled struct {
	proto *lua.FunctionProto
}

// codeError is a syntax or compile error at a line of the frontmatter code.
type codeError struct {
	line int // 1-based line in the code; 0 = unknown
	msg  string
}

func (e *codeError) Error() string { return e.msg }

// compile parses code, rewrites the operations whose cost gopher-lua does not
// bound (see rewriter), compiles the result and checks that no raw
// concatenation survived.
func compile(code string) (c *compiled, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, &codeError{msg: fmt.Sprintf("internal error while compiling the frontmatter: %v", p)}
		}
	}()
	chunk, err := parse.Parse(strings.NewReader(code), chunkName)
	if err != nil {
		var pe *parse.Error
		if errors.As(err, &pe) {
			line := pe.Pos.Line
			msg := pe.Message
			if line == parse.EOF {
				line = strings.Count(code, "\n") + 1
				msg += " at the end of the frontmatter"
			} else if pe.Token != "" {
				msg += fmt.Sprintf(" near '%s'", pe.Token)
			}
			return nil, &codeError{line: line, msg: "Lua " + msg}
		}
		return nil, &codeError{msg: "Lua syntax error: " + err.Error()}
	}
	if chunk == nil && strings.TrimSpace(code) != "" && err == nil {
		// parse.Parse recovers non-error panics into a nil chunk and nil error.
		return nil, &codeError{msg: "Lua syntax error"}
	}
	rw := newRewriter()
	chunk = rw.block(chunk)
	if rw.err != nil {
		return nil, rw.err
	}
	proto, err := lua.Compile(chunk, chunkName)
	if err != nil {
		var ce *lua.CompileError
		if errors.As(err, &ce) {
			return nil, &codeError{line: ce.Line, msg: "Lua compile error: " + ce.Message}
		}
		return nil, &codeError{msg: "Lua compile error: " + err.Error()}
	}
	if !concatFree(proto) {
		// Fail closed: a concatenation the rewriter missed would be an
		// unbounded allocation.
		return nil, &codeError{msg: "internal error: unbounded concatenation left in the compiled frontmatter"}
	}
	return &compiled{proto: proto}, nil
}

// concatFree reports whether no function in proto contains OP_CONCAT.
func concatFree(proto *lua.FunctionProto) bool {
	for _, inst := range proto.Code {
		if int(inst>>26) == lua.OP_CONCAT {
			return false
		}
	}
	for _, p := range proto.FunctionPrototypes {
		if !concatFree(p) {
			return false
		}
	}
	return true
}

// rewriter turns the operations whose cost depends on run-time values into
// calls of bounded Go functions, because gopher-lua runs them in one VM
// instruction that neither the deadline nor anything else can interrupt:
//
//   - a .. b .. c        becomes  (concat)(a, b, c): the result size is charged
//     against the memory budget before it is built;
//   - t[k] = v           becomes  (setindex)(t, k, v): gopher-lua stores integer
//     keys densely, so t[60000000] = 1 would allocate a gigabyte of nils;
//   - {[k] = v}          becomes  {[(key)(k)] = v} for the same reason.
//
// Assignments with a constant string key (t.name = v) and constructor
// fields with constant string or small integer keys stay as they are.
//
// The rewriter also refuses code that gopher-lua's compiler would take
// long to compile (compiling runs before the deadline starts and cannot be
// interrupted; a 64 KiB chain of additions took 8 s):
//
//   - more than maxSyntaxLevels levels of nesting (Lua 5.1's own limit,
//     "chunk has too many syntax levels"), not counting the left operand of
//     a left-associative operator, which Lua 5.1 parses in a loop;
//   - arithmetic that the compiler's constant folding would walk more than
//     maxFoldWork times: it folds the whole arithmetic subtree of every
//     arithmetic operator again, which is quadratic in a chain a+b+c+…;
//   - functions whose constants the compiler would look up more than
//     maxConstWork times: it finds a constant by scanning the constants
//     of its function so far, which is quadratic in distinct constants;
//   - more than maxFunctions functions: every compiled function keeps
//     about 18 KiB (the compiler's buffers), and compiled chunks are cached.
type rewriter struct {
	err error

	depth int
	// fold is the constant-folding work so far; arith is the size of the
	// arithmetic subtree of the expression expr() just returned.
	fold, arith int
	// consts are the constants of the function being rewritten; constWork
	// is the lookup work of all functions so far.
	consts    map[constKey]struct{}
	constWork int
	// locals counts the declarations in scope of each local name (locals
	// are registers or upvalues, not constants); declared lists them in
	// order, so that leaving a block can take its own back.
	locals   map[string]int
	declared []string
	// functions counts the function bodies.
	functions int
}

const (
	maxSyntaxLevels = 200
	maxFoldWork     = 1 << 18
	maxConstWork    = 1 << 21
	maxFunctions    = 100
)

// constKey identifies a constant as gopher-lua does: by type and value.
type constKey struct {
	s   string
	f   float64
	num bool
}

func newRewriter() *rewriter {
	return &rewriter{consts: map[constKey]struct{}{}, locals: map[string]int{}}
}

// enter counts a syntax level; false (and an error) when there are too many.
func (r *rewriter) enter(n ast.PositionHolder) bool {
	if r.err != nil {
		return false
	}
	r.depth++
	if r.depth > maxSyntaxLevels {
		r.depth--
		r.err = &codeError{line: n.Line(), msg: fmt.Sprintf("Lua error: chunk has too many syntax levels (more than %d)", maxSyntaxLevels)}
		return false
	}
	return true
}

func (r *rewriter) leave() { r.depth-- }

// constant accounts one use of a constant: the compiler scans the
// function's constants to find (or add) it.
func (r *rewriter) constant(n ast.PositionHolder, k constKey) {
	r.constWork += len(r.consts)
	r.consts[k] = struct{}{}
	if r.constWork > maxConstWork && r.err == nil {
		r.err = &codeError{line: n.Line(), msg: "Lua error: too many constants: the frontmatter is too complex to compile " +
			"(use fewer distinct strings, numbers and names in one function)"}
	}
}

func (r *rewriter) stringConstant(n ast.PositionHolder, s string) {
	r.constant(n, constKey{s: s})
}

func (r *rewriter) declare(names ...string) {
	for _, name := range names {
		r.locals[name]++
		r.declared = append(r.declared, name)
	}
}

// block rewrites a block: the locals it declares end with it.
func (r *rewriter) block(list []ast.Stmt) []ast.Stmt {
	mark := len(r.declared)
	r.stmts(list)
	r.endScope(mark)
	return list
}

func (r *rewriter) endScope(mark int) {
	for _, name := range r.declared[mark:] {
		if r.locals[name]--; r.locals[name] == 0 {
			delete(r.locals, name)
		}
	}
	r.declared = r.declared[:mark]
}

// function rewrites a function body: its own constants, its parameters.
func (r *rewriter) function(e *ast.FunctionExpr, self bool) {
	if r.functions++; r.functions > maxFunctions && r.err == nil {
		r.err = &codeError{line: e.Line(), msg: fmt.Sprintf("Lua error: too many functions (more than %d) in the frontmatter", maxFunctions)}
		return
	}
	outer := r.consts
	r.consts = map[constKey]struct{}{}
	mark := len(r.declared)
	if self {
		r.declare("self")
	}
	if e.ParList != nil {
		r.declare(e.ParList.Names...)
	}
	r.stmts(e.Stmts)
	r.endScope(mark)
	r.consts = outer
}

func (r *rewriter) fail(n ast.PositionHolder, what string) {
	if r.err == nil {
		r.err = &codeError{line: n.Line(), msg: "internal error: unsupported Lua syntax node " + what}
	}
}

func (r *rewriter) stmts(list []ast.Stmt) []ast.Stmt {
	for i, s := range list {
		list[i] = r.stmt(s)
	}
	return list
}

func (r *rewriter) exprs(list []ast.Expr) {
	for i, e := range list {
		list[i] = r.expr(e)
	}
}

func (r *rewriter) stmt(s ast.Stmt) ast.Stmt {
	if !r.enter(s) {
		return s
	}
	defer r.leave()
	switch s := s.(type) {
	case *ast.AssignStmt:
		r.exprs(s.Lhs)
		r.exprs(s.Rhs)
		return r.assign(s)
	case *ast.LocalAssignStmt:
		r.exprs(s.Exprs)
		r.declare(s.Names...)
	case *ast.FuncCallStmt:
		s.Expr = r.expr(s.Expr)
	case *ast.DoBlockStmt:
		r.block(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = r.expr(s.Condition)
		r.block(s.Stmts)
	case *ast.RepeatStmt:
		// The condition sees the block's locals.
		mark := len(r.declared)
		r.stmts(s.Stmts)
		s.Condition = r.expr(s.Condition)
		r.endScope(mark)
	case *ast.IfStmt:
		s.Condition = r.expr(s.Condition)
		r.block(s.Then)
		r.block(s.Else)
	case *ast.NumberForStmt:
		s.Init = r.expr(s.Init)
		s.Limit = r.expr(s.Limit)
		if s.Step != nil {
			s.Step = r.expr(s.Step)
		}
		mark := len(r.declared)
		r.declare(s.Name)
		r.block(s.Stmts)
		r.endScope(mark)
	case *ast.GenericForStmt:
		r.exprs(s.Exprs)
		mark := len(r.declared)
		r.declare(s.Names...)
		r.block(s.Stmts)
		r.endScope(mark)
	case *ast.FuncDefStmt:
		// function a.b.c() / function a:m(): constant string keys.
		if s.Name.Func != nil {
			s.Name.Func = r.expr(s.Name.Func)
		}
		if s.Name.Receiver != nil {
			s.Name.Receiver = r.expr(s.Name.Receiver)
		}
		if s.Name.Method != "" {
			r.stringConstant(s, s.Name.Method)
		}
		r.function(s.Func, s.Name.Method != "")
	case *ast.ReturnStmt:
		r.exprs(s.Exprs)
	case *ast.BreakStmt, *ast.LabelStmt, *ast.GotoStmt:
	default:
		r.fail(s, fmt.Sprintf("%T", s))
	}
	return s
}

// leftOperand rewrites the left operand of a left-associative operator at
// the operator's own level, as Lua 5.1 parses such chains in a loop.
func (r *rewriter) leftOperand(e ast.Expr) ast.Expr {
	r.depth--
	e = r.expr(e)
	r.depth++
	return e
}

func (r *rewriter) expr(e ast.Expr) ast.Expr {
	if e == nil {
		return nil
	}
	if !r.enter(e) {
		return e
	}
	defer r.leave()
	arith := 0
	switch e := e.(type) {
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr, *ast.Comma3Expr:
	case *ast.NumberExpr:
		if f, err := parseLuaNumber(e.Value); err == nil {
			r.constant(e, constKey{f: f, num: true})
		} else {
			r.stringConstant(e, e.Value)
		}
	case *ast.StringExpr:
		r.stringConstant(e, e.Value)
	case *ast.IdentExpr:
		if r.locals[e.Value] == 0 {
			r.stringConstant(e, e.Value) // a global: its name is a constant
		}
	case *ast.AttrGetExpr:
		e.Object = r.expr(e.Object)
		e.Key = r.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				f.Key = r.expr(f.Key)
				if !smallConstantKey(f.Key) {
					f.Key = r.hiddenCall(hiddenKey, f.Key, []ast.Expr{f.Key})
				}
			}
			f.Value = r.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		e.Func = r.expr(e.Func)
		e.Receiver = r.expr(e.Receiver)
		if e.Method != "" {
			r.stringConstant(e, e.Method)
		}
		r.exprs(e.Args)
	case *ast.LogicalOpExpr:
		e.Lhs = r.leftOperand(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		if e.Operator == "^" { // right-associative
			e.Lhs = r.expr(e.Lhs)
		} else {
			e.Lhs = r.leftOperand(e.Lhs)
		}
		lhs := r.arith
		e.Rhs = r.expr(e.Rhs)
		arith = 1 + lhs + r.arith
		r.foldWork(e, arith)
	case *ast.StringConcatOpExpr:
		var operands []ast.Expr
		r.flattenConcat(e, &operands)
		r.arith = 0
		return r.hiddenCall(hiddenConcat, e, operands)
	case *ast.UnaryMinusOpExpr:
		e.Expr = r.expr(e.Expr)
		arith = 1 + r.arith
		r.foldWork(e, arith)
	case *ast.UnaryNotOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.FunctionExpr:
		r.function(e, false)
	default:
		r.fail(e, fmt.Sprintf("%T", e))
	}
	r.arith = arith
	return e
}

// foldWork accounts the constant folding of an arithmetic operator whose
// arithmetic subtree has size nodes.
func (r *rewriter) foldWork(n ast.PositionHolder, size int) {
	r.fold += size
	if r.fold > maxFoldWork && r.err == nil {
		r.err = &codeError{line: n.Line(), msg: "Lua error: expression too complex to compile (split long chains of arithmetic)"}
	}
}

// flattenConcat collects the operands of a concatenation chain left to right
// (a .. b .. c parses as a .. (b .. c)); evaluation order is preserved. Every
// operator is a syntax level, as in Lua 5.1 (.. is right-associative).
func (r *rewriter) flattenConcat(e ast.Expr, out *[]ast.Expr) {
	if c, ok := e.(*ast.StringConcatOpExpr); ok {
		if !r.enter(c) {
			return
		}
		r.flattenConcat(c.Lhs, out)
		r.flattenConcat(c.Rhs, out)
		r.leave()
		return
	}
	*out = append(*out, r.expr(e))
}

// hiddenCall is hiddenCall, accounting the hidden global's name.
func (r *rewriter) hiddenCall(name string, pos ast.PositionHolder, args []ast.Expr) *ast.FuncCallExpr {
	r.stringConstant(pos, name)
	return hiddenCall(name, pos, args)
}

// assign rewrites an assignment whose targets include a computed key.
func (r *rewriter) assign(s *ast.AssignStmt) ast.Stmt {
	dynamic := false
	for _, l := range s.Lhs {
		if a, ok := l.(*ast.AttrGetExpr); ok && !isStringConst(a.Key) {
			dynamic = true
		}
	}
	if !dynamic {
		return s
	}
	if len(s.Lhs) == 1 && len(s.Rhs) == 1 {
		a := s.Lhs[0].(*ast.AttrGetExpr)
		call := r.hiddenCall(hiddenSetIndex, s, []ast.Expr{a.Object, a.Key, s.Rhs[0]})
		st := &ast.FuncCallStmt{Expr: call}
		setPos(st, s)
		return st
	}
	// Multiple assignment: evaluate every target object and key, then every
	// value, then assign (Lua evaluates all expressions before assigning).
	//   do local (o0),(k0),… = obj0,key0,…; local (v0),… = rhs…; … end
	var objNames []string
	var objExprs []ast.Expr
	var assigns []ast.Stmt
	valNames := make([]string, len(s.Lhs))
	for i := range s.Lhs {
		valNames[i] = fmt.Sprintf("(v%d)", i)
	}
	for i, l := range s.Lhs {
		val := ident(valNames[i], s)
		a, ok := l.(*ast.AttrGetExpr)
		if !ok { // a plain variable
			st := &ast.AssignStmt{Lhs: []ast.Expr{l}, Rhs: []ast.Expr{val}}
			setPos(st, s)
			assigns = append(assigns, st)
			continue
		}
		o := fmt.Sprintf("(o%d)", i)
		objNames = append(objNames, o)
		objExprs = append(objExprs, a.Object)
		var st ast.Stmt
		if isStringConst(a.Key) {
			target := &ast.AttrGetExpr{Object: ident(o, s), Key: a.Key}
			setPos(target, s)
			as := &ast.AssignStmt{Lhs: []ast.Expr{target}, Rhs: []ast.Expr{val}}
			setPos(as, s)
			st = as
		} else {
			k := fmt.Sprintf("(k%d)", i)
			objNames = append(objNames, k)
			objExprs = append(objExprs, a.Key)
			fc := &ast.FuncCallStmt{Expr: r.hiddenCall(hiddenSetIndex, s, []ast.Expr{ident(o, s), ident(k, s), val})}
			setPos(fc, s)
			st = fc
		}
		assigns = append(assigns, st)
	}
	var body []ast.Stmt
	if len(objNames) > 0 {
		la := &ast.LocalAssignStmt{Names: objNames, Exprs: objExprs}
		setPos(la, s)
		body = append(body, la)
	}
	lv := &ast.LocalAssignStmt{Names: valNames, Exprs: s.Rhs}
	setPos(lv, s)
	body = append(body, lv)
	body = append(body, assigns...)
	do := &ast.DoBlockStmt{Stmts: body}
	setPos(do, s)
	return do
}

func isStringConst(e ast.Expr) bool {
	_, ok := e.(*ast.StringExpr)
	return ok
}

// smallConstantKey reports whether a constructor key cannot cause a dense
// allocation: a constant string or boolean, or a constant number that is not
// an integer above 1 (those go to the hash part, or fill nothing).
func smallConstantKey(e ast.Expr) bool {
	switch k := e.(type) {
	case *ast.StringExpr, *ast.TrueExpr, *ast.FalseExpr:
		return true
	case *ast.NumberExpr:
		f, err := parseLuaNumber(k.Value)
		return err == nil && (f <= 1 || f != math.Trunc(f))
	}
	return false
}

func parseLuaNumber(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		u, err := strconv.ParseUint(s[2:], 16, 64)
		return float64(u), err
	}
	return strconv.ParseFloat(s, 64)
}

func ident(name string, pos ast.PositionHolder) *ast.IdentExpr {
	id := &ast.IdentExpr{Value: name}
	setPos(id, pos)
	return id
}

func hiddenCall(name string, pos ast.PositionHolder, args []ast.Expr) *ast.FuncCallExpr {
	fc := &ast.FuncCallExpr{Func: ident(name, pos), Args: args, AdjustRet: true}
	setPos(fc, pos)
	return fc
}

func setPos(n, from ast.PositionHolder) {
	n.SetLine(from.Line())
	n.SetLastLine(from.LastLine())
}
