package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// chunks is a chat.completion.chunk stream from deltas (each a JSON
// object's fields), a finish reason on the last, and a usage chunk.
func chunks(model, finish string, deltas ...string) string {
	var b strings.Builder
	for i, d := range deltas {
		fin := "null"
		if i == len(deltas)-1 && finish != "" {
			fin = `"` + finish + `"`
		}
		fmt.Fprintf(&b, `data: {"id":"c1","object":"chat.completion.chunk","model":%q,"choices":[{"index":0,"delta":{%s},"finish_reason":%s}]}`+"\n\n", model, d, fin)
	}
	if finish != "" {
		b.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","model":"` + model + `","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12}}` + "\n\ndata: [DONE]\n\n")
	}
	return b.String()
}

// eachNvimChat runs fn against a named chat_completions provider "srv"
// served by f; entry adds keys to its providers entry.
func eachNvimChat(t *testing.T, f *stepServer, entry string, fn func(t *testing.T, s *nvimtest.Session)) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	setup := `{ provider = "srv", tools = { auto_approve = { "calculator" } }, providers = {
		srv = { base_url = "` + srv.URL + `/v1", model = "m1"` + entry + ` } } }`
	eachNvimEnv(t, setup, []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY="}, func(t *testing.T, s *nvimtest.Session) {
		f.mu.Lock()
		f.bodies = nil
		f.mu.Unlock()
		fn(t, s)
	})
}

// appendLines adds lines at the end of the current buffer, as the user
// typing them.
func appendLines(t *testing.T, s *nvimtest.Session, lines ...string) {
	t.Helper()
	if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, -1, -1, false, ...)`, lines); err != nil {
		t.Fatal(err)
	}
}

// Mistral's reasoning models stream delta.content as lists of parts: the
// thinking and the answer both reach the buffer (the answer of
// magistral-medium-2507 used to vanish whole), and with reasoning = "none"
// (a Mistral behind a proxy) nothing is sent back as reasoning_content,
// which Mistral refuses.
func TestMistralContentArrays(t *testing.T) {
	f := &stepServer{steps: []step{
		{status: http.StatusOK, body: chunks("mistral-medium-3-5", "tool_calls",
			`"role":"assistant","content":""`,
			`"content":[{"type":"thinking","thinking":[{"type":"text","text":"Compute it"}],"closed":false}]`,
			`"content":[{"type":"thinking","thinking":[{"type":"text","text":" with the tool."}],"closed":true}]`,
			`"content":"Let me compute."`,
			`"tool_calls":[{"id":"Xk2mQ9pLr","function":{"name":"calculator","arguments":"{\"expression\": \"6*7\"}"},"index":0}]`)},
		{status: http.StatusOK, body: chunks("magistral-medium-2507", "stop",
			`"role":"assistant","content":""`,
			`"content":[{"type":"thinking","thinking":[{"type":"text","text":"It said 42."}]}]`,
			`"content":[{"type":"text","text":"6*7 is "}]`,
			`"content":[{"type":"text","text":"42."}]`)},
	}}
	eachNvimChat(t, f, `, reasoning = "none"`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "mistral.chat", question)
		press(t, s, "<C-]>")
		want := "@You:\nWhat is 6*7?\n\n@Assistant:\n<thinking>\nCompute it with the tool.\n</thinking>\n\nLet me compute.\n\n**Tool Use:** `calculator` (`Xk2mQ9pLr`)\n\n```json\n{\"expression\": \"6*7\"}\n```\n\n" +
			"@You:\n\n**Tool Result:** `Xk2mQ9pLr`\n\n```\n42\n```\n\n" +
			"@Assistant:\n<thinking>\nIt said 42.\n</thinking>\n\n6*7 is 42.\n\n@You:\n"
		got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "It said 42.") && strings.HasSuffix(x, "@You:\n") })
		if err != nil || got != want {
			t.Fatalf("buffer:\n%s\n\nwant:\n%s\nmessages: %s", got, want, s.Messages())
		}
		reqs := f.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		b, _ := json.Marshal(reqs[1]["messages"])
		if strings.Contains(string(b), "reasoning_content") || !strings.Contains(string(b), `"content":"Let me compute."`) {
			t.Errorf("second request: %s", b)
		}
	})
}

