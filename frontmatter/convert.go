package frontmatter

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// Conversions between Lua and Go values are bounded three ways, so that
// what a frontmatter builds cheaply cannot become expensive when it is
// converted (usually after the evaluation's deadline, where nothing else
// would stop it):
//
//   - values: every converted value (a table, each entry's value, each
//     scalar) counts once per place it appears. A table reachable through
//     several paths (local a = {}; a = {a, a} …) is converted once and the
//     result is shared, but its values are counted at every appearance, so
//     the budget bounds the size of the tree a consumer walking the result
//     sees, not just the number of distinct tables;
//   - bytes: string values and keys count their length at every appearance;
//   - depth: maxValueDepth levels of tables.
//
// Every distinct Lua table is scanned once, so the cost of a conversion is
// bounded by the budget plus the size of the tables the run itself built.
// A table that contains itself is cut where it refers back (template
// variables) or refused (flemma.opt values, which are configuration).
// Exceeding a bound is an error that names the bound; nothing is dropped
// silently.

// maxValueDepth bounds the nesting of converted values (both directions).
const maxValueDepth = 32

// tickMask is also how often a conversion checks its deadline (every
// tickMask+1 values).

// convError is a conversion that hit a bound.
type convError struct {
	kind convKind
	// limit is the bound that was exceeded.
	limit int
	// cause is the context error for convDeadline.
	cause error
}

type convKind uint8

const (
	convValues convKind = iota
	convBytes
	convDepth
	convCycle
	convDeadline
)

func (e *convError) Error() string {
	switch e.kind {
	case convValues:
		return fmt.Sprintf("more than %d values (a table counts at every place it appears)", e.limit)
	case convBytes:
		return fmt.Sprintf("larger than %s", formatSize(e.limit))
	case convDepth:
		return fmt.Sprintf("nested more than %d levels deep", e.limit)
	case convCycle:
		return "a table that contains itself"
	}
	return "conversion stopped: " + e.cause.Error()
}

func (e *convError) Unwrap() error { return e.cause }

// budget is what one conversion may still produce. It is shared by the
// values of one conversion (all template variables, the input and context
// of one call).
type budget struct {
	values, bytes int
	maxValues     int
	maxBytes      int
	ticks         int
	// Every tickMask+1 values the deadline is checked: ctx's (an error) or,
	// inside a VM instruction, the run's (raised as a Lua error by L).
	// Neither set: no deadline (the count bounds the work).
	ctx context.Context
	L   *lua.LState
}

func newBudget(l Limits) budget {
	return budget{values: l.MaxValues, bytes: l.MaxBytes, maxValues: l.MaxValues, maxBytes: l.MaxBytes}
}

// take charges n values and b bytes.
func (bg *budget) take(n, b int) error {
	bg.values -= n
	bg.bytes -= b
	if bg.values < 0 {
		return &convError{kind: convValues, limit: bg.maxValues}
	}
	if bg.bytes < 0 {
		return &convError{kind: convBytes, limit: bg.maxBytes}
	}
	if bg.ctx != nil || bg.L != nil {
		bg.ticks += n
		if bg.ticks > tickMask {
			bg.ticks = 0
			return bg.checkDeadline()
		}
	}
	return nil
}

func (bg *budget) checkDeadline() error {
	if bg.L != nil {
		checkDeadline(bg.L)
		return nil
	}
	select {
	case <-bg.ctx.Done():
		return &convError{kind: convDeadline, cause: bg.ctx.Err()}
	default:
		return nil
	}
}

// goNumber returns an integral number as int, anything else as float64, so
// that 30 renders as "30" in templates and provider parameters get ints.
func goNumber(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return int(f)
	}
	return f
}

// ---- Lua to Go: template variables --------------------------------------

// toGo converts Lua values into Go values (template variables): strings,
// bools, numbers and tables of those. Functions, userdata and the inner
// reference of a table that contains itself are left out.
type toGo struct {
	budget
	memo memo[goTable]
}

// memo records the tables of one conversion. Most conversions meet a few
// tables, which it keeps without allocating a map.
type memo[E any] struct {
	small [4]struct {
		t *lua.LTable
		e E
	}
	n   int
	big map[*lua.LTable]E
}

func (m *memo[E]) get(t *lua.LTable) (E, bool) {
	for i := 0; i < m.n; i++ {
		if m.small[i].t == t {
			return m.small[i].e, true
		}
	}
	e, ok := m.big[t]
	return e, ok
}

