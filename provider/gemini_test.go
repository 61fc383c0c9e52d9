package provider

import (
	"context"
	"strings"
	"testing"
)

// The Gemini API (AI Studio): the Vertex wire at generativelanguage, the
// key in x-goog-api-key (never Authorization, never the URL), the model in
// the path; its thought signatures are its own.
func TestGeminiAPI(t *testing.T) {
	srv, c := sseServer(t, vertexStreams()["thought_text_call"])
	env := func(k string) string {
		if k == "GEMINI_API_KEY" {
			return "AIzaSy-test-gemini-key"
		}
		return ""
	}
	p, err := New("gemini", Config{BaseURL: srv.URL + "/v1beta", Getenv: env, Keys: &Keyring{}})
	if err != nil {
		t.Fatal(err)
	}
	req := chatRequest(t, "tools.chat", "gemini")
	req.Params = Params{Model: "gemini-3-flash-preview", Thinking: "medium"}
	evs, err := collect(context.Background(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	_, path, h, body := c.get()
	if path != "/v1beta/models/gemini-3-flash-preview:streamGenerateContent?alt=sse" {
		t.Errorf("path = %q", path)
	}
	if h.Get("x-goog-api-key") != "AIzaSy-test-gemini-key" || h.Get("Authorization") != "" || strings.Contains(path, "key=") {
		t.Errorf("headers %v: the key belongs in x-goog-api-key only", h)
	}
	if !strings.Contains(string(body), `"thinkingLevel":"MEDIUM"`) {
		t.Errorf("body: %s", body)
	}
	var sig Event
	for _, e := range evs {
		if e.Kind == EventThinkingSignature {
			sig = e
		}
	}
	if sig.Provider != "gemini" || sig.Signature != "dGhvdWdodC1zaWctMQ==" {
		t.Errorf("signature event %+v, want it under gemini", sig)
	}
	// Written, parsed and sent back: to the Gemini API the signature goes
	// back on its call; Vertex gets the placeholder instead.
	text := write([]string{"@You:", "list"}, evs) + "**Tool Result:** `" + toolIDOf(evs) + "`\n\n```\na.go\n```\n"
	for _, tc := range []struct{ signer, want string }{{"gemini", `"thoughtSignature":"dGhvdWdodC1zaWctMQ=="`}, {"vertex", `"thoughtSignature":"skip_thought_signature_validator"`}} {
		_, msgs, err := FromDocument(parseOK(t, text), tc.signer)
		if err != nil {
			t.Fatal(err)
		}
		b, err := vertexBody(Request{Messages: msgs, Params: Params{Model: "gemini-3-flash-preview"}}, tc.signer)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: body lacks %s: %s", tc.signer, tc.want, b)
		}
	}
}

func toolIDOf(evs []Event) string {
	for _, e := range evs {
		if e.Kind == EventToolUse {
			return e.ToolUse.ID
		}
	}
	return ""
}

// Without a key the message names both variables Google's SDKs read.
func TestGeminiNoKey(t *testing.T) {
	p, err := New("gemini", Config{Getenv: func(string) string { return "" }, Keys: &Keyring{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(context.Background(), p, hello())
	if err == nil || !strings.Contains(err.Error(), "GEMINI_API_KEY or GOOGLE_API_KEY") {
		t.Errorf("err = %v", err)
	}
	if ok, src := Credentials("gemini", func(k string) string { return map[string]string{"GOOGLE_API_KEY": "x"}[k] }); !ok || src != "GOOGLE_API_KEY" {
		t.Errorf("Credentials = %v %q", ok, src)
	}
}
