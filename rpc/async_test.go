package rpc

import (
	"reflect"
	"testing"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/cycle"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
)

// TestConvertArgStrings: a list of strings (a buffer's lines) reaches a
// []string parameter; anything else in it is refused.
func TestConvertArgStrings(t *testing.T) {
	typ := reflect.TypeOf([]string(nil))
	v, err := convertArg([]any{"a", ""}, typ)
	if err != nil || !reflect.DeepEqual(v.Interface(), []string{"a", ""}) {
		t.Fatalf("convertArg = %v, %v", v, err)
	}
	if _, err := convertArg([]any{"a", int64(1)}, typ); err == nil {
		t.Errorf("a number in the list was accepted")
	}
	if _, err := convertArg("a", typ); err == nil {
		t.Errorf("a string was accepted as a list")
	}
}

// TestConvertArgTables: a table reaches a struct parameter by its msgpack
// field names, as the synchronous handler would decode it.
func TestConvertArgTables(t *testing.T) {
	v, err := convertArg(map[string]any{"name": "mine", "priority": int64(70), "description": "d"}, reflect.TypeOf(cycle.ResolverInfo{}))
	if err != nil || v.Interface() != (cycle.ResolverInfo{Name: "mine", Priority: 70, Description: "d"}) {
		t.Fatalf("convertArg = %+v, %v", v, err)
	}
	n := int64(12)
	v, err = convertArg(map[string]any{"max_lines": n}, reflect.TypeOf(cycle.TruncateOpts{}))
	if o := v.Interface().(cycle.TruncateOpts); err != nil || o.MaxLines == nil || *o.MaxLines != 12 || o.MaxBytes != nil {
		t.Fatalf("convertArg = %+v, %v", v, err)
	}
	if _, err := convertArg("text", reflect.TypeOf(cycle.ResolverInfo{})); err == nil {
		t.Error("a string was accepted as a table")
	}
}

// TestEveryMethodIsAsync: every method's parameters are of kinds
// convertArg takes, since the plugin calls every method through
// flemma.async.
func TestEveryMethodIsAsync(t *testing.T) {
	h := NewHost("test", nil, cycle.Deps{Registry: tools.NewRegistry(), Providers: func(string, provider.Config) (provider.Provider, error) { return nil, nil },
		Resolvers: func(approval.Setup) []approval.Resolver { return nil }})
	for _, m := range h.Methods() {
		ft := reflect.TypeOf(m.Fn)
		for i := range ft.NumIn() {
			switch k := ft.In(i).Kind(); k {
			case reflect.Int, reflect.String, reflect.Bool, reflect.Float64, reflect.Struct, reflect.Map, reflect.Ptr:
			case reflect.Slice:
				if ft.In(i).Elem().Kind() != reflect.String {
					t.Errorf("%s: parameter %d is %s", m.Name, i+1, ft.In(i))
				}
			default:
				t.Errorf("%s: parameter %d is %s", m.Name, i+1, ft.In(i))
			}
		}
	}
}
