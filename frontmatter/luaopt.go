package frontmatter

import (
	"math"
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The Lua face of flemma.opt: every object is a userdata proxy (no raw
// access, no metatable a script could reach) whose metamethods call the
// applier in opt.go. Writes are recorded when they happen, with the line of
// the statement that made them; bad writes become diagnostics and the chunk
// goes on, so one evaluation reports every problem.

type proxyKind uint8

const (
	pkFlemma proxyKind = iota // the global flemma
	pkNode                    // an object, tools, approval list or section
	pkInert                   // what an unknown or blocked key reads as
)

type proxy struct {
	kind proxyKind
	n    *node
	// path and reason describe an inert proxy: the path it stands for and,
	// for a blocked key, why writes through it are refused.
	path   string
	reason string
}

// maxConvertEntries bounds the Lua tables converted for flemma.opt and the
// parameters of one provider section.
const maxConvertEntries = 1024

// maxPathBytes bounds the path an unknown key's proxy remembers: indexing it
// with long keys in a loop must not build ever longer strings.
const maxPathBytes = 256

// extendPath appends key to the path of an unknown key, clipped.
func extendPath(path, key string) string {
	if len(path) >= maxPathBytes {
		return path // already clipped
	}
	p := joinPath(path, clip(key))
	if len(p) >= maxPathBytes {
		p = clipTo(p, maxPathBytes-len("…")) + "…"
	}
	return p
}

// openFlemma installs the global flemma = { opt = … }.
func (v *vm) openFlemma(env *lua.LTable) {
	L := v.L
	v.proxies = map[*node]*lua.LUserData{}
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(v.proxyIndex))
	mt.RawSetString("__newindex", L.NewFunction(v.proxyNewIndex))
	arith := func(op int) *lua.LFunction {
		return L.NewFunction(func(L *lua.LState) int { return v.proxyArith(L, op) })
	}
	mt.RawSetString("__add", arith(opAppend))
	mt.RawSetString("__sub", arith(opRemove))
	mt.RawSetString("__pow", arith(opPrepend))
	mt.RawSetString("__len", L.NewFunction(v.proxyLen))
	mt.RawSetString("__tostring", L.NewFunction(v.proxyToString))
	mt.RawSetString("__call", L.NewFunction(v.proxyCall))
	v.proxyMT = mt
	v.methods = map[string]*lua.LFunction{}
	for i, name := range opNames {
		if i == opSet {
			continue
		}
		op := i
		v.methods[name] = L.NewFunction(func(L *lua.LState) int { return v.listMethod(L, op) })
	}
	v.methods["get"] = L.NewFunction(v.listGet)

	ud := L.NewUserData()
	ud.Value = &proxy{kind: pkFlemma}
	ud.Metatable = mt
	env.RawSetString("flemma", ud)
}

func (v *vm) newProxy(p *proxy) *lua.LUserData {
	ud := v.L.NewUserData()
	ud.Value = p
	ud.Metatable = v.proxyMT
	return ud
}

// nodeProxy returns the one proxy of n.
func (v *vm) nodeProxy(n *node) *lua.LUserData {
	if ud, ok := v.proxies[n]; ok {
		return ud
	}
	ud := v.newProxy(&proxy{kind: pkNode, n: n})
	v.proxies[n] = ud
	return ud
}

func checkProxy(L *lua.LState, i int) *proxy {
	if ud, ok := L.Get(i).(*lua.LUserData); ok {
		if p, ok := ud.Value.(*proxy); ok {
			return p
		}
	}
	return nil
}

// line is the buffer line of the Lua statement running now.
func (v *vm) line(L *lua.LState) int {
	return v.bufferLine(currentLine(L))
}

// writable raises a Lua error when flemma.opt is frozen (a stored function
// running after the evaluation must not change the options it produced).
func (v *vm) writable(L *lua.LState) {
	if v.es.frozen {
		L.RaiseError("flemma.opt can only be changed while the frontmatter runs")
	}
}

func (v *vm) proxyIndex(L *lua.LState) int {
	p := checkProxy(L, 1)
	if p == nil {
		L.RaiseError("attempt to index a non-flemma value")
	}
	key, isString := L.Get(2).(lua.LString)
	es := v.es
	switch p.kind {
	case pkFlemma:
		if key == "opt" {
			L.Push(v.nodeProxy(schema()))
			return 1
		}
		if !es.frozen {
			es.errorf(v.line(L), "flemma.%s: unknown key; only flemma.opt is available in frontmatter", clip(L.Get(2).String()))
		}
		L.Push(v.newProxy(&proxy{kind: pkInert, path: extendPath("flemma", L.Get(2).String())}))
		return 1
	case pkInert:
		if p.reason != "" {
			// Anything under a blocked key is reported as the blocked key.
			L.Push(L.Get(1))
			return 1
		}
		L.Push(v.newProxy(&proxy{kind: pkInert, path: extendPath(p.path, L.Get(2).String())}))
		return 1
	}
	n := p.n
	if n.isList() {
		if idx, ok := L.Get(2).(lua.LNumber); ok { // flemma.opt.tools[1]
			items := v.items(n)
			if i := int(idx); float64(idx) == math.Trunc(float64(idx)) && i >= 1 && i <= len(items) {
				L.Push(lua.LString(items[i-1]))
			} else {
				L.Push(lua.LNil)
			}
			return 1
		}
		if isString {
			if m, ok := v.methods[string(key)]; ok {
				L.Push(m)
				return 1
			}
		}
	}
	if n.kind == kindSection {
		if !isString {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(v.pushGo(L, (*es.section(n))[string(key)]))
		return 1
	}
	var c *node
	if isString && n.kind != kindApprove {
		c = n.lookup(string(key))
	}
	if c == nil {
		if !es.frozen {
			es.unknownKey(n, L.Get(2).String(), v.line(L))
		}
		L.Push(v.newProxy(&proxy{kind: pkInert, path: extendPath(n.path, L.Get(2).String())}))
		return 1
	}
	switch c.kind {
	case kindScalar:
		L.Push(v.pushGo(L, c.get(es)))
	case kindBlocked:
		L.Push(v.newProxy(&proxy{kind: pkInert, path: c.path, reason: c.reason}))
	case kindApprove:
		if es.b.approveFn != nil {
			L.Push(es.b.approveFn)
		} else {
			L.Push(v.nodeProxy(c))
		}
	default:
		L.Push(v.nodeProxy(c))
	}
	return 1
}

func (v *vm) proxyNewIndex(L *lua.LState) int {
	v.writable(L)
	p := checkProxy(L, 1)
	if p == nil {
		L.RaiseError("attempt to index a non-flemma value")
	}
	es := v.es
	keyV := L.Get(2)
	line := v.line(L)
	switch p.kind {
	case pkFlemma:
		if keyV == lua.LString("opt") {
			if val, ok := v.optValue(L, L.Get(3), es.name(""), line); ok {
				es.apply(schema(), val, line)
			}
			return 0
		}
		es.errorf(line, "flemma.%s: flemma is read-only; set options through flemma.opt", clip(keyV.String()))
		return 0
	case pkInert:
		if p.reason != "" {
			es.blocked(p.path, p.reason, line)
		}
		return 0
	}
	key, ok := keyV.(lua.LString)
	if !ok {
		es.errorf(line, "%s: keys must be strings, got %s", es.name(p.n.path), keyV.Type().String())
		return 0
	}
	if p.n.kind == kindApprove {
		es.errorf(line, "%s: is a list; use :append, :remove, :prepend or assign a new list", es.name(p.n.path))
		return 0
	}
	if p.n.kind != kindSection {
		// Refuse an unknown or blocked key before converting the value.
		if c := p.n.lookup(string(key)); c == nil || c.kind == kindBlocked {
			es.child(p.n, string(key), nil, line)
			return 0
		}
	}
	if val, ok := v.optValue(L, L.Get(3), es.name(joinPath(p.n.path, clip(string(key)))), line); ok {
		es.child(p.n, string(key), val, line)
	}
	return 0
}

// proxyArith implements list + x, list - x and list ^ x: the operation is
// recorded at once and the list itself is returned, so that writing it back
// (t = t + "x") is a no-op.
func (v *vm) proxyArith(L *lua.LState, op int) int {
	v.writable(L)
	p := checkProxy(L, 1)
	if p == nil || (p.kind == pkNode && !p.n.isList()) {
		L.RaiseError("attempt to perform arithmetic on a flemma.opt value (only lists support + - ^, with the list on the left)")
	}
	if p.kind == pkInert {
		if p.reason != "" {
			v.es.blocked(p.path, p.reason, v.line(L))
		}
		L.Push(L.Get(1))
		return 1
	}
	if p.kind == pkFlemma {
		L.RaiseError("attempt to perform arithmetic on flemma")
	}
	line := v.line(L)
	if val, ok := v.optValue(L, L.Get(2), v.es.name(p.n.path), line); ok {
		v.es.listOp(p.n, op, val, line)
	}
	L.Push(L.Get(1))
	return 1
}

// listMethod implements list:append(x), :remove(x), :prepend(x); it returns
// the list so calls chain.
func (v *vm) listMethod(L *lua.LState, op int) int {
	v.writable(L)
	p := checkProxy(L, 1)
	if p == nil || p.kind != pkNode || !p.n.isList() {
		L.RaiseError("%s must be called with a colon, e.g. flemma.opt.tools:%s(\"bash\")", opNames[op], opNames[op])
	}
	line := v.line(L)
	if val, ok := v.optValue(L, L.Get(2), v.es.name(p.n.path), line); ok {
		v.es.listOp(p.n, op, val, line)
	}
	L.Push(L.Get(1))
	return 1
}

// listGet implements list:get(): a copy of the items as a Lua table.
func (v *vm) listGet(L *lua.LState) int {
	p := checkProxy(L, 1)
	if p == nil || p.kind != pkNode || !p.n.isList() {
		L.RaiseError("get must be called with a colon, e.g. flemma.opt.tools:get()")
	}
	items := v.items(p.n)
	t := L.CreateTable(len(items), 0)
	for _, it := range items {
		t.Append(lua.LString(it))
	}
	L.Push(t)
	return 1
}

func (v *vm) items(n *node) []string {
	if n.kind == kindTools {
		return v.es.currentTools()
	}
	return v.es.currentApprove()
}

func (v *vm) proxyLen(L *lua.LState) int {
	p := checkProxy(L, 1)
	if p != nil && p.kind == pkNode && p.n.isList() {
		L.Push(lua.LNumber(len(v.items(p.n))))
	} else {
		L.Push(lua.LNumber(0))
	}
	return 1
}

func (v *vm) proxyToString(L *lua.LState) int {
	p := checkProxy(L, 1)
	switch {
	case p == nil:
		L.Push(lua.LString("flemma.opt"))
	case p.kind == pkFlemma:
		L.Push(lua.LString("flemma"))
	case p.kind == pkInert:
		L.Push(lua.LString("flemma.opt." + p.path + " (unavailable)"))
	case p.n.isList():
		items := v.items(p.n)
		n := len(v.es.name(p.n.path)) + 3
		for _, it := range items {
			n += len(it) + 2
		}
		v.charge(L, n, "tostring")
		L.Push(lua.LString(v.es.name(p.n.path) + " {" + strings.Join(items, ", ") + "}"))
	default:
		L.Push(lua.LString(v.es.name(p.n.path)))
	}
	return 1
}

// proxyCall handles calling an inert proxy, which is how
// flemma.opt.sandbox.writable:append("/") arrives.
func (v *vm) proxyCall(L *lua.LState) int {
	p := checkProxy(L, 1)
	if p != nil && p.kind == pkInert {
		if p.reason != "" && !v.es.frozen {
			v.es.blocked(p.path, p.reason, v.line(L))
		}
		L.Push(L.Get(1))
		return 1
	}
	L.RaiseError("attempt to call a flemma.opt value")
	return 0
}

// optValue converts a Lua value written to flemma.opt into the applier's
// value model. A value over a conversion bound is reported as an error of
// the write to name, and ok is false: nothing is applied.
func (v *vm) optValue(L *lua.LState, lv lua.LValue, name string, line int) (val any, ok bool) {
	if _, isTable := lv.(*lua.LTable); !isTable {
		return scalarOptValue(lv), true // the common case: no converter needed
	}
	c := &toOpt{budget: newBudget(v.limits)}
	c.L = L
	val, _, err := c.convert(lv, 0)
	if err != nil {
		v.es.errorf(line, "%s: %s", name, describeConvError(err))
		return nil, false
	}
	return val, true
}

// describeConvError says what was wrong with a value that hit a bound.
func describeConvError(err error) string {
	ce, ok := err.(*convError)
	if !ok {
		return err.Error()
	}
	switch ce.kind {
	case convValues:
		return "value too large: " + ce.Error()
	case convCycle:
		return "value is " + ce.Error()
	}
	return "value " + ce.Error()
}

func scalarOptValue(lv lua.LValue) any {
	switch x := lv.(type) {
	case *lua.LNilType:
		return nil
	case lua.LBool:
		return bool(x)
	case lua.LNumber:
		return float64(x)
	case lua.LString:
		return string(x)
	case *lua.LFunction:
		return x
	case *lua.LUserData:
		if p, ok := x.Value.(*proxy); ok && p.kind == pkNode {
			return &proxyRef{n: p.n}
		}
		return otherValue{"userdata"}
	}
	return otherValue{lv.Type().String()}
}

// toOpt converts Lua values for flemma.opt under a budget (see convert.go).
// Unlike template variables, a table that contains itself is an error.
type toOpt struct {
	budget
	memo memo[optTable]
}

type optTable struct {
	val                   any // *cfgTable or otherValue
	values, bytes, height int
	busy                  bool
}

func (c *toOpt) convert(lv lua.LValue, depth int) (any, int, error) {
	x, ok := lv.(*lua.LTable)
	if !ok {
		b := 0
		if s, ok := lv.(lua.LString); ok {
			b = len(s)
		}
		return scalarOptValue(lv), 0, c.take(1, b)
	}
	if depth >= maxValueDepth {
		return nil, 0, &convError{kind: convDepth, limit: maxValueDepth}
	}
	if e, ok := c.memo.get(x); ok {
		if e.busy {
			return nil, 0, &convError{kind: convCycle}
		}
		if depth+e.height > maxValueDepth {
			return nil, 0, &convError{kind: convDepth, limit: maxValueDepth}
		}
		return e.val, e.height, c.take(e.values, e.bytes)
	}
	c.memo.put(x, optTable{busy: true})
	values0, bytes0 := c.values, c.bytes
	if err := c.take(1, 0); err != nil {
		return nil, 0, err
	}
	val, height, err := c.table(x, depth)
	if err != nil {
		return nil, 0, err
	}
	c.memo.put(x, optTable{val: val, values: values0 - c.values, bytes: bytes0 - c.bytes, height: height})
	return val, height, nil
}

func (c *toOpt) table(x *lua.LTable, depth int) (any, int, error) {
	n := x.Len()
	if n > maxConvertEntries {
		return otherValue{"table with too many entries"}, 1, nil
	}
	height := 1
	t := &cfgTable{seq: make([]any, 0, n)}
	for i := 1; i <= n; i++ {
		g, h, err := c.convert(x.RawGetInt(i), depth+1)
		if err != nil {
			return nil, 0, err
		}
		height = max(height, h+1)
		t.seq = append(t.seq, g)
	}
	var keys []string
	vals := map[string]lua.LValue{}
	count := 0
	x.ForEach(func(k, e lua.LValue) {
		count++
		if kn, ok := k.(lua.LNumber); ok {
			if f := float64(kn); f == math.Trunc(f) && f >= 1 && int(f) <= n {
				return // part of the sequence
			}
		}
		if count > maxConvertEntries {
			return
		}
		ks := k.String()
		if _, dup := vals[ks]; !dup {
			keys = append(keys, ks)
		}
		vals[ks] = e
	})
	if count > maxConvertEntries {
		return otherValue{"table with too many entries"}, 1, nil
	}
	sort.Strings(keys) // Lua tables have no order; be deterministic
	for _, k := range keys {
		if err := c.take(0, len(k)); err != nil {
			return nil, 0, err
		}
		g, h, err := c.convert(vals[k], depth+1)
		if err != nil {
			return nil, 0, err
		}
		height = max(height, h+1)
		t.keys = append(t.keys, k)
		t.vals = append(t.vals, g)
	}
	return t, height, nil
}

// pushGo converts a stored Go value for a read inside the VM. The tables it
// builds are charged like any other allocation of the run, so reading a
// large provider section in a loop ends in the memory limit.
func (v *vm) pushGo(L *lua.LState, g any) lua.LValue {
	switch x := g.(type) {
	case nil:
		return lua.LNil
	case string:
		return lua.LString(x)
	case bool:
		return lua.LBool(x)
	case int:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	}
	c := &toLua{budget: newBudget(v.limits), L: L}
	c.L = L
	lv, err := c.convert(g, 0)
	if err != nil {
		L.RaiseError("%s", describeConvError(err))
	}
	v.charge(L, (c.maxValues-c.values)*2*slotBytes, "reading a flemma.opt value")
	return lv
}