func (m *memo[E]) put(t *lua.LTable, e E) {
	for i := 0; i < m.n; i++ {
		if m.small[i].t == t {
			m.small[i].e = e
			return
		}
	}
	if m.big == nil && m.n < len(m.small) {
		m.small[m.n].t, m.small[m.n].e = t, e
		m.n++
		return
	}
	if m.big == nil {
		m.big = map[*lua.LTable]E{}
	}
	m.big[t] = e
}

// goTable is a Lua table being or already converted.
type goTable struct {
	val any
	// values, bytes and height are what one appearance costs: the values
	// and string bytes of the expanded tree, and its levels of tables.
	values, bytes, height int
	busy                  bool // being converted: a reference to it is a cycle
}

// convert converts v at nesting level depth (0 for a variable). ok is false
// for a value that is left out; err ends the conversion.
func (c *toGo) convert(v lua.LValue, depth int) (g any, height int, ok bool, err error) {
	switch x := v.(type) {
	case lua.LString:
		if err := c.take(1, len(x)); err != nil {
			return nil, 0, false, err
		}
		return string(x), 0, true, nil
	case lua.LNumber:
		if err := c.take(1, 0); err != nil {
			return nil, 0, false, err
		}
		return goNumber(float64(x)), 0, true, nil
	case lua.LBool:
		if err := c.take(1, 0); err != nil {
			return nil, 0, false, err
		}
		return bool(x), 0, true, nil
	case *lua.LTable:
		return c.table(x, depth)
	}
	return nil, 0, false, nil
}

func (c *toGo) table(x *lua.LTable, depth int) (any, int, bool, error) {
	if depth >= maxValueDepth {
		return nil, 0, false, &convError{kind: convDepth, limit: maxValueDepth}
	}
	if e, ok := c.memo.get(x); ok {
		if e.busy {
			return nil, 0, false, nil // a cycle: cut here
		}
		if depth+e.height > maxValueDepth {
			return nil, 0, false, &convError{kind: convDepth, limit: maxValueDepth}
		}
		if err := c.take(e.values, e.bytes); err != nil {
			return nil, 0, false, err
		}
		return e.val, e.height, true, nil
	}
	c.memo.put(x, goTable{busy: true})
	values0, bytes0 := c.values, c.bytes
	if err := c.take(1, 0); err != nil {
		return nil, 0, false, err
	}
	var err error
	var val any
	height := 1
	sub := func(v lua.LValue) (any, bool) {
		if err != nil {
			return nil, false
		}
		g, h, ok, e := c.convert(v, depth+1)
		if e != nil {
			err = e
			return nil, false
		}
		height = max(height, h+1)
		return g, ok
	}
	n := x.Len()
	count, seq := 0, true
	x.ForEach(func(k, _ lua.LValue) {
		count++
		kn, ok := k.(lua.LNumber)
		if !ok || float64(kn) != math.Trunc(float64(kn)) || kn < 1 || int(kn) > n {
			seq = false
		}
	})
	if seq && count == n && n > 0 {
		if n > c.values {
			return nil, 0, false, &convError{kind: convValues, limit: c.maxValues}
		}
		out := make([]any, n)
		for i := 1; i <= n && err == nil; i++ {
			out[i-1], _ = sub(x.RawGetInt(i))
		}
		val = out
	} else {
		// Keys become strings; where a number or boolean key collides with
		// a string key ({[1] = "a", ["1"] = "b"}), the string key wins.
		out := make(map[string]any, min(count, c.values))
		x.ForEach(func(k, v lua.LValue) {
			var key string
			switch kk := k.(type) {
			case lua.LNumber:
				key = kk.String()
			case lua.LBool:
				key = strconv.FormatBool(bool(kk))
			default:
				return
			}
			if g, ok := sub(v); ok {
				out[key] = g
			}
		})
		x.ForEach(func(k, v lua.LValue) {
			kk, isString := k.(lua.LString)
			if !isString || err != nil {
				return
			}
			if err = c.take(0, len(kk)); err != nil {
				return
			}
			if g, ok := sub(v); ok {
				out[string(kk)] = g
			} else {
				delete(out, string(kk))
			}
		})
		val = out
	}
	if err != nil {
		return nil, 0, false, err
	}
	c.memo.put(x, goTable{val: val, values: values0 - c.values, bytes: bytes0 - c.bytes, height: height})
	return val, height, true, nil
}

// ---- Go to Lua: tool inputs, call contexts, option reads ---------------------

// toLua converts Go values (a tool input decoded from JSON, an execution
// context, a stored option) into Lua values in L. Go values shared between
// several places are converted at every place; the budget bounds the total.
type toLua struct {
	budget
	L *lua.LState
}

