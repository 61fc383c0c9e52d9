package frontmatter

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// maxValueDepth bounds the nesting of converted values (both directions).
const maxValueDepth = 32

// goNumber returns an integral number as int, anything else as float64, so
// that 30 renders as "30" in templates and provider parameters get ints.
func goNumber(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return int(f)
	}
	return f
}

// toGo converts Lua values into Go values (template variables, provider
// sections): strings, bools, numbers and tables of those. Functions,
// userdata and cycles are skipped; conversion stops at limit bytes.
type toGo struct {
	limit int
	size  int
	seen  map[*lua.LTable]bool
}

func (c *toGo) convert(v lua.LValue, depth int) (any, bool) {
	if c.size > c.limit {
		return nil, false
	}
	switch x := v.(type) {
	case lua.LString:
		c.size += len(x)
		return string(x), true
	case lua.LNumber:
		return goNumber(float64(x)), true
	case lua.LBool:
		return bool(x), true
	case *lua.LTable:
		if depth >= maxValueDepth || c.seen[x] {
			return nil, false
		}
		if c.seen == nil {
			c.seen = map[*lua.LTable]bool{}
		}
		c.seen[x] = true
		defer delete(c.seen, x) // shared subtables are fine, cycles are not
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
			out := make([]any, n)
			for i := 1; i <= n; i++ {
				out[i-1], _ = c.convert(x.RawGetInt(i), depth+1)
			}
			return out, true
		}
		// Keys become strings; where a number or boolean key collides with
		// a string key ({[1] = "a", ["1"] = "b"}), the string key wins.
		out := make(map[string]any, count)
		x.ForEach(func(k, e lua.LValue) {
			var key string
			switch kk := k.(type) {
			case lua.LNumber:
				key = kk.String()
			case lua.LBool:
				key = strconv.FormatBool(bool(kk))
			default:
				return
			}
			if g, ok := c.convert(e, depth+1); ok {
				out[key] = g
			}
		})
		x.ForEach(func(k, e lua.LValue) {
			if kk, ok := k.(lua.LString); ok {
				if g, ok := c.convert(e, depth+1); ok {
					out[string(kk)] = g
				} else {
					delete(out, string(kk))
				}
			}
		})
		return out, true
	}
	return nil, false
}

// toLua converts a Go value (a tool input decoded from JSON, an execution
// context) into a Lua value in L.
func toLua(L *lua.LState, v any, depth int) lua.LValue {
	if depth > maxValueDepth {
		return lua.LNil
	}
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case string:
		return lua.LString(x)
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case float32:
		return lua.LNumber(x)
	case int:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case int32:
		return lua.LNumber(x)
	case uint64:
		return lua.LNumber(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return lua.LString(x.String())
		}
		return lua.LNumber(f)
	case json.RawMessage:
		var d any
		if err := json.Unmarshal(x, &d); err != nil {
			return lua.LString(string(x))
		}
		return toLua(L, d, depth)
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			t.RawSetInt(i+1, toLua(L, e, depth+1)) // Append would drop nils
		}
		return t
	case []string:
		t := L.CreateTable(len(x), 0)
		for _, e := range x {
			t.Append(lua.LString(e))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, toLua(L, e, depth+1))
		}
		return t
	case map[string]string:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, lua.LString(e))
		}
		return t
	}
	return reflectToLua(L, reflect.ValueOf(v), depth)
}

// reflectToLua handles the remaining kinds (typed slices and maps, other
// integer types); anything else becomes its fmt.Sprint text.
func reflectToLua(L *lua.LState, rv reflect.Value, depth int) lua.LValue {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return lua.LNumber(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return lua.LNumber(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return lua.LNumber(rv.Float())
	case reflect.String:
		return lua.LString(rv.String())
	case reflect.Bool:
		return lua.LBool(rv.Bool())
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return lua.LNil
		}
		return toLua(L, rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		t := L.CreateTable(rv.Len(), 0)
		for i := 0; i < rv.Len(); i++ {
			t.RawSetInt(i+1, toLua(L, rv.Index(i).Interface(), depth+1))
		}
		return t
	case reflect.Map:
		t := L.CreateTable(0, rv.Len())
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			t.RawSetString(fmt.Sprint(k.Interface()), toLua(L, rv.MapIndex(k).Interface(), depth+1))
		}
		return t
	case reflect.Invalid:
		return lua.LNil
	}
	return lua.LString(fmt.Sprint(rv.Interface()))
}
