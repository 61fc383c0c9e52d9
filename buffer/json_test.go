package buffer

import (
	"encoding/json"
	"reflect"
	"testing"
)

// stdInput decodes s the way the parser did before decodeInput: with
// encoding/json, then without null-valued keys in objects.
func stdInput(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		return dropNulls(m), nil
	}
	return dropNullsValue(v), nil
}

// dropNullsValue applies dropNulls inside a value that is not an object
// (decodeInput drops nulls in every object, at any depth).
func dropNullsValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return dropNulls(x)
	case []any:
		dropNullsIn(x)
	}
	return v
}

var jsonCases = []struct {
	in   string
	fast bool // the fast path must take it (valid, nothing unusual)
}{
	{`{"command": "ls -la", "timeout": 30}`, true},
	{`{"a": null, "b": {"c": null, "d": [null, {"e": null}]}}`, true},
	{`{"a": 1, "a": null}`, true},
	{`{"a": null, "a": 2}`, true},
	{` {"x":[1,-0.5e+3,0,1E2,true,false,null,"",{}]} `, true},
	{`{"s": "tab\there \"quoted\" back\\slash \/ \b\f\n\r"}`, true},
	{`{"u": "\u00e9\u6771\ud83d\ude00 2\u003e\u00261"}`, true},
	{`{"lone": "\ud800 x \udc00 \ud800\u0041"}`, true},
	{"{\"bad utf8\": \"a\xffb\xc3\"}", true},
	{`{"key with ünïcödé": "東京"}`, true},
	{`[1, 2]`, true},
	{`"just a string"`, true},
	{`null`, true},
	{`{"big": 1e400}`, false},
	{`{"trailing": 1,}`, false},
	{`{"a" 1}`, false},
	{`{"a": 01}`, false},
	{`{"a": 1.}`, false},
	{`{"a": .5}`, false},
	{`{"a": -}`, false},
	{`{"a": tru}`, false},
	{`{"a": "\x"}`, false},
	{`{"a": "\u12"}`, false},
	{"{\"a\": \"line\nbreak\"}", false},
	{`{"a": 1} x`, false},
	{`{'a': 1}`, false},
	{``, false},
	{`{`, false},
}

func TestDecodeInputMatchesEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		v, ok := decodeInput(c.in)
		if ok != c.fast {
			t.Errorf("decodeInput(%q) ok = %v, want %v", c.in, ok, c.fast)
		}
		compareInput(t, c.in, v, ok)
	}
}

func compareInput(t *testing.T, in string, v any, ok bool) {
	t.Helper()
	want, err := stdInput(in)
	if !ok {
		return // the parser falls back to encoding/json itself
	}
	if err != nil {
		t.Fatalf("decodeInput accepted %q, encoding/json says %v", in, err)
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("decodeInput(%q) = %#v, encoding/json gives %#v", in, v, want)
	}
}

// FuzzDecodeInput: whatever the fast path accepts, encoding/json accepts
// too and decodes to the same value.
func FuzzDecodeInput(f *testing.F) {
	for _, c := range jsonCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, ok := decodeInput(in)
		compareInput(t, in, v, ok)
	})
}
