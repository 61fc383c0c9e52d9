package buffer

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeInput decodes the JSON text of a tool input into what
// encoding/json's Unmarshal into an `any` gives, with keys whose value is
// null left out of every object (as dropNulls does). It is the parser's
// fast path: a tool-heavy buffer spent about 45 % of Parse in
// encoding/json. ok is false when s is not valid JSON or when the result
// could differ from encoding/json's in any way (a number out of float64's
// range, nesting deeper than maxInputDepth); the caller then decodes s with
// encoding/json, which also gives the error message. FuzzDecodeInput checks
// that both agree on every input the fast path accepts.
//
// Strings without escapes or malformed UTF-8 share s's memory.
func decodeInput(s string) (v any, ok bool) {
	d := jsonDecoder{s: s}
	d.space()
	v, ok = d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(s)
}

// maxInputDepth bounds the fast path's recursion; deeper inputs go to
// encoding/json (whose own limit is 10,000).
const maxInputDepth = 200

type jsonDecoder struct {
	s string
	i int
	// skip checks the text as the decoder would read it without building
	// the value (no maps, slices or strings; strings are scanned, not
	// unescaped, by skipStr; a number is converted only when it could be
	// out of float64's range, to fail where decoding fails): see
	// validInput.
	skip    bool
	deepest int // the deepest object or array so far
}

// validInput reports whether decodeInput(s) would succeed, and when it
// would the deepest nesting of arrays and objects (JSONDepth's), without
// building the value: what Parse checks of a tool input, which is decoded
// only when asked for (ToolUse.Input).
func validInput(s string) (ok bool, depth int) {
	d := jsonDecoder{s: s, skip: true}
	d.space()
	_, ok = d.value(0)
	if !ok {
		return false, 0
	}
	d.space()
	return d.i == len(s), d.deepest
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.s) || depth > maxInputDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		if d.skip {
			return nil, d.skipStr() // boxing a string would allocate
		}
		return d.str()
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	case c == 't':
		return true, d.word("true")
	case c == 'f':
		return false, d.word("false")
	case c == 'n':
		return nil, d.word("null")
	}
	return nil, false
}

func (d *jsonDecoder) word(w string) bool {
	if len(d.s)-d.i < len(w) || d.s[d.i:d.i+len(w)] != w {
		return false
	}
	d.i += len(w)
	return true
}

func (d *jsonDecoder) object(depth int) (any, bool) {
	d.i++ // {
	d.deepest = max(d.deepest, depth)
	var m map[string]any
	if !d.skip {
		m = map[string]any{}
	}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		var k string
		ok := false
		if d.skip {
			ok = d.skipStr()
		} else {
			k, ok = d.str()
		}
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		switch {
		case d.skip:
		case v == nil:
			delete(m, k) // a later duplicate wins, as in encoding/json; then nulls go
		default:
			m[k] = v
		}
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *jsonDecoder) array(depth int) (any, bool) {
	d.i++ // [
	d.deepest = max(d.deepest, depth)
	var a []any
	if !d.skip {
		a = []any{}
	}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		if !d.skip {
			a = append(a, v)
		}
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.space()
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and converts it
// as encoding/json does (strconv.ParseFloat; out of range fails).
func (d *jsonDecoder) number() (any, bool) {
	start := d.i
	if d.s[d.i] == '-' {
		d.i++
	}
	if d.i >= len(d.s) {
		return nil, false
	}
	intStart := d.i
	if d.s[d.i] == '0' {
		d.i++
	} else if !d.digits() {
		return nil, false
	}
	intDigits := d.i - intStart
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		if !d.digits() {
			return nil, false
		}
	}
	exp := d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E')
	if exp {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return nil, false
		}
	}
	if d.skip && !exp && intDigits <= maxSafeDigits {
		return nil, true // within float64's range: ParseFloat cannot fail
	}
	f, err := strconv.ParseFloat(d.s[start:d.i], 64)
	if err != nil {
		return nil, false
	}
	if d.skip {
		return nil, true
	}
	return f, true
}

// maxSafeDigits: a number without an exponent whose integer part has at
// most this many digits is below float64's largest (~1.8e308), so
// converting it cannot fail (an underflow rounds to zero without error).
const maxSafeDigits = 300

// digits skips [0-9]+ and reports whether there was at least one.
func (d *jsonDecoder) digits() bool {
	start := d.i
	for d.i < len(d.s) && '0' <= d.s[d.i] && d.s[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// str reads a string literal at d.i (on its opening quote) and returns its
// value as encoding/json's unquote does: escapes decoded, a lone or
// mismatched surrogate and each byte of malformed UTF-8 replaced by U+FFFD.
func (d *jsonDecoder) str() (string, bool) {
	d.i++ // "
	start := d.i
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return d.s[start : d.i-1], true
		case c == '\\':
			return d.slowStr(start)
		case c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			d.i++
		default:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			if r == utf8.RuneError && size == 1 {
				return d.slowStr(start)
			}
			d.i += size
		}
	}
	return "", false
}

// skipStr checks a string literal at d.i (on its opening quote) as str
// reads it, without building its value: str fails on a control character,
// a bad escape or a missing closing quote, and nothing else (malformed
// UTF-8 and lone surrogates become U+FFFD), so neither does this.
func (d *jsonDecoder) skipStr() bool {
	d.i++ // "
	for d.i < len(d.s) {
		for d.i < len(d.s) && !strSpecial[d.s[d.i]] {
			d.i++
		}
		if d.i == len(d.s) {
			break
		}
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			return true
		case c < ' ':
			return false
		case c == '\\':
			if d.i+1 >= len(d.s) {
				return false
			}
			switch d.s[d.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i += 2
			case 'u':
				if hex4(d.s[d.i+2:]) < 0 {
					return false
				}
				d.i += 6
			default:
				return false
			}
		}
	}
	return false
}

// strSpecial marks the bytes that end a plain run in a string literal:
// the closing quote, a backslash, a control character.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < ' '; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// slowStr finishes a string that needs rewriting; d.i is where the plain
// prefix beginning at start ends.
func (d *jsonDecoder) slowStr(start int) (string, bool) {
	b := make([]byte, 0, d.i-start+16)
	b = append(b, d.s[start:d.i]...)
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return string(b), true
		case c < ' ':
			return "", false
		case c == '\\':
			if d.i+1 >= len(d.s) {
				return "", false
			}
			e := d.s[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(d.s[d.i:])
				if r < 0 {
					return "", false
				}
				d.i += 4
				if utf16.IsSurrogate(r) {
					if len(d.s)-d.i >= 6 && d.s[d.i] == '\\' && d.s[d.i+1] == 'u' {
						if r2 := hex4(d.s[d.i+2:]); r2 >= 0 {
							if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
								d.i += 6
								b = utf8.AppendRune(b, dec)
								continue
							}
						}
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.i++
		default:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			d.i += size
			b = utf8.AppendRune(b, r)
		}
	}
	return "", false
}

// hex4 reads four hex digits, or returns -1.
func hex4(s string) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
