package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
)

// marshal encodes v without HTML escaping ('<', '>', '&' stay as they are:
// they are common in code and prompts). Map keys come out sorted at every
// depth, which keeps the request bytes stable for prompt caching.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeOrdered encodes the top-level object with its keys sorted, except
// that the trailing keys come last, in the given order. Providers put the
// big, growing parts (tools, messages) last so the byte prefix of two
// consecutive requests stays identical (send.md §1.5).
func encodeOrdered(m map[string]any, trailing ...string) ([]byte, error) {
	isTrailing := map[string]bool{}
	for _, k := range trailing {
		isTrailing[k] = true
	}
	var keys []string
	for k := range m {
		if !isTrailing[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range trailing {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := marshal(m[k])
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// objectJSON validates raw as a JSON object and returns it compacted; any
// other input (empty, invalid, not an object) gives "{}".
// incompleteJSON reports streamed arguments that are not a whole JSON
// object (none at all is a call without arguments: complete).
func incompleteJSON(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] != '{' || !json.Valid(raw))
}

func objectJSON(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(buf.Bytes())
}

// displayJSON renders a JSON value on one line in the style of the .chat
// format, `{"command": "make test", "label": "running tests"}`: a space
// after every ':' and ',' outside strings, key order and string escapes as
// the model wrote them. Invalid input gives "{}".
func displayJSON(raw []byte) string {
	var c bytes.Buffer
	if err := json.Compact(&c, bytes.TrimSpace(raw)); err != nil || c.Len() == 0 {
		return "{}"
	}
	b := c.Bytes()
	var out strings.Builder
	out.Grow(len(b) + len(b)/8)
	inStr, esc := false, false
	for _, ch := range b {
		out.WriteByte(ch)
		switch {
		case inStr && esc:
			esc = false
		case inStr && ch == '\\':
			esc = true
		case ch == '"':
			inStr = !inStr
		case !inStr && (ch == ':' || ch == ','):
			out.WriteByte(' ')
		}
	}
	return out.String()
}

// normalizeToolID makes a tool id acceptable to Anthropic and OpenAI
// (`^[A-Za-z0-9_-]{1,64}$`). An id that already is stays as it is; any
// other (another provider's, such as Vertex's urn:flemma:tool:…, or one
// typed by hand) has every other byte replaced by '_', is cut to leave
// room, and gets "_" and 8 hex digits of its hash: two different ids never
// become the same one (the API rejects a repeated tool_use id), and the
// same id is normalized the same way in the call and in its result.
func normalizeToolID(id string) string {
	b := []byte(id)
	changed := len(b) == 0 || len(b) > 64
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
			changed = true
		}
	}
	if !changed {
		return id
	}
	if len(b) > 55 {
		b = b[:55]
	}
	sum := sha256.Sum256([]byte(id))
	stem := strings.TrimRight(string(b), "_")
	if stem == "" {
		return "id_" + hex.EncodeToString(sum[:4])
	}
	return stem + "_" + hex.EncodeToString(sum[:4])
}

// wireName encodes an internal tool name for the wire: ':' (namespacing) is
// not allowed by the providers and becomes "__".
func wireName(name string) string { return strings.ReplaceAll(name, ":", "__") }

// internalName decodes a wire name: every "__" becomes ':'. A tool whose
// real name contains "__" is therefore shown with ':' (send.md §1.4).
func internalName(name string) string { return strings.ReplaceAll(name, "__", ":") }

// toolResultText is a tool result's content as every provider gets it:
// never blank. Anthropic rejects an error result without content
// ("content cannot be empty if is_error is true"), and an empty answer
// leaves any model guessing whether the call ran.
func toolResultText(r *ToolResult) string {
	switch {
	case strings.TrimSpace(r.Content) != "":
		return r.Content
	case r.IsError:
		return "(error without message)"
	}
	return "(no output)"
}

// toolUseEvent is a tool call whose arguments (raw) were assembled from
// the stream: an object, or {} and marked incomplete when they are not
// one (cut off, or invalid).
func toolUseEvent(id, name string, raw []byte) Event {
	return Event{Kind: EventToolUse, ToolUse: &ToolUse{ID: id, Name: internalName(name), Input: objectJSON(raw), Incomplete: incompleteJSON(raw)}}
}
