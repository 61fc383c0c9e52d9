package tools

import (
	"fmt"
	"reflect"
	"strings"
)

// SchemaFor derives an OpenAI strict-mode JSON Schema from a struct type:
// every exported field with a json tag is a property, all properties are
// required, pointer fields are nullable (optional), and additionalProperties
// is false. The `desc` tag gives the description. It panics on a type it
// cannot describe, because built-ins are declared at start-up and a
// misdefined one must fail loudly there.
func SchemaFor(t reflect.Type) map[string]any {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tools: input type %s is not a struct", t))
	}
	props := map[string]any{}
	var required []any
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			panic(fmt.Sprintf("tools: field %s.%s needs a json tag", t, f.Name))
		}
		desc := f.Tag.Get("desc")
		if desc == "" {
			panic(fmt.Sprintf("tools: field %s.%s needs a desc tag", t, f.Name))
		}
		p := typeSchema(f.Type, t, f.Name)
		p["description"] = desc
		props[name] = p
		required = append(required, name)
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

func typeSchema(ft reflect.Type, owner reflect.Type, field string) map[string]any {
	nullable := false
	if ft.Kind() == reflect.Pointer {
		nullable = true
		ft = ft.Elem()
	}
	var typ string
	out := map[string]any{}
	switch ft.Kind() {
	case reflect.String:
		typ = "string"
	case reflect.Bool:
		typ = "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64:
		typ = "integer"
	case reflect.Float32, reflect.Float64:
		typ = "number"
	case reflect.Slice:
		if ft.Elem().Kind() != reflect.String {
			panic(fmt.Sprintf("tools: field %s.%s: only []string slices are supported", owner, field))
		}
		typ = "array"
		out["items"] = map[string]any{"type": "string"}
	default:
		panic(fmt.Sprintf("tools: field %s.%s has unsupported type %s", owner, field, ft))
	}
	if nullable {
		out["type"] = []any{typ, "null"}
	} else {
		out["type"] = typ
	}
	return out
}
