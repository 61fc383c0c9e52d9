package provider

import (
	"encoding/json"
	"errors"
	"testing"
)

// The steps the four stream parsers and request builders are made of,
// each by its table of cases.

// TestChatFinishReasons: every finish_reason a server sends, as the stop
// reason of the answer.
func TestChatFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		reason string
		call   bool // a tool call came before it
		want   string
	}{
		{"stop", false, "end_turn"},
		{"end_turn", false, "end_turn"},
		{"eos", false, "end_turn"},
		{"stop", true, "tool_use"}, // Ollama ends tool calls with "stop"
		{"tool_calls", true, "tool_use"},
		{"function_call", false, "tool_use"},
		{"length", false, "max_tokens"},
		{"max_tokens", false, "max_tokens"},
		{"model_length", false, "max_tokens"},
		{"content_filter", false, "content_filter"},
		{"safety", true, "content_filter"},
		{"recitation", false, "incomplete"},
		{"length", true, "max_tokens"},
	} {
		var evs []Event
		p := &chatParser{emit: func(e Event) { evs = append(evs, e) }, provider: "srv"}
		if tc.call {
			if err := p.handle("", []byte(`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"ls","arguments":"{}"}}]}}]}`)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.handle("", []byte(`{"choices":[{"delta":{},"finish_reason":"`+tc.reason+`"}]}`)); err != nil {
			t.Fatalf("%s: %v", tc.reason, err)
		}
		p.finish()
		last := evs[len(evs)-1]
		if last.Kind != EventDone || last.StopReason != tc.want {
			t.Errorf("%s (call %v): %+v, want done %s", tc.reason, tc.call, last, tc.want)
		}
		if tc.call && evs[0].Kind != EventToolUse {
			t.Errorf("%s: the call was not handed on first: %+v", tc.reason, evs)
		}
	}
	// "error": the answer failed, and a retry may succeed.
	p := &chatParser{emit: func(Event) {}, provider: "srv"}
	err := p.handle("", []byte(`{"choices":[{"delta":{},"finish_reason":"error"}]}`))
	var pe *Error
	if !errors.As(err, &pe) || !pe.Retryable || !p.failed || !p.done() {
		t.Errorf("finish_reason error: %v (failed %v)", err, p.failed)
	}
}

// TestChatCallArgs: the argument pieces of a tool call, as servers send
// them.
func TestChatCallArgs(t *testing.T) {
	for _, tc := range []struct {
		pieces []string
		want   string
	}{
		{[]string{`"{\"pa"`, `"th\": \"a\"}"`}, `{"path": "a"}`},
		{[]string{`{"path":"a"}`}, `{"path":"a"}`}, // an object (non-conforming)
		{[]string{`null`, `""`, ``, `  `}, ``},
		{[]string{` "{}" `}, `{}`},
		{[]string{`"{\"a\":"`, `1`, `"}"`}, `{"a":1}`}, // a bare number kept as it is
	} {
		var c chatCall
		for _, pc := range tc.pieces {
			c.addArgs(json.RawMessage(pc))
		}
		if got := c.args.String(); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.pieces, got, tc.want)
		}
	}
}

// TestOpenAIIncompleteStop: response.incomplete by its reason.
func TestOpenAIIncompleteStop(t *testing.T) {
	type details = struct {
		Reason string `json:"reason"`
	}
	for _, tc := range []struct {
		details *details
		want    string
	}{
		{&details{"max_output_tokens"}, "max_tokens"},
		{&details{"content_filter"}, "content_filter"},
		{&details{"something_new"}, "incomplete"},
		{&details{""}, "incomplete"},
		{nil, "incomplete"},
	} {
		if got := openaiIncompleteStop(&openaiResponse{IncompleteDetails: tc.details}); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.details, got, tc.want)
		}
	}
}

// TestVertexFinishReasons: a finish reason ends the answer, is an invalid
// tool call, or a block.
func TestVertexFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		reason  string
		tool    bool
		stop    string // "" : an error
		errText string
	}{
		{"STOP", false, "end_turn", ""},
		{"STOP", true, "tool_use", ""},
		{"FINISH_REASON_UNSPECIFIED", true, "tool_use", ""},
		{"MAX_TOKENS", true, "max_tokens", ""},
		{"MALFORMED_FUNCTION_CALL", true, "", "The model produced an invalid tool call (MALFORMED_FUNCTION_CALL); nothing of it was run. Press <C-]> to send again."},
		{"UNEXPECTED_TOOL_CALL", false, "", "The model produced an invalid tool call (UNEXPECTED_TOOL_CALL); nothing of it was run. Press <C-]> to send again."},
		{"TOO_MANY_TOOL_CALLS", false, "", "The model produced an invalid tool call (TOO_MANY_TOOL_CALLS); nothing of it was run. Press <C-]> to send again."},
		{"SAFETY", false, "", "Response blocked by Vertex AI (SAFETY)"},
		{"SOMETHING_NEW", false, "", "Response blocked by Vertex AI (SOMETHING_NEW)"},
	} {
		var evs []Event
		p := &vertexParser{emit: func(e Event) { evs = append(evs, e) }, name: "vertex", toolUsed: tc.tool}
		err := p.finish(tc.reason)
		if tc.stop == "" {
			var pe *Error
			if !errors.As(err, &pe) || pe.Message != tc.errText || pe.Retryable || p.finished || len(evs) != 0 {
				t.Errorf("%s: %v, %+v", tc.reason, err, evs)
			}
			continue
		}
		if err != nil || !p.finished || len(evs) != 1 || evs[0].StopReason != tc.stop {
			t.Errorf("%s: %v, %+v, want done %s", tc.reason, err, evs, tc.stop)
		}
	}
}

