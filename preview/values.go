package preview

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// tableKeys is how many keys an object summary names before "+N more"
// ({a, b, +2 more}), as in the Lua plugin.
const tableKeys = 2

// kind classifies an input value the way the Lua plugin sees a decoded
// table: absent (nil, JSON null), a scalar, or a table (object or array).
type kind int

const (
	absent kind = iota
	scalar
	table
)

func classify(v any) kind {
	switch v.(type) {
	case nil:
		return absent
	case string, bool, json.Number, float64, float32,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return scalar
	case map[string]any, []any:
		return table
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return absent
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		return table
	}
	return scalar
}

// scalarText renders a scalar without quotes: strings as they are, numbers
// like Lua's tostring (integers without ".0"), booleans as true/false.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case float64:
		return formatFloat(x, 64)
	case float32:
		return formatFloat(float64(x), 32)
	case int:
		return strconv.FormatInt(int64(x), 10)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint8:
		return strconv.FormatUint(uint64(x), 10)
	case uint16:
		return strconv.FormatUint(uint64(x), 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return strconv.FormatBool(rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return formatFloat(rv.Float(), rv.Type().Bits())
	}
	return fmt.Sprint(v)
}

// formatFloat follows Lua 5.1's tostring ("%.14g": 0.1 → 0.1, 1/3 →
// 0.33333333333333, 1e20 → 1e+20, inf, -inf, nan), except that integral
// values up to 2^53 print exactly (123456789012345, where %.14g would round).
func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == math.Trunc(f) && math.Abs(f) <= 1<<53:
		return strconv.FormatInt(int64(f), 10)
	case bits == 32:
		return strconv.FormatFloat(f, 'g', -1, 32)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// number reports v as a float64 when it is numeric.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// writeTable writes the summary of a table value: arrays as "[]", "[1 item]"
// or "[N items]", objects as "{}", "{a, b}" or "{a, b, +N more}" (the
// tableKeys smallest keys in byte order).
func (l *line) writeTable(v any) {
	switch x := v.(type) {
	case []any:
		l.items(len(x))
		return
	case map[string]any:
		keys := smallest(tableKeys, len(x), func(yield func(string) bool) {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		})
		l.keys(keys, len(x))
		return
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		l.items(rv.Len())
	case reflect.Map:
		iter := rv.MapRange()
		keys := smallest(tableKeys, rv.Len(), func(yield func(string) bool) {
			for iter.Next() {
				if !yield(scalarText(iter.Key().Interface())) {
					return
				}
			}
		})
		l.keys(keys, rv.Len())
	}
}

func (l *line) items(n int) {
	switch n {
	case 0:
		l.raw("[]")
	case 1:
		l.raw("[1 item]")
	default:
		l.raw("[" + strconv.Itoa(n) + " items]")
	}
}

func (l *line) keys(keys []string, n int) {
	l.raw("{")
	for i, k := range keys {
		if i > 0 {
			l.raw(", ")
		}
		l.text(k)
	}
	if more := n - len(keys); more > 0 {
		l.raw(", +" + strconv.Itoa(more) + " more")
	}
	l.raw("}")
}

// smallest returns the k smallest strings of seq in byte order, in O(n·k)
// time, so a huge object costs no sort.
func smallest(k, hint int, seq func(yield func(string) bool)) []string {
	out := make([]string, 0, min(k, hint))
	seq(func(s string) bool {
		i := sort.SearchStrings(out, s)
		if i >= k {
			return true
		}
		if len(out) < k {
			out = append(out, "")
		}
		copy(out[i+1:], out[i:])
		out[i] = s
		return true
	})
	return out
}
