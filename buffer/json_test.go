package buffer

import (
	"encoding/json"
	"reflect"
	"strings"
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
	{`{"k\u0041\n": "escaped key"}`, true},
	{`{"n": ` + strings.Repeat("9", 300) + `.5}`, true}, // no conversion needed to accept it
	{`{"big": 1e400}`, false},
	{`{"big": ` + strings.Repeat("9", 309) + `}`, false}, // out of range without an exponent
	{`{"a": "\`, false},
	{`{"a": "\u00`, false},
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
		// Parse's check (validInput, which builds nothing) accepts the
		// same texts.
		if valid, _ := validInput(c.in); valid != c.fast {
			t.Errorf("validInput(%q) = %v, want %v", c.in, valid, c.fast)
		}
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
		// Parse checks an input with validInput and decodes it later
		// (ToolUse.Input): both must accept the same texts.
		valid, depth := validInput(in)
		if valid != ok {
			t.Fatalf("validInput(%q) = %v, decodeInput ok = %v", in, valid, ok)
		}
		if valid && depth != JSONDepth(in, maxInputDepth+1) {
			t.Fatalf("validInput(%q): depth %d, JSONDepth %d", in, depth, JSONDepth(in, maxInputDepth+1))
		}
	})
}

// TestInputDecodedOnDemand: Parse checks a tool input and Input decodes it
// when asked, each time into a map of the caller's own.
func TestInputDecodedOnDemand(t *testing.T) {
	text := "@Assistant:\n**Tool Use:** `bash` (`a`)\n\n```json\n{\"command\": \"ls\", \"x\": null, \"o\": {\"n\": null, \"k\": [1, null]}}\n```\n" +
		"**Tool Use:** `bash` (`b`)\n\n```json\n[1, 2]\n```\n"
	doc := Parse(strings.Split(text, "\n"))
	a, b := doc.Use("a"), doc.Use("b")
	if a == nil || b == nil {
		t.Fatalf("uses: %v", doc.Diagnostics)
	}
	want := map[string]any{"command": "ls", "o": map[string]any{"k": []any{1.0, nil}}}
	first := a.Input()
	if !reflect.DeepEqual(first, want) || !a.IsObject() {
		t.Fatalf("Input() = %#v, want %#v", first, want)
	}
	first["command"] = "rm -rf /"
	if got := a.Input(); !reflect.DeepEqual(got, want) {
		t.Fatalf("a caller's change reached the next reader: %#v", got)
	}
	if b.Input() != nil || b.IsObject() {
		t.Fatalf("an array input: Input() = %#v, IsObject %v", b.Input(), b.IsObject())
	}
	hand := &ToolUse{Name: "x", Args: map[string]any{"k": "v"}}
	if !reflect.DeepEqual(hand.Input(), hand.Args) || !hand.IsObject() {
		t.Fatal("a hand-made ToolUse's Input is not its Args")
	}
}