// DeepSeek's thinking mode with tools: after a tool loop, the next question
// carries reasoning_content on the earlier tool-call message (without it
// DeepSeek answers 400); the reasoning of the earlier final answer is not
// sent.
func TestDeepSeekNextQuestionAfterToolLoop(t *testing.T) {
	f := &stepServer{steps: []step{
		{status: http.StatusOK, body: chunks("deepseek-reasoner", "tool_calls",
			`"role":"assistant","content":null,"reasoning_content":"Use the calculator."`,
			`"tool_calls":[{"index":0,"id":"call_00_a","type":"function","function":{"name":"calculator","arguments":"{\"expression\":\"6*7\"}"}}]`)},
		{status: http.StatusOK, body: chunks("deepseek-reasoner", "stop",
			`"role":"assistant","content":null,"reasoning_content":"It is 42."`, `"content":"6*7 is 42."`)},
		{status: http.StatusOK, body: chunks("deepseek-reasoner", "stop", `"role":"assistant","content":"And 43 is prime."`)},
	}}
	eachNvimChat(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "deepseek.chat", question)
		press(t, s, "<C-]>")
		if got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "6*7 is 42.") && strings.HasSuffix(x, "@You:\n") }); err != nil {
			t.Fatalf("buffer:\n%s\nmessages: %s", got, s.Messages())
		}
		waitIdle(t, s)
		appendLines(t, s, "Is 43 prime?")
		press(t, s, "<C-]>")
		if got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "43 is prime.") && strings.HasSuffix(x, "@You:\n") }); err != nil {
			t.Fatalf("buffer:\n%s\nmessages: %s", got, s.Messages())
		}
		reqs := f.requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3", len(reqs))
		}
		b, _ := json.Marshal(reqs[2]["messages"])
		if !strings.Contains(string(b), `{"reasoning_content":"Use the calculator.","role":"assistant","tool_calls":`) {
			t.Errorf("the earlier tool-call message lacks its reasoning_content: %s", b)
		}
		if strings.Contains(string(b), "It is 42.") {
			t.Errorf("the reasoning of the earlier answer was sent: %s", b)
		}
	})
}

// A chunk that cannot be read: the user is warned, the rest of the answer
// is kept and marked incomplete, the raw chunk is in the host log.
func TestUnreadableChunkIsReported(t *testing.T) {
	body := chunks("m1", "", `"role":"assistant","content":"The answer"`) +
		"data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\" is\"}\n\n" +
		chunks("m1", "stop", `"content":" 42."`)
	f := &stepServer{steps: []step{{status: http.StatusOK, body: body}}}
	eachNvimChat(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "bad.chat", question)
		press(t, s, "<C-]>")
		waitText(t, s, question+"\n@Assistant:\nThe answer 42.\n\n<!-- flemma:aborted: Response incomplete: none of its tool calls was run. 1 piece of the stream could not be read and is missing (the raw text is in flemma's log). -->\n\n@You:\n")
		waitMessage(t, s, "srv: a piece of the response could not be read")
		if _, err := s.Wait(5*time.Second, func(string) bool { return strings.Contains(s.HostLog(), `{\"content\":\" is\"}`) }); err != nil {
			t.Errorf("the raw chunk is not in the host log:\n%s", s.HostLog())
		}
	})
}

// <C-c> while the server streams reasoning: the reasoning stays in the
// buffer (it was billed), marked cut.
func TestCancelKeepsReasoning(t *testing.T) {
	f := &stepServer{steps: []step{{status: http.StatusOK, hold: 2, body: chunks("deepseek-reasoner", "stop",
		`"role":"assistant","content":null,"reasoning_content":"First I list"`,
		`"reasoning_content":" the files."`, `"content":"Done."`)}}}
	eachNvimChat(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "cancel.chat", question)
		press(t, s, "<C-]>")
		waitThinking(t, s)
		press(t, s, "<C-c>")
		waitText(t, s, question+"\n@Assistant:\n<thinking>\nFirst I list the files.\n</thinking>\n\n<!-- flemma:aborted: Response interrupted by the user. -->\n\n@You:\n")
	})
}

