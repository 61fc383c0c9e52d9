package preview

import (
	"encoding/json"
	"reflect"
	"sort"
)

// generic writes the fallback summary of a tool without a formatter:
//
//	key1="val1", key2=42, list=[3 items], obj={a, b, +2 more}
//
// Scalar-valued keys come first, then table-valued ones, each group sorted
// by key in byte order. Strings are quoted with inner quotes escaped; numbers
// and booleans are bare. Absent values (JSON null) are left out, like the
// keys a Lua table cannot hold. The label key is listed like any other.
func generic(l *line, in map[string]any) {
	var scalars, tables []string
	for k, v := range in {
		switch classify(v) {
		case scalar:
			scalars = append(scalars, k)
		case table:
			tables = append(tables, k)
		}
	}
	sort.Strings(scalars)
	sort.Strings(tables)
	n := 0
	for _, keys := range [2][]string{scalars, tables} {
		for _, k := range keys {
			if l.full() {
				return
			}
			if n > 0 {
				l.raw(", ")
			}
			n++
			l.text(k)
			l.raw("=")
			switch v := in[k].(type) {
			case string:
				l.quoted(v)
			default:
				if classify(v) == table {
					l.writeTable(v)
				} else if stringKind(v) {
					l.quoted(scalarText(v))
				} else {
					l.text(scalarText(v))
				}
			}
		}
	}
}

// stringKind reports a non-string value whose underlying type is a string
// (a named string type, a *string), which the generic form quotes like one.
// json.Number, also a string underneath, is a number.
func stringKind(v any) bool {
	if _, ok := v.(json.Number); ok {
		return false
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		rv = rv.Elem()
	}
	return rv.Kind() == reflect.String
}
