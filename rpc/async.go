package rpc

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/neovim/go-client/msgpack"
)

// Asynchronous requests. A key press must never freeze Neovim on the host:
// a blocking rpcrequest to a host that hangs (stopped, swapping, stuck in a
// Lua callback) froze the editor for as long, and <C-c> did not help. So the
// plugin sends its requests as the notification flemma.async (id, method,
// args) and returns at once; the host runs the method's handler in a
// goroutine and answers with flemma.host._reply(id, result, error). The
// plugin tells the user when an answer is late and offers to restart the
// host (lua/flemma/host.lua).

// hAsync is the flemma.async notification. Notifications are served one at
// a time, in the order they were sent: an ordered method (setup, tool
// definitions, resolvers, the session's overrides) runs here, so what the
// plugin sends after it sees its effect; the work of any other method goes
// to a goroutine at once. The answer always goes from a goroutine: Neovim
// may be busy, and the next notification must not wait for it.
func (h *Host) hAsync(id int, method string, args []any) {
	answer := func(res any, err error) {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if res == nil {
			res = struct{}{} // an empty table for the plugin
		}
		if e := h.nv.ExecLua(`require("flemma.host")._reply(...)`, nil, id, res, msg); e != nil {
			h.Logf("answer %s (#%d): %v", method, id, e)
		}
	}
	if m, ok := h.async[method]; ok && m.Ordered() {
		res, err := h.callAsync(method, args)
		go answer(res, err)
		return
	}
	go func() { answer(h.callAsync(method, args)) }()
}

// callAsync calls the handler of method with args converted to its
// parameter types (msgpack brings integers as int64 or uint64).
func (h *Host) callAsync(method string, args []any) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.Logf("%s panicked: %v", method, p)
			res, err = nil, fmt.Errorf("%s failed — see the log", method)
		}
	}()
	m, ok := h.async[method]
	if !ok {
		return nil, fmt.Errorf("unknown method %s", method)
	}
	v := reflect.ValueOf(m.Fn)
	t := v.Type()
	if len(args) != t.NumIn() {
		return nil, fmt.Errorf("%s: %d arguments, want %d", method, len(args), t.NumIn())
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		x, err := convertArg(a, t.In(i))
		if err != nil {
			return nil, fmt.Errorf("%s: argument %d: %v", method, i+1, err)
		}
		in[i] = x
	}
	out := v.Call(in)
	if n := len(out); n > 0 {
		if e, _ := out[n-1].Interface().(error); e != nil {
			return nil, e
		}
		if n == 2 {
			return out[0].Interface(), nil
		}
	}
	return nil, nil
}

// convertArg converts one msgpack-decoded argument to a handler's
// parameter type: integers, floats, strings, booleans, lists of strings,
// and tables decoded into structs.
func convertArg(a any, t reflect.Type) (reflect.Value, error) {
	switch t.Kind() {
	case reflect.Int:
		switch x := a.(type) {
		case int64:
			return reflect.ValueOf(int(x)), nil
		case uint64:
			return reflect.ValueOf(int(x)), nil
		case float64:
			return reflect.ValueOf(int(x)), nil
		case int:
			return reflect.ValueOf(x), nil
		}
	case reflect.String:
		if x, ok := a.(string); ok {
			return reflect.ValueOf(x), nil
		}
	case reflect.Bool:
		if x, ok := a.(bool); ok {
			return reflect.ValueOf(x), nil
		}
	case reflect.Float64:
		switch x := a.(type) {
		case float64:
			return reflect.ValueOf(x), nil
		case int64:
			return reflect.ValueOf(float64(x)), nil
		case uint64:
			return reflect.ValueOf(float64(x)), nil
		}
	case reflect.Struct, reflect.Map, reflect.Ptr:
		// Tables (ResolverInfo, TruncateOpts, LuaResult): decoded as the
		// synchronous handler would, by the msgpack field tags.
		var buf bytes.Buffer
		if err := msgpack.NewEncoder(&buf).Encode(a); err != nil {
			return reflect.Value{}, err
		}
		v := reflect.New(t)
		if err := msgpack.NewDecoder(&buf).Decode(v.Interface()); err != nil {
			return reflect.Value{}, fmt.Errorf("%T where %s is expected: %v", a, t, err)
		}
		return v.Elem(), nil
	case reflect.Slice:
		if x, ok := a.([]any); ok && t.Elem().Kind() == reflect.String {
			out := make([]string, len(x))
			for i, e := range x {
				s, ok := e.(string)
				if !ok {
					return reflect.Value{}, fmt.Errorf("%T in a list where %s is expected", e, t)
				}
				out[i] = s
			}
			return reflect.ValueOf(out), nil
		}
	}
	return reflect.Value{}, fmt.Errorf("%T where %s is expected", a, t)
}
