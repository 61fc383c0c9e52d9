package buffer

// Bounds on a tool call's input, wherever it is received: the buffer's
// parser, the executor's validation and the call of a Lua tool use them. A
// deeper or larger input is refused with a message the model can read: it
// would cost the host and Neovim stack and memory for nothing a tool
// needs (a 9,000-level input closed Neovim's RPC channel; issue 24,
// class 12).
const (
	MaxInputDepth = 64      // nesting of arrays and objects
	MaxInputBytes = 8 << 20 // bytes of JSON text
)

// JSONDepth returns the deepest nesting of arrays and objects in the JSON
// text raw, stopping early once it passes limit (then it returns a value
// above limit). It does not validate: strings are skipped with their
// escapes, everything else but brackets is ignored.
func JSONDepth(raw string, limit int) int {
	depth, deepest := 0, 0
	inStr, esc := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case inStr:
			inStr = c != '"'
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// InputTooLarge says why a tool input in JSON text is refused ("" when it
// is within MaxInputDepth and MaxInputBytes).
func InputTooLarge(raw string) string {
	if len(raw) > MaxInputBytes {
		return "the input is larger than 8 MiB (flemma's limit)"
	}
	if JSONDepth(raw, MaxInputDepth) > MaxInputDepth {
		return "the input is nested deeper than 64 levels (flemma's limit)"
	}
	return ""
}

// ValueDepth is JSONDepth for a decoded value (maps and slices of any, as
// encoding/json and msgpack produce), stopping early past limit.
func ValueDepth(v any, limit int) int {
	var walk func(v any, d int) int
	walk = func(v any, d int) int {
		if d > limit {
			return d
		}
		deepest := d
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				if n := walk(e, d+1); n > deepest {
					deepest = n
					if n > limit {
						return n
					}
				}
			}
			if len(x) == 0 {
				deepest = d + 1
			}
		case []any:
			for _, e := range x {
				if n := walk(e, d+1); n > deepest {
					deepest = n
					if n > limit {
						return n
					}
				}
			}
			if len(x) == 0 {
				deepest = d + 1
			}
		}
		return deepest
	}
	return walk(v, 0)
}
