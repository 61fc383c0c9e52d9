package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
)

// TypedFunc is the handler of a built-in: it receives its input already
// decoded into the declared struct.
type TypedFunc[In any] func(ctx context.Context, call Call, in In) (Output, error)

type typed[In any] struct {
	spec Spec
	fn   TypedFunc[In]
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(:[a-z0-9_]+)*$`)

// ValidName reports whether name is a valid tool name: snake_case, with `:`
// allowed for namespacing ("slack:channels_list").
func ValidName(name string) bool { return len(name) <= 64 && nameRE.MatchString(name) }

// Typed declares a built-in whose input schema is derived from In. It panics
// when the declaration is invalid (bad name, missing description, In not a
// describable struct): built-ins are declared at start-up.
func Typed[In any](spec Spec, fn TypedFunc[In]) Tool {
	if !ValidName(spec.Name) {
		panic(fmt.Sprintf("tools: invalid built-in name %q", spec.Name))
	}
	if spec.Description == "" {
		panic(fmt.Sprintf("tools: built-in %q has no description", spec.Name))
	}
	if fn == nil {
		panic(fmt.Sprintf("tools: built-in %q has no handler", spec.Name))
	}
	spec.InputSchema = SchemaFor(reflect.TypeFor[In]())
	spec.Strict = true
	if spec.Source == "" {
		spec.Source = "built-in"
	}
	return &typed[In]{spec: spec, fn: fn}
}

func (t *typed[In]) Spec() Spec { return t.spec }

func (t *typed[In]) Run(ctx context.Context, call Call, raw json.RawMessage) (Output, error) {
	var in In
	if err := json.Unmarshal(raw, &in); err != nil {
		// The executor validated the input first, so this is unexpected.
		return Output{}, &Internal{Err: fmt.Errorf("decode input: %w", err)}
	}
	return t.fn(ctx, call, in)
}
