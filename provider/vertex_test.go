package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Vertex chunk helpers (ids and text are ours).
func vPart(fields obj) obj { return fields }

func vChunk(finish string, usage obj, parts ...obj) obj {
	cand := obj{"content": obj{"role": "model", "parts": parts}}
	if finish != "" {
		cand["finishReason"] = finish
	}
	c := obj{"candidates": []any{cand}, "modelVersion": "gemini-test", "responseId": "resp-v"}
	if usage != nil {
		c["usageMetadata"] = usage
	}
	return c
}

func vertexStreams() map[string]string {
	s := map[string]*sse{}
	s["text_only"] = new(sse).
		data(vChunk("", obj{"trafficType": "ON_DEMAND"}, vPart(obj{"text": "Twelve times"}))).
		data(vChunk("STOP", obj{"promptTokenCount": 70, "candidatesTokenCount": 9, "totalTokenCount": 79}, vPart(obj{"text": " eight is 96."})))
	s["thought_text_call"] = new(sse).
		data(vChunk("", nil, vPart(obj{"thought": true, "text": "The user wants the file list."}))).
		data(vChunk("", nil, vPart(obj{"text": "Listing the directory now.\n"}))).
		data(vChunk("STOP", obj{"promptTokenCount": 120, "candidatesTokenCount": 20, "thoughtsTokenCount": 31},
			vPart(obj{"functionCall": obj{"name": "ls", "args": obj{"path": ".", "label": "listing", "limit": nil, "max_depth": nil}}, "thoughtSignature": "dGhvdWdodC1zaWctMQ=="})))
	s["parallel_calls"] = new(sse).
		data(vChunk("STOP", obj{"promptTokenCount": 3000, "cachedContentTokenCount": 2048, "candidatesTokenCount": 50},
			vPart(obj{"functionCall": obj{"name": "read", "args": obj{"path": "a.go", "label": "a", "offset": nil, "limit": nil}}, "thoughtSignature": "c2lnLXBhcmFsbGVs"}),
			vPart(obj{"functionCall": obj{"name": "mcp__edit", "args": obj{"path": "b.go", "oldText": "x", "newText": "y"}}})))
	s["signature_only"] = new(sse).
		data(vChunk("", nil, vPart(obj{"functionCall": obj{"name": "bash", "args": obj{"command": "date", "label": "time", "timeout": nil}}, "thoughtSignature": "c2lnLW9ubHk="}))).
		data(vChunk("STOP", nil, vPart(obj{"text": "", "thoughtSignature": ""})))
	s["max_tokens"] = new(sse).data(vChunk("MAX_TOKENS", nil, vPart(obj{"text": "Cut sh"})))
	out := map[string]string{}
	for k, v := range s {
		out[k] = v.String()
	}
	return out
}

func TestVertexStreams(t *testing.T) {
	for name, body := range vertexStreams() {
		t.Run(name, func(t *testing.T) {
			srv, _ := sseServer(t, body)
			evs, err := collect(context.Background(), newTest(t, "vertex", srv.URL), hello())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if last := evs[len(evs)-1]; last.Kind != EventDone {
				t.Errorf("last event = %+v, want done", last)
			}
			text := write([]string{"@You:", "Hello"}, evs)
			golden(t, "writer/vertex_"+name+".chat", []byte(text))
			parseOK(t, text)
		})
	}
}

func TestVertexUsage(t *testing.T) {
	srv, _ := sseServer(t, vertexStreams()["parallel_calls"])
	evs, err := collect(context.Background(), newTest(t, "vertex", srv.URL), hello())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
		if e.Kind == EventUsage && *e.Usage != (Usage{InputTokens: 952, OutputTokens: 50, CacheReadTokens: 2048}) {
			t.Errorf("usage = %+v", *e.Usage)
		}
	}
	if got := strings.Join(kinds, ","); got != "tool_use,tool_use,thinking_signature,usage,done" {
		t.Errorf("event kinds = %s", got)
	}
}

func TestVertexRequest(t *testing.T) {
	srv, c := sseServer(t, vertexStreams()["text_only"])
	req := chatRequest(t, "tools.chat", "vertex")
	req.Params = Params{Model: "gemini-2.5-flash", MaxTokens: 4096, Thinking: "medium"}
	p, err := New("vertex", Config{BaseURL: srv.URL, Getenv: testEnv, Project: "my-proj", Location: "europe-west4"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(context.Background(), p, req); err != nil {
		t.Fatal(err)
	}
	method, path, h, body := c.get()
	want := "/v1beta1/projects/my-proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	if method != "POST" || path != want {
		t.Errorf("request = %s %s\nwant POST %s", method, path, want)
	}
	if h.Get("Authorization") != "Bearer ya29.test-secret" {
		t.Errorf("Authorization = %q", h.Get("Authorization"))
	}
	goldenJSON(t, "request/vertex.json", body)
}

func TestVertexEndpoint(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"GOOGLE_CLOUD_PROJECT": "env-proj", "GOOGLE_CLOUD_LOCATION": "us-east5"}[k]
	}
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Project: "p1", Getenv: func(string) string { return "" }},
			"https://aiplatform.googleapis.com/v1beta1/projects/p1/locations/global/publishers/google/models/m:streamGenerateContent?alt=sse"},
		{Config{Project: "p1", Location: "us-central1", Getenv: env},
			"https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p1/locations/us-central1/publishers/google/models/m:streamGenerateContent?alt=sse"},
		{Config{Getenv: env},
			"https://us-east5-aiplatform.googleapis.com/v1beta1/projects/env-proj/locations/us-east5/publishers/google/models/m:streamGenerateContent?alt=sse"},
		{Config{Project: "p1", BaseURL: "http://gw.local/vertex/v1beta1/", Getenv: env},
			"http://gw.local/vertex/v1beta1/projects/p1/locations/us-east5/publishers/google/models/m:streamGenerateContent?alt=sse"},
	}
	for _, tc := range cases {
		got, err := (&vertex{cfg: tc.cfg}).endpoint("m")
		if err != nil || got != tc.want {
			t.Errorf("endpoint(%+v) = %q, %v\nwant %q", tc.cfg, got, err, tc.want)
		}
	}
	p, _ := New("vertex", Config{Getenv: func(k string) string { return map[string]string{"VERTEX_AI_ACCESS_TOKEN": "tok"}[k] }})
	err := p.Stream(context.Background(), hello(), func(Event) {})
	var pe *Error
	// The message names the setup key that works (options.Config reads
	// providers.<name>.project), not one that is ignored.
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "providers.vertex.project") || strings.Contains(pe.Message, "parameters.vertex") {
		t.Errorf("no project: err = %v", err)
	}
}