// TestVertexSign: the signature of a model turn rides on its first call,
// else on its text, else on an empty text part.
func TestVertexSign(t *testing.T) {
	parts := func() []map[string]any {
		return []map[string]any{{"text": "<thinking>"}, {"text": "answer"}, {"functionCall": 1}, {"functionCall": 2}}
	}
	for _, tc := range []struct {
		sig              string
		callIdx, textIdx int
		signed           int // index of the signed part; -1: none
		n                int
	}{
		{"s", 2, 1, 2, 4},
		{"s", -1, 1, 1, 4},
		{"s", -1, -1, 4, 5},
		{"", 2, 1, -1, 4},
	} {
		got := vertexSign(parts(), tc.sig, tc.callIdx, tc.textIdx)
		if len(got) != tc.n {
			t.Errorf("%+v: %d parts, want %d", tc, len(got), tc.n)
			continue
		}
		for i, p := range got {
			_, has := p["thoughtSignature"]
			if has != (i == tc.signed) {
				t.Errorf("%+v: part %d signed %v", tc, i, has)
			}
		}
	}
}

// TestAnthropicMessageStop: the stop reason of message_delta ends the
// response; a refusal is an error.
func TestAnthropicMessageStop(t *testing.T) {
	for _, tc := range []struct{ stop, want, err string }{
		{"", "end_turn", ""},
		{"end_turn", "end_turn", ""},
		{"tool_use", "tool_use", ""},
		{"max_tokens", "max_tokens", ""},
		{"pause_turn", "pause_turn", ""},
		{"refusal", "", "Response blocked by Anthropic (refusal)"},
		{"sensitive", "", "Response blocked by Anthropic (sensitive)"},
	} {
		var evs []Event
		p := &anthropicParser{emit: func(e Event) { evs = append(evs, e) }, provider: "anthropic", stop: tc.stop}
		err := p.messageStop()
		if tc.err != "" {
			if err == nil || err.Error() == "" || p.finished || len(evs) != 0 {
				t.Errorf("%s: %v %+v", tc.stop, err, evs)
			}
			var pe *Error
			if errors.As(err, &pe) && pe.Message != tc.err {
				t.Errorf("%s: %q, want %q", tc.stop, pe.Message, tc.err)
			}
			continue
		}
		if err != nil || !p.finished || len(evs) != 1 || evs[0].StopReason != tc.want {
			t.Errorf("%s: %v %+v, want done %s", tc.stop, err, evs, tc.want)
		}
	}
}

// TestStreamErrorMessages: the in-stream error events of Anthropic and
// OpenAI, type and message joined.
func TestStreamErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		e         *anthropicError
		msg       string
		retryable bool
	}{
		{nil, "stream error", false},
		{&anthropicError{Type: "overloaded_error", Message: "Overloaded"}, "overloaded_error — Overloaded", true},
		{&anthropicError{Type: "api_error"}, "api_error", true},
		{&anthropicError{Message: "bad"}, "bad", false},
		{&anthropicError{Type: "invalid_request_error", Message: "no"}, "invalid_request_error — no", false},
	} {
		var pe *Error
		if err := anthropicStreamError("anthropic", tc.e); !errors.As(err, &pe) || pe.Message != withHint(tc.msg) || pe.Retryable != tc.retryable {
			t.Errorf("%+v: %v (retryable %v)", tc.e, err, pe != nil && pe.Retryable)
		}
	}
	for _, tc := range []struct {
		data      string
		msg       string
		retryable bool
	}{
		{`{"type":"error","code":"rate_limit_exceeded","message":"slow down"}`, "stream error (code: rate_limit_exceeded): slow down", true},
		{`{"type":"error","error":{"code":500,"message":"boom"},"message":"outer"}`, "stream error (code: 500): boom", true},
		{`{"type":"error","error":{"code":400,"message":"bad"}}`, "stream error (code: 400): bad", false},
		{`{"type":"error","error":{"type":"server_error","message":"try again"}}`, "stream error: try again", true},
		{`{"type":"error"}`, "stream error", false},
	} {
		var ev openaiEvent
		if err := json.Unmarshal([]byte(tc.data), &ev); err != nil {
			t.Fatal(err)
		}
		var pe *Error
		if err := openaiStreamError(&ev); !errors.As(err, &pe) || pe.Message != withHint(tc.msg) || pe.Retryable != tc.retryable {
			t.Errorf("%s: %v (retryable %v)", tc.data, err, pe != nil && pe.Retryable)
		}
	}
}

// TestEmitText: a piece of text or thinking is handed on; an empty one is
// nothing.
func TestEmitText(t *testing.T) {
	var evs []Event
	emit := func(e Event) { evs = append(evs, e) }
	emitText(emit, EventText, "")
	emitText(emit, EventThinking, "")
	emitText(emit, EventText, "a")
	emitText(emit, EventThinking, " ")
	if len(evs) != 2 || evs[0].Kind != EventText || evs[0].Text != "a" || evs[1].Kind != EventThinking || evs[1].Text != " " {
		t.Errorf("%+v", evs)
	}
}
