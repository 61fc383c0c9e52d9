package frontmatter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// maxJSONDepth bounds the nesting of a JSON frontmatter.
const maxJSONDepth = 64

// evaluateJSON applies a JSON frontmatter: {"flemma": {...}} sets options
// through the same applier as flemma.opt, every other top-level key is a
// template variable.
func evaluateJSON(src Source, setup Setup, limits Limits, res *Result) {
	p := &jsonParser{dec: json.NewDecoder(strings.NewReader(src.Code)), lines: newLineIndex(src.Code), start: src.StartLine}
	p.dec.UseNumber()
	val, err := p.value(0)
	if err == nil {
		if _, terr := p.dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the top-level value")
		}
	}
	if err != nil {
		offset := p.dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			offset = se.Offset
		}
		res.Diagnostics = append(res.Diagnostics, Diagnostic{Line: p.bufferLine(offset), Severity: SeverityError,
			Message: "JSON parse error: " + err.Error()})
		return
	}
	obj, ok := val.(*cfgTable)
	if !ok || obj.array {
		got := typeName(val)
		if val == nil {
			got = "null"
		}
		res.Diagnostics = append(res.Diagnostics, Diagnostic{Line: src.StartLine + 1, Severity: SeverityWarning,
			Message: "Frontmatter must be an object, got " + got})
		return
	}
	es := newEvalState(setup, "flemma", src.StartLine, limits)
	for i, k := range obj.keys {
		line := obj.lines[i]
		if k == "flemma" {
			ft, ok := obj.vals[i].(*cfgTable)
			if !ok || ft.array {
				es.errorf(line, `"flemma" must be an object, got %s`, typeName(obj.vals[i]))
				continue
			}
			es.apply(schema(), ft, line)
			continue
		}
		if obj.vals[i] == nil {
			delete(res.Vars, k) // null drops the key
			continue
		}
		res.Vars[k] = jsonToGo(obj.vals[i])
	}
	res.Opts = es.options()
	res.Diagnostics = append(res.Diagnostics, es.diags...)
}

// jsonParser decodes JSON into the applier's value model, keeping the order
// of object keys and the buffer line of each.
type jsonParser struct {
	dec   *json.Decoder
	lines lineIndex
	start int
}

func (p *jsonParser) bufferLine(offset int64) int {
	return p.start + p.lines.line(int(offset))
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxJSONDepth)
	}
	tok, err := p.dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := &cfgTable{json: true}
			for p.dec.More() {
				ktok, err := p.dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := ktok.(string)
				line := p.bufferLine(p.dec.InputOffset() - 1)
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				obj.keys = append(obj.keys, key)
				obj.vals = append(obj.vals, v)
				obj.lines = append(obj.lines, line)
			}
			if _, err := p.dec.Token(); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		case '[':
			arr := &cfgTable{json: true, array: true}
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				arr.seq = append(arr.seq, v)
			}
			if _, err := p.dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %v", t, err)
		}
		return f, nil
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// jsonToGo converts a decoded JSON value into a template variable.
func jsonToGo(v any) any {
	switch x := v.(type) {
	case float64:
		return goNumber(x)
	case *cfgTable:
		if x.array {
			out := make([]any, len(x.seq))
			for i, e := range x.seq {
				out[i] = jsonToGo(e)
			}
			return out
		}
		out := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			out[k] = jsonToGo(x.vals[i])
		}
		return out
	}
	return v
}

// lineIndex maps byte offsets to 1-based line numbers.
type lineIndex []int // offsets of the '\n' bytes

func newLineIndex(s string) lineIndex {
	var idx lineIndex
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			idx = append(idx, i)
		}
	}
	return idx
}

func (li lineIndex) line(offset int) int {
	return 1 + sort.SearchInts(li, offset)
}