func TestVertexParams(t *testing.T) {
	cases := []struct {
		name   string
		params Params
		want   string // generationConfig JSON
	}{
		{"default gemini 3 pro: HIGH", Params{}, `{"maxOutputTokens":32768,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"HIGH"}}`},
		{"gemini 3 pro minimal is LOW", Params{Model: "gemini-3.1-pro-preview", Thinking: "minimal"}, `{"maxOutputTokens":32768,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"LOW"}}`},
		{"gemini 3 flash minimal", Params{Model: "gemini-3-flash-preview", Thinking: "minimal"}, `{"maxOutputTokens":32768,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"MINIMAL"}}`},
		{"gemini 3 max is HIGH", Params{Model: "gemini-3-flash-preview", Thinking: "max"}, `{"maxOutputTokens":32768,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"HIGH"}}`},
		{"2.5 budget from provider", Params{Model: "gemini-2.5-flash", MaxTokens: 1000, Extra: map[string]any{"thinking_budget": 4096}}, `{"maxOutputTokens":1000,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":500}}`},
		{"2.5 budget flemma chose: maxOutputTokens grows", Params{Model: "gemini-2.5-pro", Thinking: "max"}, `{"maxOutputTokens":36864,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":32768}}`},
		{"2.5 flash-lite: no budget fits, off", Params{Model: "gemini-2.5-flash-lite", MaxTokens: 600, Thinking: "low"}, `{"maxOutputTokens":600,"thinkingConfig":{"thinkingBudget":0}}`},
		{"2.5 flash off", Params{Model: "gemini-2.5-flash", Thinking: "off"}, `{"maxOutputTokens":32768,"thinkingConfig":{"thinkingBudget":0}}`},
		{"2.5 pro cannot stop", Params{Model: "gemini-2.5-pro", Thinking: "off"}, `{"maxOutputTokens":32768}`},
		{"2.0 does not think; its limit is 8192", Params{Model: "gemini-2.0-flash", Thinking: "high"}, `{"maxOutputTokens":8192}`},
		{"unknown model: 8192, no thinkingConfig", Params{Model: "tuned-support-bot-7", Thinking: "high"}, `{"maxOutputTokens":8192}`},
		{"a later Gemini is taken for Gemini 3", Params{Model: "gemini-9-ultra", Thinking: "medium"}, `{"maxOutputTokens":32768,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"MEDIUM"}}`},
		{"3.5 Flash takes medium (it was sent as HIGH)", Params{Model: "gemini-3.5-flash", Thinking: "medium"}, `{"maxOutputTokens":32768,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"MEDIUM"}}`},
		{"a later Flash takes minimal", Params{Model: "gemini-4-flash", Thinking: "minimal"}, `{"maxOutputTokens":32768,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"MINIMAL"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := hello()
			req.Params = tc.params
			b, err := vertexBody(req, "vertex")
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			json.Unmarshal(b, &top)
			if got := string(top["generationConfig"]); got != tc.want {
				t.Errorf("generationConfig = %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A thought signature streamed by Vertex rides back on the functionCall.
func TestVertexSignatureRoundTrip(t *testing.T) {
	srv, _ := sseServer(t, vertexStreams()["thought_text_call"])
	evs, err := collect(context.Background(), newTest(t, "vertex", srv.URL), hello())
	if err != nil {
		t.Fatal(err)
	}
	text := write([]string{"@You:", "Hello"}, evs) + "**Tool Result:** `urn:flemma:tool:ls:test1`\n\n```\nmain.go\n```\n"
	doc := parseOK(t, text)
	_, msgs, err := FromDocument(doc, "vertex")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := vertexBody(Request{Messages: msgs}, "vertex")
	var body struct {
		Contents []json.RawMessage `json:"contents"`
	}
	json.Unmarshal(b, &body)
	want := `{"parts":[{"text":"Listing the directory now."},{"functionCall":{"args":{"label":"listing","limit":null,"max_depth":null,"path":"."},"name":"ls"},"thoughtSignature":"dGhvdWdodC1zaWctMQ=="}],"role":"model"}`
	if len(body.Contents) != 3 || string(body.Contents[1]) != want {
		t.Errorf("model content = %s\nwant %s", body.Contents[1], want)
	}
	if got := string(body.Contents[2]); got != `{"parts":[{"functionResponse":{"name":"ls","response":{"output":"main.go"}}}],"role":"user"}` {
		t.Errorf("function response = %s", got)
	}
}
