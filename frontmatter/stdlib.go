package frontmatter

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
)

// The sandbox's library: a whitelist, never a blacklist. Functions whose cost
// is bounded by their arguments come from gopher-lua; everything that can
// build a large value or run long inside one VM instruction (patterns, rep,
// format, concat, unpack, byte, sparse table writes) is implemented here and
// checks the memory budget or the deadline.
//
// Deliberately absent: io, os, debug, package, coroutine, require, module,
// load, loadstring, loadfile, dofile, getfenv, setfenv, getmetatable,
// setmetatable, rawget, rawset, rawequal, next, newproxy, collectgarbage,
// xpcall, _G, string.dump, math.randomseed.

const (
	// maxResults bounds the values one call may push (unpack, string.byte).
	maxResults = 4096
	// slotBytes is what gopher-lua spends per array slot (an interface).
	slotBytes = 16
)

// stock holds the gopher-lua library functions the sandbox reuses. They are
// plain Go functions of *LState without upvalues, so one copy serves every
// VM.
var stock = sync.OnceValue(func() map[string]lua.LGFunction {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.StringLibName, lua.OpenString}, {lua.TabLibName, lua.OpenTable}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	names := map[string][]string{
		"":       {"error", "pcall", "select", "tonumber", "tostring", "type"},
		"string": {"char", "len", "lower", "upper", "reverse", "sub"},
		"table":  {"insert", "remove", "maxn", "getn"},
		"math": {"abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh", "deg", "exp", "floor",
			"fmod", "frexp", "ldexp", "log", "log10", "max", "min", "mod", "modf", "pow", "rad", "random",
			"sin", "sinh", "sqrt", "tan", "tanh"},
	}
	out := map[string]lua.LGFunction{}
	for lib, fns := range names {
		tbl := L.G.Global
		if lib != "" {
			tbl = L.GetGlobal(lib).(*lua.LTable)
		}
		for _, name := range fns {
			fn, ok := tbl.RawGetString(name).(*lua.LFunction)
			if !ok || !fn.IsG || len(fn.Upvalues) > 0 {
				panic("frontmatter: gopher-lua library function " + lib + "." + name + " is missing or has upvalues")
			}
			key := name
			if lib != "" {
				key = lib + "." + name
			}
			out[key] = fn.GFunction
		}
	}
	return out
})

// openLibs fills env with the sandbox's globals and installs the string
// metatable, whose __index is the sandbox's own string table so that
// ("x"):rep(n) reaches the bounded rep.
func (v *vm) openLibs(env *lua.LTable) {
	L := v.L
	s := stock()
	fn := func(f lua.LGFunction) *lua.LFunction { return L.NewFunction(f) }

	for _, name := range []string{"pcall", "select", "tonumber", "tostring", "type"} {
		env.RawSetString(name, fn(s[name]))
	}
	// error and assert copy their message to put the position in front.
	baseError := s["error"]
	env.RawSetString("error", fn(func(L *lua.LState) int {
		if msg, ok := L.Get(1).(lua.LString); ok && len(msg) > maxMessageBytes {
			v.charge(L, len(msg), "error")
		}
		return baseError(L)
	}))
	env.RawSetString("assert", fn(func(L *lua.LState) int {
		if L.ToBool(1) {
			return L.GetTop()
		}
		msg := L.OptString(2, "assertion failed!")
		if len(msg) > maxMessageBytes {
			v.charge(L, len(msg), "assert")
		}
		L.RaiseError("%s", msg) // gopher-lua's assert uses msg as a format
		return 0
	}))
	env.RawSetString("ipairs", fn(baseIpairs))
	env.RawSetString("pairs", fn(basePairs))
	env.RawSetString("unpack", fn(baseUnpack))
	env.RawSetString("print", fn(func(*lua.LState) int { return 0 })) // stdout is the RPC stream
	env.RawSetString("_VERSION", lua.LString("Lua 5.1"))

	str := L.NewTable()
	for _, name := range []string{"char", "len", "sub"} {
		str.RawSetString(name, fn(s["string."+name]))
	}
	for _, name := range []string{"lower", "upper", "reverse"} {
		orig := s["string."+name]
		str.RawSetString(name, fn(func(L *lua.LState) int {
			v.charge(L, len(L.CheckString(1)), "string."+name)
			return orig(L)
		}))
	}
	str.RawSetString("byte", fn(strByte))
	str.RawSetString("rep", fn(v.strRep))
	str.RawSetString("format", fn(v.strFormat))
	str.RawSetString("find", fn(func(L *lua.LState) int { return v.strFindAux(L, true) }))
	str.RawSetString("match", fn(func(L *lua.LState) int { return v.strFindAux(L, false) }))
	str.RawSetString("gmatch", fn(v.strGmatch))
	str.RawSetString("gsub", fn(v.strGsub))
	env.RawSetString("string", str)
	mt := L.NewTable()
	mt.RawSetString("__index", str)
	L.SetMetatable(lua.LString(""), mt)

	tbl := L.NewTable()
	for _, name := range []string{"remove", "maxn", "getn"} {
		tbl.RawSetString(name, fn(s["table."+name]))
	}
	tbl.RawSetString("sort", fn(v.tableSort))
	tbl.RawSetString("insert", fn(v.tableInsert))
	tbl.RawSetString("concat", fn(v.tableConcat))
	tbl.RawSetString("unpack", fn(baseUnpack))
	env.RawSetString("table", tbl)

	m := L.NewTable()
	for key, f := range s {
		if name, ok := strings.CutPrefix(key, "math."); ok {
			m.RawSetString(name, fn(f))
		}
	}
	m.RawSetString("pi", lua.LNumber(math.Pi))
	m.RawSetString("huge", lua.LNumber(math.Inf(1)))
	env.RawSetString("math", m)

	env.RawSetString(hiddenConcat, fn(v.concat))
	env.RawSetString(hiddenSetIndex, fn(v.setIndex))
	env.RawSetString(hiddenKey, fn(v.constructorKey))
}

