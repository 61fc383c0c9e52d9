package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/santhosh-tekuri/jsonschema/v6"
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

// Schemas come from built-ins, from Lua and from MCP servers; the last two
// are not the host's, and an MCP server's is not even the user's. A schema
// is compiled by CompileSchema only: self-contained (every external URL
// refused, so a "$ref": "file:///tmp/fifo" opens nothing), bounded in size
// and depth, and under a time limit — outside every lock, so that a slow
// one delays only the tool it belongs to (issue 24, class 8).
const (
	MaxSchemaBytes       = 1 << 20 // JSON text of one schema
	MaxSchemaDepth       = 64      // nesting of its objects and arrays
	SchemaCompileTimeout = 2 * time.Second
)

// ErrSchemaTimeout: a schema did not compile in SchemaCompileTimeout.
var ErrSchemaTimeout = errors.New("the schema took too long to compile")

// schemaURL is the name of the one resource a schema's compiler holds.
// (Deriving it from the tool's name broke on names that are not URL paths:
// "name#output" became a fragment, "ns:name" a port.)
const schemaURL = "mem:///schema.json"

// noLoader refuses every URL a schema refers to: its own document is the
// only one there is (the draft metaschemas are built into the compiler).
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	if len(url) > 200 {
		url = url[:200] + "…"
	}
	return nil, fmt.Errorf("flemma loads no schema from %s: a tool's schema must be self-contained", url)
}

// CompileSchema compiles a tool's JSON Schema (see above for the bounds).
func CompileSchema(schema map[string]any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSchemaBytes {
		return nil, fmt.Errorf("the schema is larger than %s", FormatSize(MaxSchemaBytes))
	}
	if buffer.JSONDepth(string(b), MaxSchemaDepth) > MaxSchemaDepth {
		return nil, fmt.Errorf("the schema is nested deeper than %d levels", MaxSchemaDepth)
	}
	type compiled struct {
		s   *jsonschema.Schema
		err error
	}
	done := make(chan compiled, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- compiled{err: fmt.Errorf("the schema does not compile: %v", p)}
			}
		}()
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			done <- compiled{err: err}
			return
		}
		c := jsonschema.NewCompiler()
		c.UseLoader(noLoader{})
		if err := c.AddResource(schemaURL, doc); err != nil {
			done <- compiled{err: err}
			return
		}
		s, err := c.Compile(schemaURL)
		done <- compiled{s, err}
	}()
	t := time.NewTimer(SchemaCompileTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.s, r.err
	case <-t.C:
		// Compiling reads nothing: the goroutine ends when the work does.
		return nil, fmt.Errorf("%w (%s)", ErrSchemaTimeout, SchemaCompileTimeout)
	}
}

// CheckSchemas compiles a tool's input and output schemas, for a
// registration that must refuse a schema the executor could not use.
func CheckSchemas(spec Spec) error {
	if spec.InputSchema != nil {
		if _, err := CompileSchema(spec.InputSchema); err != nil {
			return fmt.Errorf("input schema: %w", err)
		}
	}
	if spec.OutputSchema != nil {
		if _, err := CompileSchema(spec.OutputSchema); err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
	}
	return nil
}
