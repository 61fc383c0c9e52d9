package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

// OpenAI Responses stream pieces (ids and text are ours).
func (s *sse) oStart(id string) *sse {
	resp := obj{"id": id, "object": "response", "status": "in_progress", "model": "gpt-test", "output": []any{}, "usage": nil}
	s.event(obj{"type": "response.created", "response": resp, "sequence_number": 0})
	return s.event(obj{"type": "response.in_progress", "response": resp, "sequence_number": 1})
}

func (s *sse) oMessage(index int, id string, chunks ...string) *sse {
	s.event(obj{"type": "response.output_item.added", "output_index": index, "item": obj{"id": id, "type": "message", "status": "in_progress", "content": []any{}, "role": "assistant"}})
	s.event(obj{"type": "response.content_part.added", "output_index": index, "item_id": id, "content_index": 0, "part": obj{"type": "output_text", "annotations": []any{}, "text": ""}})
	for _, c := range chunks {
		s.event(obj{"type": "response.output_text.delta", "output_index": index, "item_id": id, "content_index": 0, "delta": c})
	}
	text := strings.Join(chunks, "")
	s.event(obj{"type": "response.output_text.done", "output_index": index, "item_id": id, "content_index": 0, "text": text})
	s.event(obj{"type": "response.content_part.done", "output_index": index, "item_id": id, "content_index": 0, "part": obj{"type": "output_text", "annotations": []any{}, "text": text}})
	return s.event(obj{"type": "response.output_item.done", "output_index": index, "item": obj{"id": id, "type": "message", "status": "completed",
		"content": []any{obj{"type": "output_text", "annotations": []any{}, "text": text}}, "role": "assistant"}})
}