// charge accounts n bytes about to be allocated by the current run. One
// allocation may not exceed MaxBytes, and all of them together not 8×MaxBytes.
func (v *vm) charge(L *lua.LState, n int, what string) {
	if n < 0 || n > v.limits.MaxBytes {
		L.RaiseError("memory limit exceeded: %s would need %s (the limit is %s)", what, formatSize(n), formatSize(v.limits.MaxBytes))
	}
	v.allocated += n
	if v.allocated > 8*v.limits.MaxBytes {
		L.RaiseError("memory limit exceeded: the frontmatter built more than %s of strings and tables", formatSize(8*v.limits.MaxBytes))
	}
}

// checkDeadline raises the context's error when the run's deadline passed.
// Go loops that may run long call it periodically; the VM itself checks the
// context before every instruction.
func checkDeadline(L *lua.LState) {
	if ctx := L.Context(); ctx != nil {
		select {
		case <-ctx.Done():
			L.RaiseError("%s", ctx.Err().Error())
		default:
		}
	}
}

func formatSize(n int) string {
	switch {
	case n < 0 || n >= 1<<60:
		return "more than an exabyte"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// concat implements a .. b .. c (see rewriter).
func (v *vm) concat(L *lua.LState) int {
	top := L.GetTop()
	n := 0
	for i := 1; i <= top; i++ {
		switch x := L.Get(i).(type) {
		case lua.LString:
			n += len(x)
		case lua.LNumber:
			n += 24
		default:
			L.RaiseError("attempt to concatenate a %s value", x.Type().String())
		}
	}
	v.charge(L, n, "a concatenation")
	var b strings.Builder
	b.Grow(n)
	for i := 1; i <= top; i++ {
		b.WriteString(lua.LVAsString(L.Get(i)))
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// arrayGap returns how many array slots gopher-lua would fill with nil before
// storing key k in t (it stores integer keys densely up to 2^26).
func arrayGap(t *lua.LTable, k lua.LValue) int {
	n, ok := k.(lua.LNumber)
	if !ok {
		return 0
	}
	f := float64(n)
	if f != math.Floor(f) || f < 1 || f >= float64(lua.MaxArrayIndex) {
		return 0
	}
	return int(f) - t.MaxN() - 1
}

// setIndex implements t[k] = v for computed keys (see rewriter).
func (v *vm) setIndex(L *lua.LState) int {
	obj, key, val := L.Get(1), L.Get(2), L.Get(3)
	if t, ok := obj.(*lua.LTable); ok {
		if gap := arrayGap(t, key); gap > 0 {
			v.charge(L, gap*slotBytes, fmt.Sprintf("table index %s", key.String()))
		}
	}
	L.SetTable(obj, key, val)
	return 0
}

// constructorKey implements the key of {[k] = v} (see rewriter): the table
// under construction holds no more than a few items yet, so an integer key k
// costs up to k slots.
func (v *vm) constructorKey(L *lua.LState) int {
	key := L.Get(1)
	if n, ok := key.(lua.LNumber); ok {
		f := float64(n)
		if f == math.Floor(f) && f > 1 && f < float64(lua.MaxArrayIndex) {
			v.charge(L, int(f-1)*slotBytes, fmt.Sprintf("table index %s", key.String()))
		}
	}
	L.Push(key)
	return 1
}

func basePairs(L *lua.LState) int {
	t := L.CheckTable(1)
	L.Push(L.NewFunction(baseNext))
	L.Push(t)
	L.Push(lua.LNil)
	return 3
}

func baseNext(L *lua.LState) int {
	t := L.CheckTable(1)
	k, v := t.Next(L.Get(2))
	if k == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(v)
	return 2
}

func baseIpairs(L *lua.LState) int {
	t := L.CheckTable(1)
	L.Push(L.NewFunction(ipairsIter))
	L.Push(t)
	L.Push(lua.LNumber(0))
	return 3
}

func ipairsIter(L *lua.LState) int {
	t := L.CheckTable(1)
	i := L.CheckInt(2) + 1
	v := t.RawGetInt(i)
	if v == lua.LNil {
		return 0
	}
	L.Push(lua.LNumber(i))
	L.Push(v)
	return 2
}

// optIntArg is L.OptInt without gopher-lua's undefined conversion of huge
// floats: the value is clamped to ±2^40.
func optIntArg(L *lua.LState, n int, def int) int {
	if L.Get(n) == lua.LNil {
		return def
	}
	f := math.Floor(float64(L.CheckNumber(n)))
	const lim = 1 << 40
	switch {
	case f > lim:
		return lim
	case f < -lim:
		return -lim
	case f != f: // NaN
		return 0
	}
	return int(f)
}

func baseUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := optIntArg(L, 2, 1)
	j := optIntArg(L, 3, t.Len())
	if i > j {
		return 0
	}
	if j-i >= maxResults {
		L.RaiseError("too many results to unpack (%d; the limit is %d)", j-i+1, maxResults)
	}
	for k := i; k <= j; k++ {
		L.Push(t.RawGetInt(k))
	}
	return j - i + 1
}

// posrelat turns a relative string position (negative = from the end) into an
// absolute one, as Lua 5.1 does.
func posrelat(pos, l int) int {
	if pos < 0 {
		pos = l + pos + 1
	}
	return pos
}

func strByte(L *lua.LState) int {
	s := L.CheckString(1)
	i := posrelat(optIntArg(L, 2, 1), len(s))
	j := posrelat(optIntArg(L, 3, i), len(s))
	if i <= 0 {
		i = 1
	}
	if j > len(s) {
		j = len(s)
	}
	if i > j {
		return 0
	}
	if j-i >= maxResults {
		L.RaiseError("string slice too long (%d bytes; string.byte returns at most %d)", j-i+1, maxResults)
	}
	for k := i; k <= j; k++ {
		L.Push(lua.LNumber(s[k-1]))
	}
	return j - i + 1
}

func (v *vm) strRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := math.Floor(float64(L.CheckNumber(2)))
	if n <= 0 || len(s) == 0 || n != n {
		L.Push(lua.LString(""))
		return 1
	}
	if total := float64(len(s)) * n; total > float64(v.limits.MaxBytes) {
		v.charge(L, int(min(total, 1<<61)), "string.rep")
	}
	v.charge(L, len(s)*int(n), "string.rep")
	L.Push(lua.LString(strings.Repeat(s, int(n))))
	return 1
}

func (v *vm) tableInsert(L *lua.LState) int {
	t := L.CheckTable(1)
	switch L.GetTop() {
	case 2:
		t.Append(L.Get(2))
	case 3:
		pos := optIntArg(L, 2, 0)
		if gap := arrayGap(t, lua.LNumber(pos)); gap > 0 {
			v.charge(L, gap*slotBytes, fmt.Sprintf("table.insert at %d", pos))
		}
		t.Insert(pos, L.Get(3))
	default:
		L.RaiseError("wrong number of arguments to 'insert'")
	}
	return 0
}

// tableSort is table.sort. gopher-lua's runs in Go without looking at the
// clock and compares strings a byte at a time, so sorting a few thousand
// long strings (substrings of one big string cost nothing to make) ran for
// minutes inside one instruction. This one sorts a copy of t[1..#t] and
// checks the deadline as it goes, counting long string comparisons by their
// length; a comparator is a Lua call, which the VM bounds itself.
func (v *vm) tableSort(L *lua.LState) int {
	t := L.CheckTable(1)
	var fn *lua.LFunction
	if L.GetTop() >= 2 {
		fn = L.CheckFunction(2)
	}
	n := t.Len()
	if n < 2 {
		return 0
	}
	s := &sorter{L: L, fn: fn, vals: make([]lua.LValue, n)}
	for i := range s.vals {
		s.vals[i] = t.RawGetInt(i + 1)
	}
	sort.Sort(s)
	for i, x := range s.vals {
		t.RawSetInt(i+1, x)
	}
	return 0
}

type sorter struct {
	L    *lua.LState
	fn   *lua.LFunction
	vals []lua.LValue
	work int
}

func (s *sorter) Len() int      { return len(s.vals) }
func (s *sorter) Swap(i, j int) { s.vals[i], s.vals[j] = s.vals[j], s.vals[i] }

func (s *sorter) Less(i, j int) bool {
	a, b := s.vals[i], s.vals[j]
	s.work++
	if s.fn != nil {
		L := s.L
		L.Push(s.fn)
		L.Push(a)
		L.Push(b)
		L.Call(2, 1)
		r := lua.LVAsBool(L.Get(-1))
		L.Pop(1)
		return r
	}
	var less bool
	switch x := a.(type) {
	case lua.LNumber:
		if y, ok := b.(lua.LNumber); ok {
			less = x < y
			break
		}
		less = s.L.LessThan(a, b) // raises the error
	case lua.LString:
		if y, ok := b.(lua.LString); ok {
			less = string(x) < string(y)
			s.work += min(len(x), len(y)) >> 8
			break
		}
		less = s.L.LessThan(a, b)
	default:
		less = s.L.LessThan(a, b)
	}
	if s.work > tickMask {
		s.work = 0
		checkDeadline(s.L)
	}
	return less
}

func (v *vm) tableConcat(L *lua.LState) int {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	i := optIntArg(L, 3, 1)
	j := optIntArg(L, 4, t.Len())
	var b strings.Builder
	for k := i; k <= j; k++ {
		if (k-i)&tickMask == tickMask {
			checkDeadline(L)
		}
		var s string
		switch x := t.RawGetInt(k).(type) {
		case lua.LString:
			s = string(x)
		case lua.LNumber:
			s = x.String()
		default:
			L.RaiseError("invalid value (at index %d) in table for 'concat'", k)
		}
		n := len(s)
		if k < j {
			n += len(sep)
		}
		if b.Len()+n > v.limits.MaxBytes {
			v.charge(L, b.Len()+n, "table.concat")
		}
		b.WriteString(s)
		if k < j {
			b.WriteString(sep)
		}
	}
	v.charge(L, b.Len(), "table.concat")
	L.Push(lua.LString(b.String()))
	return 1
}

// ---- patterns -------------------------------------------------------------

const patternSpecials = "^$*+?.([%-"

// newMatcher returns a matcher whose deadline checks use L's context.
func newMatcher(L *lua.LState, src, pat string) *matcher {
	return &matcher{src: src, pat: pat, check: func() { checkDeadline(L) }}
}

// patternCall runs f and turns a malformed-pattern panic into a Lua error.
func patternCall(L *lua.LState, f func() int) int {
	defer func() {
		if r := recover(); r != nil {
			if me, ok := r.(matchError); ok {
				L.RaiseError("%s", string(me))
			}
			panic(r)
		}
	}()
	return f()
}

func pushCapture(L *lua.LState, c captureValue) {
	if c.isPos {
		L.Push(lua.LNumber(c.pos))
	} else {
		L.Push(lua.LString(c.str))
	}
}

// pushCaptures pushes the captures of a match from s to e; with wholeIfNone
// the whole match stands in for a pattern without captures.
func pushCaptures(L *lua.LState, m *matcher, s, e int, wholeIfNone bool) int {
	n := m.level
	if n == 0 && wholeIfNone {
		n = 1
	}
	for i := 0; i < n; i++ {
		pushCapture(L, m.getCapture(i, s, e))
	}
	return n
}

func (v *vm) strFindAux(L *lua.LState, find bool) int {
	s := L.CheckString(1)
	pat := L.CheckString(2)
	init := posrelat(optIntArg(L, 3, 1), len(s)) - 1
	if init < 0 {
		init = 0
	} else if init > len(s) {
		init = len(s)
	}
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(pat, patternSpecials)) {
		if idx := strings.Index(s[init:], pat); idx >= 0 {
			L.Push(lua.LNumber(init + idx + 1))
			L.Push(lua.LNumber(init + idx + len(pat)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	return patternCall(L, func() int {
		p := pat
		anchor := strings.HasPrefix(p, "^")
		if anchor {
			p = p[1:]
		}
		m := newMatcher(L, s, p)
		for si := init; ; si++ {
			m.reset()
			if e := m.match(si, 0); e != -1 {
				if find {
					L.Push(lua.LNumber(si + 1))
					L.Push(lua.LNumber(e))
					return pushCaptures(L, m, si, e, false) + 2
				}
				return pushCaptures(L, m, si, e, true)
			}
			if si >= len(s) || anchor {
				break
			}
		}
		L.Push(lua.LNil)
		return 1
	})
}

func (v *vm) strGmatch(L *lua.LState) int {
	s := L.CheckString(1)
	pat := L.CheckString(2)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		return patternCall(L, func() int {
			m := newMatcher(L, s, pat)
			for si := pos; si <= len(s); si++ {
				m.reset()
				if e := m.match(si, 0); e != -1 {
					pos = e
					if e == si {
						pos++ // empty match: advance at least one position
					}
					return pushCaptures(L, m, si, e, true)
				}
			}
			pos = len(s) + 1
			return 0
		})
	}))
	return 1
}

func (v *vm) strGsub(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	repl := L.Get(3)
	switch repl.Type() {
	case lua.LTNumber, lua.LTString, lua.LTTable, lua.LTFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := optIntArg(L, 4, len(src)+1)
	return patternCall(L, func() int {
		p := pat
		anchor := strings.HasPrefix(p, "^")
		if anchor {
			p = p[1:]
		}
		m := newMatcher(L, src, p)
		var b strings.Builder
		add := func(s string) {
			if b.Len()+len(s) > v.limits.MaxBytes {
				v.charge(L, b.Len()+len(s), "string.gsub")
			}
			b.WriteString(s)
		}
		si, n := 0, 0
		for n < maxN {
			m.reset()
			e := m.match(si, 0)
			if e != -1 {
				n++
				add(v.gsubValue(L, m, repl, si, e))
			}
			if e != -1 && e > si {
				si = e
			} else if si < len(src) {
				add(src[si : si+1])
				si++
			} else {
				break
			}
			if anchor {
				break
			}
		}
		add(src[si:])
		v.charge(L, b.Len(), "string.gsub")
		L.Push(lua.LString(b.String()))
		L.Push(lua.LNumber(n))
		return 2
	})
}

// gsubValue returns the replacement for the match from s to e.
func (v *vm) gsubValue(L *lua.LState, m *matcher, repl lua.LValue, s, e int) string {
	var val lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		tmpl := lua.LVAsString(r)
		if strings.IndexByte(tmpl, '%') < 0 {
			return tmpl
		}
		var b strings.Builder
		for i := 0; i < len(tmpl); i++ {
			c := tmpl[i]
			if c != '%' {
				j := strings.IndexByte(tmpl[i:], '%')
				if j < 0 {
					j = len(tmpl) - i
				}
				b.WriteString(tmpl[i : i+j])
				i += j - 1
				continue
			}
			i++
			if i >= len(tmpl) {
				break
			}
			c = tmpl[i]
			switch {
			case c == '0':
				b.WriteString(m.src[s:e])
			case isdigit(c):
				cv := m.getCapture(int(c-'1'), s, e)
				if cv.isPos {
					b.WriteString(strconv.Itoa(cv.pos))
				} else {
					b.WriteString(cv.str)
				}
			default:
				b.WriteByte(c)
			}
			if b.Len() > v.limits.MaxBytes {
				v.charge(L, b.Len(), "string.gsub")
			}
		}
		return b.String()
	case *lua.LTable:
		c := m.getCapture(0, s, e)
		var key lua.LValue = lua.LString(c.str)
		if c.isPos {
			key = lua.LNumber(c.pos)
		}
		val = L.GetTable(r, key)
	case *lua.LFunction:
		L.Push(r)
		n := pushCaptures(L, m, s, e, true)
		L.Call(n, 1)
		val = L.Get(-1)
		L.Pop(1)
	}
	switch x := val.(type) {
	case *lua.LNilType:
		return m.src[s:e]
	case lua.LBool:
		if !bool(x) {
			return m.src[s:e]
		}
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return x.String()
	}
	L.RaiseError("invalid replacement value (a %s)", val.Type().String())
	return ""
}

// ---- string.format ---------------------------------------------------------

// strFormat is string.format. The output is bounded by the VM's byte limit:
// it is checked after every conversion and every tickMask+1 bytes of a %q,
// and charged once whole.
func (v *vm) strFormat(L *lua.LState) int {
	f := &formatter{v: v, L: L, fs: L.CheckString(1), arg: 1}
	f.b.Grow(len(f.fs)) // the format is in memory already
	for f.i < len(f.fs) {
		f.literal()
		if f.i < len(f.fs) {
			f.directive()
		}
	}
	f.check()
	v.charge(L, f.b.Len(), "string.format")
	L.Push(lua.LString(f.b.String()))
	return 1
}

// formatter is one call of string.format: the format, where it is read,
// the argument of the last conversion, and the output.
type formatter struct {
	v   *vm
	L   *lua.LState
	fs  string
	i   int
	arg int
	b   strings.Builder
}

// formatSpec is one conversion: "%" with its flags, width and precision
// (as fmt takes them), the flags and the width alone, and its verb.
type formatSpec struct {
	fmt          string
	flags, width string
	verb         byte
	hasPrec      bool
}

// formatVerbs are the conversions of string.format, by verb; nil: not one.
var formatVerbs = [256]func(*formatter, formatSpec){
	'c': (*formatter).char,
	'd': (*formatter).integer, 'i': (*formatter).integer,
	'u': (*formatter).unsigned, 'o': (*formatter).unsigned, 'x': (*formatter).unsigned, 'X': (*formatter).unsigned,
	'e': (*formatter).float, 'E': (*formatter).float, 'f': (*formatter).float, 'g': (*formatter).float, 'G': (*formatter).float,
	'q': (*formatter).quoted,
	's': (*formatter).str,
}

// check raises the memory error when the output passed the byte limit.
func (f *formatter) check() {
	if f.b.Len() > f.v.limits.MaxBytes {
		f.v.charge(f.L, f.b.Len(), "string.format")
	}
}

// literal copies the format up to its next '%'.
func (f *formatter) literal() {
	n := strings.IndexByte(f.fs[f.i:], '%')
	if n < 0 {
		n = len(f.fs) - f.i
	}
	f.b.WriteString(f.fs[f.i : f.i+n])
	f.i += n
}

// directive writes what the '%' at f.i stands for: "%%" or a conversion.
func (f *formatter) directive() {
	f.i++
	if f.i < len(f.fs) && f.fs[f.i] == '%' {
		f.b.WriteByte('%')
		f.i++
		return
	}
	s := f.spec()
	formatVerbs[s.verb](f, s)
	f.check()
}

// spec reads a conversion after its '%' (at most 5 flags, a width and a
// precision of at most 2 digits: C's limits, which also bound what one
// conversion writes) and takes its argument, which must be there.
func (f *formatter) spec() formatSpec {
	start := f.i
	f.skipFlags()
	widthAt := f.i
	f.skipDigits()
	flags, width := f.fs[start:widthAt], f.fs[widthAt:f.i]
	hasPrec := f.i < len(f.fs) && f.fs[f.i] == '.'
	if hasPrec {
		f.i++
		f.skipDigits()
	}
	if f.i >= len(f.fs) {
		f.L.RaiseError("%s", "invalid option '%' to 'format'") // RaiseError formats only when given arguments
	}
	s := formatSpec{fmt: "%" + f.fs[start:f.i], flags: flags, width: width, verb: f.fs[f.i], hasPrec: hasPrec}
	f.i++
	f.arg++
	if formatVerbs[s.verb] == nil {
		f.L.RaiseError("invalid option '%%%c' to 'format'", s.verb)
	}
	if f.arg > f.L.GetTop() {
		f.L.ArgError(f.arg, "no value")
	}
	return s
}

func (f *formatter) skipFlags() {
	start := f.i
	for f.i < len(f.fs) && strings.IndexByte("-+ #0", f.fs[f.i]) >= 0 {
		f.i++
	}
	if f.i-start > 5 {
		f.L.RaiseError("invalid format (repeated flags)")
	}
}

func (f *formatter) skipDigits() {
	start := f.i
	for f.i < len(f.fs) && isdigit(f.fs[f.i]) {
		f.i++
	}
	if f.i-start > 2 {
		f.L.RaiseError("invalid format (width or precision too long)")
	}
}

// char is %c: the byte of a number.
func (f *formatter) char(s formatSpec) {
	fmt.Fprintf(&f.b, s.fmt+"s", string([]byte{byte(int(f.L.CheckNumber(f.arg)))}))
}

// integer is %d and %i.
func (f *formatter) integer(s formatSpec) {
	fmt.Fprintf(&f.b, s.fmt+"d", int64(f.L.CheckNumber(f.arg)))
}

// unsigned is %u, %o, %x and %X: a number as C's unsigned long.
func (f *formatter) unsigned(s formatSpec) {
	verb := s.verb
	if verb == 'u' {
		verb = 'd'
	}
	fmt.Fprintf(&f.b, s.fmt+string(verb), uint64(int64(f.L.CheckNumber(f.arg))))
}

// float is %e, %E, %f, %g and %G.
func (f *formatter) float(s formatSpec) {
	x := float64(f.L.CheckNumber(f.arg))
	if math.IsInf(x, 0) || math.IsNaN(x) {
		f.nonFinite(s, x)
		return
	}
	spec := s.fmt
	if (s.verb == 'g' || s.verb == 'G') && !s.hasPrec {
		spec += ".6" // C's default precision; Go's %g would print the shortest form
	}
	fmt.Fprintf(&f.b, spec+string(s.verb), x)
}

// nonFinite writes an infinity or NaN as C does: the sign flags, '-' and
// the width apply; '0', '#' and the precision do not; %E and %G write it
// in capitals.
func (f *formatter) nonFinite(s formatSpec, x float64) {
	text := "nan"
	switch {
	case math.IsInf(x, -1):
		text = "-inf"
	case math.IsInf(x, 1):
		text = "inf"
	}
	switch {
	case text[0] == '-':
	case strings.IndexByte(s.flags, '+') >= 0:
		text = "+" + text
	case strings.IndexByte(s.flags, ' ') >= 0:
		text = " " + text
	}
	if s.verb == 'E' || s.verb == 'G' {
		text = strings.ToUpper(text)
	}
	pad := "%" + s.width + "s"
	if strings.IndexByte(s.flags, '-') >= 0 {
		pad = "%-" + s.width + "s"
	}
	fmt.Fprintf(&f.b, pad, text)
}

// quoted is %q: the string between quotes, readable back by Lua (flags and
// width are ignored, as in Lua 5.1). It writes up to 4 bytes per byte, so
// it checks the limit as it goes.
func (f *formatter) quoted(formatSpec) {
	s := f.L.CheckString(f.arg)
	f.b.WriteByte('"')
	for j := 0; j < len(s); j++ {
		switch c := s[j]; c {
		case '"', '\\', '\n':
			f.b.WriteByte('\\')
			f.b.WriteByte(c)
		case '\r':
			f.b.WriteString(`\r`)
		case 0:
			f.b.WriteString(`\000`)
		default:
			f.b.WriteByte(c)
		}
		if j&tickMask == tickMask {
			f.check()
		}
	}
	f.b.WriteByte('"')
}

// str is %s: any value, as tostring makes it.
func (f *formatter) str(s formatSpec) {
	fmt.Fprintf(&f.b, s.fmt+"s", f.L.ToStringMeta(f.L.Get(f.arg)).String())
}
