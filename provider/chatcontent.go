package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// piece is a decoded bit of a streamed assistant message: answer text or
// reasoning text, in the order the server sent them.
type piece struct {
	thinking bool
	text     string
}

// errUnknownPart is a content part of a type no server documents: the
// chunk is reported as unreadable rather than skipped.
var errUnknownPart = errors.New("unknown content part")

// contentPieces decodes a Chat Completions delta.content in every shape a
// server documents:
//
//   - a string (OpenAI and every compatible server), or null;
//   - an array of parts (Mistral's reasoning models: magistral-*, and
//     mistral-small/medium with reasoning_effort): {"type":"text","text"},
//     {"type":"thinking","thinking":[parts…]} (the parts text or
//     reference; a plain string is taken too), {"type":"reference",
//     "reference_ids":[…]} (citations of documents a tool returned: no
//     text to show).
//
// Any other shape is an error, so the caller reports the chunk instead of
// dropping it.
func contentPieces(raw json.RawMessage) ([]piece, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if s == "" {
			return nil, nil
		}
		return []piece{{text: s}}, nil
	case '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return nil, err
		}
		var out []piece
		for _, p := range parts {
			ps, err := contentPart(p, false)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
		return out, nil
	}
	return nil, errors.New("content is neither a string nor a list of parts")
}

// contentPart decodes one part of a content array; inThinking: the part
// belongs to a thinking part (its text is reasoning).
func contentPart(raw json.RawMessage, inThinking bool) ([]piece, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' { // a bare string inside a list
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return nonEmpty(piece{thinking: inThinking, text: s}), nil
	}
	var p struct {
		Type     string          `json:"type"`
		Text     *string         `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	switch p.Type {
	case "text":
		if p.Text == nil {
			return nil, nil
		}
		return nonEmpty(piece{thinking: inThinking, text: *p.Text}), nil
	case "thinking":
		th := bytes.TrimSpace(p.Thinking)
		if len(th) == 0 || string(th) == "null" {
			return nil, nil
		}
		if th[0] == '"' {
			var s string
			if err := json.Unmarshal(th, &s); err != nil {
				return nil, err
			}
			return nonEmpty(piece{thinking: true, text: s}), nil
		}
		var inner []json.RawMessage
		if err := json.Unmarshal(th, &inner); err != nil {
			return nil, err
		}
		var out []piece
		for _, q := range inner {
			ps, err := contentPart(q, true)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
		return out, nil
	case "reference":
		return nil, nil // ids of documents a tool returned: nothing to show
	}
	return nil, errUnknownPart
}

func nonEmpty(p piece) []piece {
	if p.text == "" {
		return nil
	}
	return []piece{p}
}

// thinkTags splits reasoning written inline into the answer, as models of
// the DeepSeek-R1 lineage do on servers that do not separate it
// (`<think>…</think>`; Gemini's OpenAI-compatible endpoint writes
// `<thought>…</thought>` when asked to include thoughts): an opening tag at
// the very start of the answer (after whitespace) makes everything up to
// its closing tag reasoning. A tag anywhere else is answer text. Tags may
// arrive split across chunks: text that may still be the start of a tag
// is held back until it is decided.
type thinkTags struct {
	state   int // tagsStart, tagsInside or tagsText
	close   string
	pending string
	trimNL  bool // the line breaks after a closing tag are dropped
}

const (
	tagsStart = iota
	tagsInside
	tagsText
)

var openTags = []struct{ open, close string }{{"<think>", "</think>"}, {"<thought>", "</thought>"}}

// feed takes a piece of answer text and returns what it decides.
func (t *thinkTags) feed(s string) []piece {
	var out []piece
	for s != "" || t.pending != "" {
		switch t.state {
		case tagsText:
			s = t.pending + s
			if t.trimNL {
				s = strings.TrimLeft(s, "\r\n")
				t.trimNL = s == ""
			}
			t.pending = ""
			return append(out, nonEmpty(piece{text: s})...)
		case tagsStart:
			buf := t.pending + s
			s, t.pending = "", ""
			rest := strings.TrimLeft(buf, " \t\r\n")
			if rest == "" {
				t.pending = buf
				return out
			}
			decided := false
			for _, tag := range openTags {
				if strings.HasPrefix(rest, tag.open) {
					t.state, t.close = tagsInside, tag.close
					s = rest[len(tag.open):]
					decided = true
					break
				}
				if strings.HasPrefix(tag.open, rest) {
					t.pending = buf // may still become the tag
					return out
				}
			}
			if !decided {
				t.state = tagsText
				s = buf
			}
		case tagsInside:
			buf := t.pending + s
			s, t.pending = "", ""
			if i := strings.Index(buf, t.close); i >= 0 {
				out = append(out, nonEmpty(piece{thinking: true, text: buf[:i]})...)
				t.state, t.trimNL = tagsText, true
				s = buf[i+len(t.close):]
				continue
			}
			keep := partialSuffix(buf, t.close)
			out = append(out, nonEmpty(piece{thinking: true, text: buf[:len(buf)-keep]})...)
			t.pending = buf[len(buf)-keep:]
			return out
		}
	}
	return out
}

// flush returns what is held back at the end of the answer.
func (t *thinkTags) flush() []piece {
	p := t.pending
	t.pending = ""
	if t.state == tagsInside {
		return nonEmpty(piece{thinking: true, text: p})
	}
	return nonEmpty(piece{text: p})
}

// partialSuffix is the length of the longest end of s that begins tag.
func partialSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}