// convert converts v at nesting level depth.
func (c *toLua) convert(v any, depth int) (lua.LValue, error) {
	if depth > maxValueDepth {
		return lua.LNil, &convError{kind: convDepth, limit: maxValueDepth}
	}
	switch x := v.(type) {
	case nil:
		return lua.LNil, c.take(1, 0)
	case string:
		return lua.LString(x), c.take(1, len(x))
	case bool:
		return lua.LBool(x), c.take(1, 0)
	case float64:
		return lua.LNumber(x), c.take(1, 0)
	case int:
		return lua.LNumber(x), c.take(1, 0)
	case json.Number:
		if err := c.take(1, len(x)); err != nil {
			return lua.LNil, err
		}
		f, err := x.Float64()
		if err != nil {
			return lua.LString(x.String()), nil
		}
		return lua.LNumber(f), nil
	case json.RawMessage:
		// Decoding costs about as much as the text is long.
		if err := c.take(0, len(x)); err != nil {
			return lua.LNil, err
		}
		var d any
		if err := json.Unmarshal(x, &d); err != nil {
			return lua.LString(string(x)), c.take(1, 0)
		}
		return c.convert(d, depth)
	case []any:
		t, err := c.newTable(len(x), 0)
		if err != nil {
			return lua.LNil, err
		}
		for i, e := range x {
			lv, err := c.convert(e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			t.RawSetInt(i+1, lv) // Append would drop nils
		}
		return t, nil
	case []string:
		t, err := c.newTable(len(x), 0)
		if err != nil {
			return lua.LNil, err
		}
		for _, e := range x {
			if err := c.take(1, len(e)); err != nil {
				return lua.LNil, err
			}
			t.Append(lua.LString(e))
		}
		return t, nil
	case map[string]any:
		t, err := c.newTable(0, len(x))
		if err != nil {
			return lua.LNil, err
		}
		for k, e := range x {
			if err := c.take(0, len(k)); err != nil {
				return lua.LNil, err
			}
			lv, err := c.convert(e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			t.RawSetString(k, lv)
		}
		return t, nil
	case map[string]string:
		t, err := c.newTable(0, len(x))
		if err != nil {
			return lua.LNil, err
		}
		for k, e := range x {
			if err := c.take(1, len(k)+len(e)); err != nil {
				return lua.LNil, err
			}
			t.RawSetString(k, lua.LString(e))
		}
		return t, nil
	}
	return c.reflect(reflect.ValueOf(v), depth)
}

// newTable charges a table and checks that its n entries can fit before
// allocating room for them (each entry is charged when it is converted).
func (c *toLua) newTable(narr, nhash int) (*lua.LTable, error) {
	if err := c.take(1, 0); err != nil {
		return nil, err
	}
	if narr+nhash > c.values {
		return nil, &convError{kind: convValues, limit: c.maxValues}
	}
	return c.L.CreateTable(narr, nhash), nil
}

// reflect handles the remaining kinds (typed slices and maps, other number
// types); anything else becomes its fmt.Sprint text.
func (c *toLua) reflect(rv reflect.Value, depth int) (lua.LValue, error) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return lua.LNumber(rv.Int()), c.take(1, 0)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return lua.LNumber(rv.Uint()), c.take(1, 0)
	case reflect.Float32, reflect.Float64:
		return lua.LNumber(rv.Float()), c.take(1, 0)
	case reflect.String:
		return lua.LString(rv.String()), c.take(1, rv.Len())
	case reflect.Bool:
		return lua.LBool(rv.Bool()), c.take(1, 0)
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return lua.LNil, c.take(1, 0)
		}
		return c.convert(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		n := rv.Len()
		t, err := c.newTable(n, 0)
		if err != nil {
			return lua.LNil, err
		}
		for i := 0; i < n; i++ {
			lv, err := c.convert(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return lua.LNil, err
			}
			t.RawSetInt(i+1, lv)
		}
		return t, nil
	case reflect.Map:
		n := rv.Len()
		t, err := c.newTable(0, n)
		if err != nil {
			return lua.LNil, err
		}
		type entry struct {
			key string
			val reflect.Value
		}
		entries := make([]entry, 0, n)
		for it := rv.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key().Interface())
			if err := c.take(0, len(k)); err != nil {
				return lua.LNil, err
			}
			entries = append(entries, entry{k, it.Value()})
		}
		// Sorted, so that keys printing alike resolve the same way every time.
		sort.Slice(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
		for _, e := range entries {
			lv, err := c.convert(e.val.Interface(), depth+1)
			if err != nil {
				return lua.LNil, err
			}
			t.RawSetString(e.key, lv)
		}
		return t, nil
	case reflect.Invalid:
		return lua.LNil, c.take(1, 0)
	}
	s := fmt.Sprint(rv.Interface())
	return lua.LString(s), c.take(1, len(s))
}