func (s *sse) oCallAdded(index int, id, callID, name string) *sse {
	return s.event(obj{"type": "response.output_item.added", "output_index": index, "item": obj{"id": id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": callID, "name": name}})
}

func (s *sse) oArgs(index int, id, delta string) *sse {
	return s.event(obj{"type": "response.function_call_arguments.delta", "output_index": index, "item_id": id, "delta": delta})
}

func (s *sse) oCallDone(index int, id, callID, name, args string) *sse {
	s.event(obj{"type": "response.function_call_arguments.done", "output_index": index, "item_id": id, "arguments": args})
	return s.event(obj{"type": "response.output_item.done", "output_index": index, "item": obj{"id": id, "type": "function_call", "status": "completed", "arguments": args, "call_id": callID, "name": name}})
}

func (s *sse) oCall(index int, id, callID, name string, argChunks ...string) *sse {
	s.oCallAdded(index, id, callID, name)
	for _, c := range argChunks {
		s.oArgs(index, id, c)
	}
	return s.oCallDone(index, id, callID, name, strings.Join(argChunks, ""))
}

func reasoningItem(id, encrypted string, summary ...string) obj {
	var parts []any
	for _, s := range summary {
		parts = append(parts, obj{"type": "summary_text", "text": s})
	}
	if parts == nil {
		parts = []any{}
	}
	return obj{"id": id, "type": "reasoning", "encrypted_content": encrypted, "summary": parts}
}

func (s *sse) oReasoning(index int, id, encrypted string, chunks ...string) *sse {
	s.event(obj{"type": "response.output_item.added", "output_index": index, "item": obj{"id": id, "type": "reasoning", "summary": []any{}}})
	if len(chunks) > 0 {
		s.event(obj{"type": "response.reasoning_summary_part.added", "output_index": index, "item_id": id, "summary_index": 0, "part": obj{"type": "summary_text", "text": ""}})
		for _, c := range chunks {
			s.event(obj{"type": "response.reasoning_summary_text.delta", "output_index": index, "item_id": id, "summary_index": 0, "delta": c})
		}
		s.event(obj{"type": "response.reasoning_summary_text.done", "output_index": index, "item_id": id, "summary_index": 0, "text": strings.Join(chunks, "")})
		return s.event(obj{"type": "response.output_item.done", "output_index": index, "item": reasoningItem(id, encrypted, strings.Join(chunks, ""))})
	}
	return s.event(obj{"type": "response.output_item.done", "output_index": index, "item": reasoningItem(id, encrypted)})
}

func (s *sse) oDone(kind string, input, cached, output, reasoning int) *sse {
	resp := obj{"status": strings.TrimPrefix(kind, "response."), "usage": obj{"input_tokens": input, "input_tokens_details": obj{"cached_tokens": cached},
		"output_tokens": output, "output_tokens_details": obj{"reasoning_tokens": reasoning}, "total_tokens": input + output}}
	if kind == "response.incomplete" {
		resp["incomplete_details"] = obj{"reason": "max_output_tokens"}
	}
	return s.event(obj{"type": kind, "response": resp})
}

func openaiStreams() map[string]string {
	s := map[string]*sse{}
	s["text_only"] = new(sse).oStart("resp_o1").oMessage(0, "msg_o1", "Hi", "! What", " are we doing?").oDone("response.completed", 20, 0, 8, 0)
	s["text_then_tool"] = new(sse).oStart("resp_o2").
		oMessage(0, "msg_o2", "I'll check", " the tests.").
		oCall(1, "fc_o2", "call_TestsRun01", "bash", `{"command":`, `"go test ./...",`, `"label":"testing","timeout":null}`).
		oDone("response.completed", 200, 0, 30, 0)
	// two calls whose argument deltas interleave; the done items carry
	// the arguments verbatim
	s["parallel_tools"] = new(sse).oStart("resp_o3").
		oCallAdded(0, "fc_a", "call_Alpha", "read").oCallAdded(1, "fc_b", "call_Beta", "mcp__edit").
		oArgs(0, "fc_a", `{"path":"a.go",`).oArgs(1, "fc_b", `{"path":"b.go",`).
		oArgs(0, "fc_a", `"label":"a","offset":null,"limit":null}`).oArgs(1, "fc_b", `"oldText":"x","newText":"y"}`).
		oCallDone(0, "fc_a", "call_Alpha", "read", `{"path":"a.go","label":"a","offset":null,"limit":null}`).
		oCallDone(1, "fc_b", "call_Beta", "mcp__edit", `{"path":  "b.go", "oldText": "x", "newText": "y"}`).
		oDone("response.completed", 300, 256, 60, 0)
	s["reasoning_then_tool"] = new(sse).oStart("resp_o4").
		oReasoning(0, "rs_o4", "gAAAA-encrypted-test-one", "**Planning**\n\nI will", " list the files.").
		oCall(1, "fc_o4", "call_List01", "ls", `{"path":".","label":"listing","limit":null,"max_depth":null}`).
		oDone("response.completed", 90, 0, 140, 128)
	s["reasoning_no_summary"] = new(sse).oStart("resp_o5").
		oReasoning(0, "rs_o5", "gAAAA-encrypted-test-two").
		oMessage(1, "msg_o5", "42.").oDone("response.completed", 40, 0, 70, 64)
	s["incomplete"] = new(sse).oStart("resp_o6").oMessage(0, "msg_o6", "A long answer that gets cu").oDone("response.incomplete", 10, 0, 16, 0)
	s["refusal"] = new(sse).oStart("resp_o8").
		event(obj{"type": "response.refusal.delta", "output_index": 0, "item_id": "msg_o8", "content_index": 0, "delta": "I can't help"}).
		event(obj{"type": "response.refusal.delta", "output_index": 0, "item_id": "msg_o8", "content_index": 0, "delta": " with that."}).
		oDone("response.completed", 10, 0, 6, 0)
	s["incomplete_other_reason"] = new(sse).oStart("resp_o9").oMessage(0, "msg_o9", "Stopped for a reason we do not know").
		event(obj{"type": "response.incomplete", "response": obj{"status": "incomplete", "incomplete_details": obj{"reason": "something_new"}}})
	s["invalid_arguments"] = new(sse).oStart("resp_o7").oCall(0, "fc_o7", "call_Bad01", "bash", `{"command": "ec`).oDone("response.completed", 10, 0, 5, 0)
	out := map[string]string{}
	for k, v := range s {
		out[k] = v.String()
	}
	return out
}

func TestOpenAIStreams(t *testing.T) {
	for name, body := range openaiStreams() {
		t.Run(name, func(t *testing.T) {
			srv, _ := sseServer(t, body)
			evs, err := collect(context.Background(), newTest(t, "openai", srv.URL), hello())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if last := evs[len(evs)-1]; last.Kind != EventDone {
				t.Errorf("last event = %+v, want done", last)
			}
			text := write([]string{"@You:", "Hello"}, evs)
			golden(t, "writer/openai_"+name+".chat", []byte(text))
			parseOK(t, text)
		})
	}
}

func TestOpenAIEvents(t *testing.T) {
	srv, _ := sseServer(t, openaiStreams()["parallel_tools"])
	evs, err := collect(context.Background(), newTest(t, "openai", srv.URL), hello())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		switch e.Kind {
		case EventToolUse:
			got = append(got, e.ToolUse.ID+" "+e.ToolUse.Name+" "+string(e.ToolUse.Input))
		case EventUsage:
			got = append(got, "usage "+mustJSON(e.Usage))
		case EventDone:
			got = append(got, "done "+e.StopReason)
		}
	}
	want := []string{
		`call_Alpha read {"path":"a.go","label":"a","offset":null,"limit":null}`,
		`call_Beta mcp:edit {"path":"b.go","oldText":"x","newText":"y"}`,
		`usage {"InputTokens":44,"OutputTokens":60,"CacheReadTokens":256,"CacheWriteTokens":0,"ThinkingTokens":0,"WebSearches":0,"SearchFee":0}`,
		"done tool_use",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	srv, _ = sseServer(t, openaiStreams()["incomplete"])
	evs, _ = collect(context.Background(), newTest(t, "openai", srv.URL), hello())
	if last := evs[len(evs)-1]; last.StopReason != "max_tokens" {
		t.Errorf("incomplete: stop reason %q, want max_tokens", last.StopReason)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestOpenAIRequest(t *testing.T) {
	srv, c := sseServer(t, openaiStreams()["text_only"])
	req := chatRequest(t, "tools.chat", "openai")
	req.Params = Params{Model: "gpt-5.2", MaxTokens: 9000, Thinking: "max", Extra: map[string]any{"prompt_cache_key": "tools.chat"}}
	if _, err := collect(context.Background(), newTest(t, "openai", srv.URL+"/v1"), req); err != nil {
		t.Fatal(err)
	}
	method, path, h, body := c.get()
	if method != "POST" || path != "/v1/responses" {
		t.Errorf("request = %s %s, want POST /v1/responses (a base ending in /v1 is not doubled)", method, path)
	}
	if h.Get("Authorization") != "Bearer sk-openai-test-secret" {
		t.Errorf("Authorization = %q", h.Get("Authorization"))
	}
	goldenJSON(t, "request/openai.json", body)
}

func TestOpenAIParams(t *testing.T) {
	temp := 0.2
	cases := []struct {
		name   string
		params Params
		want   map[string]string
	}{
		{"default model reasons high", Params{}, map[string]string{"model": `"gpt-5.4"`, "reasoning": `{"effort":"high","summary":"auto"}`,
			"include": `["reasoning.encrypted_content"]`, "max_output_tokens": "64000", "store": "false", "prompt_cache_retention": `"in_memory"`}},
		{"o3 max is high, no temperature", Params{Model: "o3", Thinking: "max", Temperature: &temp}, map[string]string{"reasoning": `{"effort":"high","summary":"auto"}`, "temperature": ""}},
		{"o3 minimal is low", Params{Model: "o3", Thinking: "minimal"}, map[string]string{"reasoning": `{"effort":"low","summary":"auto"}`}},
		{"gpt-5.2 max is xhigh", Params{Model: "gpt-5.2", Thinking: "max"}, map[string]string{"reasoning": `{"effort":"xhigh","summary":"auto"}`}},
		{"reasoning override and summary", Params{Model: "o3", Thinking: "low", Extra: map[string]any{"reasoning": "high", "reasoning_summary": "detailed"}},
			map[string]string{"reasoning": `{"effort":"high","summary":"detailed"}`}},
		{"gpt-5-pro only high", Params{Model: "gpt-5-pro", Thinking: "low"}, map[string]string{"reasoning": `{"effort":"high","summary":"auto"}`}},
		{"pro starts at medium", Params{Model: "gpt-5.4-pro", Thinking: "low"}, map[string]string{"reasoning": `{"effort":"medium","summary":"auto"}`}},
		{"off on gpt-5.5 is none", Params{Model: "gpt-5.5", Thinking: "off"}, map[string]string{"reasoning": `{"effort":"none"}`, "include": ""}},
		{"off on o3 sends nothing", Params{Model: "o3", Thinking: "off"}, map[string]string{"reasoning": ""}},
		{"gpt-4o: no reasoning, temperature kept, limit 16384", Params{Model: "gpt-4o", Thinking: "high", Temperature: &temp},
			map[string]string{"reasoning": "", "include": "", "temperature": "0.2", "max_output_tokens": "16384"}},
		{"gpt-4o: 64000 is cut to its limit", Params{Model: "gpt-4o", MaxTokens: 64000}, map[string]string{"max_output_tokens": "16384"}},
		{"gpt-5.1 has no minimal: low", Params{Model: "gpt-5.1", Thinking: "minimal"}, map[string]string{"reasoning": `{"effort":"low","summary":"auto"}`}},
		{"gpt-5 minimal", Params{Model: "gpt-5-mini", Thinking: "minimal"}, map[string]string{"reasoning": `{"effort":"minimal","summary":"auto"}`}},
		{"gpt-5-chat does not reason", Params{Model: "gpt-5-chat-latest", Thinking: "high", Temperature: &temp}, map[string]string{"reasoning": "", "temperature": "0.2"}},
		{"unknown model: 8192, no reasoning", Params{Model: "my-local-llm", Thinking: "high"}, map[string]string{"reasoning": "", "max_output_tokens": "8192"}},
		{"long cache", Params{CacheRetention: "long"}, map[string]string{"prompt_cache_retention": `"24h"`}},
		{"no cache", Params{CacheRetention: "none", Extra: map[string]any{"prompt_cache_key": "x.chat"}}, map[string]string{"prompt_cache_retention": "", "prompt_cache_key": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := hello()
			req.Params = tc.params
			b, err := openaiBody(req)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			json.Unmarshal(b, &top)
			for k, want := range tc.want {
				if got := string(top[k]); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
		})
	}
}

func TestOpenAIAssistantItems(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Go"}}},
		{Role: RoleAssistant, Parts: []Part{
			{Kind: PartText, Text: "First."},
			{Kind: PartToolUse, ToolUse: &ToolUse{ID: "call_1", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}},
			{Kind: PartText, Text: "Then."},
		}},
		{Role: RoleUser, Parts: []Part{{Kind: PartToolResult, ToolResult: &ToolResult{ToolUseID: "call_1", IsError: true}}}},
		{Role: RoleAssistant, Parts: []Part{{Kind: PartText, Text: "Done."}}},
	}
	items, err := openaiInput("", msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	got := mustJSON(items)
	want := `[{"content":[{"text":"Go","type":"input_text"}],"role":"user"},` +
		`{"content":[{"annotations":[],"text":"First.","type":"output_text"}],"id":"msg_1_1","phase":"commentary","role":"assistant","status":"completed","type":"message"},` +
		`{"arguments":"{\"command\":\"ls\"}","call_id":"call_1","name":"bash","status":"completed","type":"function_call"},` +
		`{"content":[{"annotations":[],"text":"Then.","type":"output_text"}],"id":"msg_1_2","phase":"commentary","role":"assistant","status":"completed","type":"message"},` +
		`{"call_id":"call_1","output":"Error: (error without message)","type":"function_call_output"},` +
		`{"content":[{"annotations":[],"text":"Done.","type":"output_text"}],"id":"msg_2_1","phase":"final_answer","role":"assistant","status":"completed","type":"message"}]`
	if got != want {
		t.Errorf("input items:\n%s\nwant:\n%s", got, want)
	}
	items, _ = openaiInput("", msgs[3:], false)
	if strings.Contains(mustJSON(items), "phase") {
		t.Error("phase=false must drop the phase field")
	}
}

// A reasoning item streamed by OpenAI is written as a signed thinking block
// and sent back verbatim as an input item on the next request.
func TestOpenAIReasoningRoundTrip(t *testing.T) {
	srv, _ := sseServer(t, openaiStreams()["reasoning_then_tool"])
	evs, err := collect(context.Background(), newTest(t, "openai", srv.URL), hello())
	if err != nil {
		t.Fatal(err)
	}
	text := write([]string{"@You:", "Hello"}, evs)
	text += "**Tool Result:** `call_List01`\n\n```\ngo.mod\nmain.go\n```\n"
	doc := parseOK(t, text)
	var sig string
	for _, s := range doc.Messages[1].Segments {
		if th, ok := s.(*buffer.Thinking); ok {
			sig = th.Signature
		}
	}
	item, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !strings.Contains(string(item), `"encrypted_content":"gAAAA-encrypted-test-one"`) {
		t.Fatalf("signature %q does not hold the reasoning item: %s %v", sig, item, err)
	}
	sys, msgs, err := FromDocument(doc, "openai")
	if err != nil {
		t.Fatal(err)
	}
	body, err := openaiBody(Request{System: sys, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Input []json.RawMessage `json:"input"`
	}
	json.Unmarshal(body, &b)
	if len(b.Input) < 3 || string(b.Input[1]) != string(item) {
		t.Errorf("input[1] = %s\nwant the reasoning item %s", b.Input[1], item)
	}
	// another provider's view: the summary is kept as plain text
	_, msgs, _ = FromDocument(doc, "anthropic")
	abody, _ := anthropicBody(Request{Messages: msgs})
	if !strings.Contains(string(abody), `"text":"<thinking>\n**Planning**\n\nI will list the files.\n</thinking>"`) {
		t.Errorf("anthropic body lacks the foreign thinking text: %s", abody)
	}
	// an edited signature is refused with a readable error
	_, err = openaiInput("", []Message{{Role: RoleAssistant, Parts: []Part{{Kind: PartThinking, Thinking: &Thinking{Signature: "!!", Provider: "openai"}}}}}, true)
	if err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("bad signature: err = %v", err)
	}
}
