package rpc

import (
	"fmt"
	"reflect"
	"strings"
)

// withOp returns fn (a handler: its last result is an error) with that
// error prefixed by the operation ("cycle: …", "setup: …"): the one error
// rule of the protocol (cycle/protocol.go). Outcomes the user should read
// are in the replies; an error says which operation of the host failed.
func withOp(method string, fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func || t.NumOut() == 0 || t.Out(t.NumOut()-1) != reflect.TypeOf((*error)(nil)).Elem() {
		return fn
	}
	op := strings.TrimPrefix(method, "flemma.")
	return reflect.MakeFunc(t, func(in []reflect.Value) []reflect.Value {
		out := v.Call(in)
		last := len(out) - 1
		if err, _ := out[last].Interface().(error); err != nil && !strings.HasPrefix(err.Error(), op+":") {
			out[last] = reflect.ValueOf(fmt.Errorf("%s: %w", op, err))
		}
		return out
	}).Interface()
}