// waitThinking waits until the request's progress reached the thinking
// phase (reasoning arrived).
func waitThinking(t *testing.T, s *nvimtest.Session) {
	t.Helper()
	var phase string
	if _, err := s.Wait(10*time.Second, func(string) bool {
		_ = s.Lua(&phase, `local p = require("flemma.state").buffer(vim.api.nvim_get_current_buf()).progress; return p and p.phase or ""`)
		return phase == "thinking"
	}); err != nil {
		t.Fatalf("the progress never reached thinking (phase %q)", phase)
	}
}

// An empty answer says so (it used to leave the buffer as it was without a
// word but the token count).
func TestEmptyAnswerIsReported(t *testing.T) {
	f := &stepServer{steps: []step{{status: http.StatusOK, body: chunks("m1", "stop", `"role":"assistant","content":""`)}}}
	eachNvimChat(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "empty.chat", question)
		press(t, s, "<C-]>")
		waitMessage(t, s, `srv: the model's answer was empty (stop reason "end_turn", 12 output tokens); nothing was written.`)
		waitIdle(t, s)
		waitText(t, s, strings.TrimSuffix(question, "\n"))
	})
}

// A Claude model flemma does not list is taken for the newest family: the
// user's temperature (refused by every Claude since Opus 4.7) is not sent,
// thinking is adaptive, and the user is told once.
func TestUnlistedClaudeTakenForItsFamily(t *testing.T) {
	f := &stepServer{steps: []step{{status: http.StatusOK, body: sse("It is 42.")}}}
	eachNvimSteps(t, f, `, parameters = { temperature = 0.3 }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Nv.Command("Flemma switch anthropic claude-mythos-6"); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "family.chat", question)
		press(t, s, "<C-]>")
		waitText(t, s, question+"\n@Assistant:\nIt is 42.\n\n@You:\n")
		waitMessage(t, s, "flemma does not list claude-mythos-6 (anthropic) and takes it for the family claude-: thinking adaptive, no temperature")
		reqs := f.requests()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		if _, ok := reqs[0]["temperature"]; ok {
			t.Errorf("temperature was sent: %v", reqs[0]["temperature"])
		}
		if th, _ := reqs[0]["thinking"].(map[string]any); th["type"] != "adaptive" {
			t.Errorf("thinking = %v, want adaptive", reqs[0]["thinking"])
		}
	})
}

// A 400 that names a field flemma sent says which setting to change.
func TestRejectedParameterNamesTheSetting(t *testing.T) {
	body := `{"type":"error","error":{"type":"invalid_request_error","message":"` + "`temperature`" + ` is deprecated for this model."},"request_id":"req_1"}`
	f := &stepServer{steps: []step{{status: http.StatusBadRequest, body: body}}}
	eachNvimSteps(t, f, `, parameters = { temperature = 0.3 }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "rejected.chat", question)
		press(t, s, "<C-]>")
		waitMessage(t, s, "anthropic: 400 `temperature` is deprecated for this model. — the model refused `temperature`: remove parameters.temperature (setup, :Flemma switch temperature=…, or the buffer's flemma.opt.temperature)")
	})
}

// Attack (issue 24, item 13): a 401 whose body echoes the token of a
// configured header. The notification and host.log show [redacted], never
// the token; so does the tool output that prints it.
func TestHeaderTokenEchoedIsRedacted(t *testing.T) {
	const token = "hdr-secret-5b1c9e77aa02"
	body := `{"error":{"message":"invalid token ` + token + ` (header X-Api-Token)","type":"invalid_request_error"}}`
	f := &stepServer{steps: []step{{status: http.StatusUnauthorized, body: body}}}
	eachNvimChat(t, f, `, headers = { ["X-Api-Token"] = "Bearer `+token+`" }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "leak.chat", question)
		press(t, s, "<C-]>")
		waitMessage(t, s, "srv: 401 invalid token [redacted] (header X-Api-Token)")
		if _, err := s.Wait(5*time.Second, func(string) bool { return strings.Contains(s.HostLog(), "[redacted]") }); err != nil {
			t.Errorf("the log never showed the redacted error:\n%s", s.HostLog())
		}
		for where, text := range map[string]string{"messages": s.Messages(), "host.log": s.HostLog(), "buffer": text(t, s)} {
			if strings.Contains(text, token) {
				t.Errorf("the header's token is in %s:\n%s", where, text)
			}
		}
	})
}
