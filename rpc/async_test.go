package rpc

import (
	"reflect"
	"testing"
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
