package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// anthropicStreams are recorded-shape Anthropic streams, written for this
// project (ids and text are ours).
func anthropicStreams() map[string]string {
	s := map[string]*sse{}
	s["text_only"] = new(sse).aStart("msg_t1", 12).aText(0, "Hi", " there! What", " shall we build?").aStop("end_turn", 9)
	s["one_tool"] = new(sse).aStart("msg_t2", 300).
		aTool(0, "toolu_01OneCall", "bash", "", `{"comm`, `and": "go t`, `est ./...", "label"`, `: "testing", "timeout": null}`).
		aStop("tool_use", 40)
	s["text_then_parallel_tools"] = new(sse).aStart("msg_t3", 500).
		aText(0, "Let me look ", "at both files.").
		aTool(1, "toolu_01Alpha", "read", `{"path": "a.go", `, `"label": "reading a", "offset": null, "limit": null}`).
		aTool(2, "toolu_02Beta", "read", "", `{"path": "b.go", "label": "reading b", "offset": 10,`, ` "limit": 20}`).
		aTool(3, "toolu_03Gamma", "slack__post", `{"channel": "#dev", "text": "see `+"```"+`code`+"```"+`"}`).
		aStop("tool_use", 120)
	s["thinking_with_signature"] = new(sse).aStart("msg_t4", 50).
		aText(0, "\n\n").
		aThinking(1, "c2lnbmF0dXJlLW9uZQ==", "The user greets", " me.", "").
		aText(2, "Hello!", " How can I help?").aStop("end_turn", 30)
	s["redacted_thinking"] = new(sse).aStart("msg_t5", 60).
		aThinking(0, "c2lnLXZpc2libGU=", "Some visible reasoning.").
		aRedacted(1, "b3BhcXVlLXJlZGFjdGVk").
		aText(2, "Here is the answer.").aStop("end_turn", 70)
	s["thinking_then_tool"] = new(sse).aStart("msg_t6", 80).
		aThinking(0, "c2lnLXRvb2w=", "I should list the directory.").
		aTool(1, "toolu_01List", "ls", `{"path": ".", "label": "listing", "limit": null, "max_depth": null}`).
		aStop("tool_use", 50)
	s["invalid_tool_json"] = new(sse).aStart("msg_t7", 10).
		aTool(0, "toolu_01Broken", "bash", `{"command": "ec`).aStop("max_tokens", 4096)
	out := map[string]string{}
	for k, v := range s {
		out[k] = v.String()
	}
	return out
}

func TestAnthropicStreams(t *testing.T) {
	for name, body := range anthropicStreams() {
		t.Run(name, func(t *testing.T) {
			srv, _ := sseServer(t, body)
			evs, err := collect(context.Background(), newTest(t, "anthropic", srv.URL), hello())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if last := evs[len(evs)-1]; last.Kind != EventDone {
				t.Errorf("last event = %+v, want done", last)
			}
			text := write([]string{"@You:", "Hello"}, evs)
			golden(t, "writer/anthropic_"+name+".chat", []byte(text))
			parseOK(t, text)
		})
	}
}

func TestAnthropicEvents(t *testing.T) {
	srv, _ := sseServer(t, anthropicStreams()["text_then_parallel_tools"])
	evs, err := collect(context.Background(), newTest(t, "anthropic", srv.URL), hello())
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	var usage *Usage
	texts := 0
	for _, e := range evs {
		switch e.Kind {
		case EventToolUse:
			tools = append(tools, e.ToolUse.ID+" "+e.ToolUse.Name+" "+string(e.ToolUse.Input))
		case EventText:
			texts++
		case EventUsage:
			usage = e.Usage
		}
	}
	want := []string{
		`toolu_01Alpha read {"path":"a.go","label":"reading a","offset":null,"limit":null}`,
		`toolu_02Beta read {"path":"b.go","label":"reading b","offset":10,"limit":20}`,
		"toolu_03Gamma slack:post {\"channel\":\"#dev\",\"text\":\"see ```code```\"}",
	}
	if strings.Join(tools, "\n") != strings.Join(want, "\n") {
		t.Errorf("tool uses:\n%s\nwant:\n%s", strings.Join(tools, "\n"), strings.Join(want, "\n"))
	}
	if texts != 2 {
		t.Errorf("%d text events, want 2 (deltas are passed on as they come)", texts)
	}
	if usage == nil || *usage != (Usage{InputTokens: 500, OutputTokens: 120}) {
		t.Errorf("usage = %+v, want input 500 output 120", usage)
	}
	if evs[len(evs)-1].StopReason != "tool_use" {
		t.Errorf("stop reason = %q", evs[len(evs)-1].StopReason)
	}
}

func TestAnthropicRequest(t *testing.T) {
	srv, c := sseServer(t, anthropicStreams()["text_only"])
	req := chatRequest(t, "tools.chat", "anthropic")
	req.Params = Params{Model: "claude-sonnet-4-5", MaxTokens: 8000, Thinking: "low"}
	if _, err := collect(context.Background(), newTest(t, "anthropic", srv.URL), req); err != nil {
		t.Fatal(err)
	}
	method, path, h, body := c.get()
	if method != "POST" || path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", method, path)
	}
	if h.Get("x-api-key") != "sk-ant-test-secret" || h.Get("anthropic-version") != "2023-06-01" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", h)
	}
	goldenJSON(t, "request/anthropic.json", body)
	s := string(body)
	if i, j, k := strings.Index(s, `"system":`), strings.Index(s, `"tools":`), strings.Index(s, `"messages":`); !(i > 0 && i < j && j < k) {
		t.Errorf("system, tools, messages must come last in that order: %d %d %d", i, j, k)
	}
	if strings.Contains(s, `\u003c`) {
		t.Error("HTML escaping must be off")
	}
}

func TestAnthropicParams(t *testing.T) {
	temp := 0.4
	cases := []struct {
		name   string
		params Params
		want   map[string]string // JSON of top-level keys; "" = absent
	}{
		{"default: adaptive high, short cache", Params{},
			map[string]string{"model": `"claude-sonnet-4-6"`, "max_tokens": "32000", "thinking": `{"display":"summarized","type":"adaptive"}`, "output_config": `{"effort":"high"}`, "cache_control": `{"type":"ephemeral"}`, "temperature": ""}},
		{"opus 4.6 max", Params{Model: "claude-opus-4-6", Thinking: "max"},
			map[string]string{"output_config": `{"effort":"max"}`}},
		{"sonnet 4.6 max is max", Params{Model: "claude-sonnet-4-6", Thinking: "max"},
			map[string]string{"output_config": `{"effort":"max"}`}},
		{"haiku 5.5 max is its highest, high", Params{Model: "claude-haiku-5-5", Thinking: "max"},
			map[string]string{"output_config": `{"effort":"high"}`}},
		{"opus 4.8 is adaptive, never budget_tokens (a budget picks the effort)", Params{Model: "claude-opus-4-8", Thinking: "medium", Extra: map[string]any{"thinking_budget": 4000}},
			map[string]string{"thinking": `{"display":"summarized","type":"adaptive"}`, "output_config": `{"effort":"low"}`, "max_tokens": "32000"}},
		{"minimal is low effort", Params{Model: "claude-opus-4-7", Thinking: "minimal"},
			map[string]string{"output_config": `{"effort":"low"}`}},
		{"effort override on adaptive", Params{Model: "claude-opus-4-7", Thinking: "low", Extra: map[string]any{"effort": "xhigh"}},
			map[string]string{"output_config": `{"effort":"xhigh"}`}},
		{"a budget leaves half of a set max_tokens to the answer", Params{Model: "claude-sonnet-4-5", MaxTokens: 4000, Thinking: "max"},
			map[string]string{"thinking": `{"budget_tokens":2000,"type":"enabled"}`, "output_config": "", "max_tokens": "4000"}},
		{"max_tokens grows to hold a budget flemma chose", Params{Model: "claude-sonnet-4-5", Thinking: "max"},
			map[string]string{"thinking": `{"budget_tokens":32768,"type":"enabled"}`, "max_tokens": "36864"}},
		{"no budget fits a small max_tokens: no thinking", Params{Model: "claude-sonnet-4-5", MaxTokens: 1500, Thinking: "high"},
			map[string]string{"thinking": "", "max_tokens": "1500"}},
		{"temperature dropped on opus 4.7 and later", Params{Model: "claude-opus-4-7", Thinking: "off", Temperature: &temp},
			map[string]string{"temperature": "", "thinking": ""}},
		{"thinking_budget wins and floors", Params{Model: "claude-sonnet-4-5", Thinking: "low", Extra: map[string]any{"thinking_budget": 2048.7}},
			map[string]string{"thinking": `{"budget_tokens":2048,"type":"enabled"}`}},
		{"budget below minimum", Params{Model: "claude-sonnet-4-5", Extra: map[string]any{"thinking_budget": 500}},
			map[string]string{"thinking": `{"budget_tokens":1024,"type":"enabled"}`}},
		{"thinking_budget 0 disables, temperature kept", Params{Model: "claude-sonnet-4-5", Temperature: &temp, Extra: map[string]any{"thinking_budget": 0}},
			map[string]string{"thinking": "", "temperature": "0.4"}},
		{"temperature dropped with thinking", Params{Model: "claude-sonnet-4-5", Temperature: &temp},
			map[string]string{"temperature": ""}},
		{"off", Params{Thinking: "off"}, map[string]string{"thinking": "", "output_config": ""}},
		{"numeric level", Params{Model: "claude-sonnet-4-5", Thinking: "5000"},
			map[string]string{"thinking": `{"budget_tokens":5000,"type":"enabled"}`}},
		{"opus 4.5 budget and effort", Params{Model: "claude-opus-4-5", Thinking: "medium"},
			map[string]string{"thinking": `{"budget_tokens":8192,"type":"enabled"}`, "output_config": `{"effort":"medium"}`}},
		{"no thinking on claude 3.5, limit 8192", Params{Model: "claude-3-5-haiku-latest"}, map[string]string{"thinking": "", "max_tokens": "8192"}},
		{"max_tokens above the limit is cut to it", Params{Model: "claude-3-5-haiku-latest", MaxTokens: 32000}, map[string]string{"max_tokens": "8192"}},
		{"long cache", Params{CacheRetention: "long"}, map[string]string{"cache_control": `{"ttl":"1h","type":"ephemeral"}`}},
		{"no cache: plain system", Params{CacheRetention: "none"}, map[string]string{"cache_control": "", "system": `"Be brief."`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := hello()
			req.System = "Be brief."
			req.Params = tc.params
			b, err := anthropicBody(req)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(b, &top); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got := string(top[k]); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
		})
	}
	if _, err := anthropicBody(Request{Params: Params{Thinking: "lots"}}); err == nil || !strings.Contains(err.Error(), `"lots"`) {
		t.Errorf("bad level: err = %v", err)
	}
}

func TestAnthropicCacheOnTools(t *testing.T) {
	req := hello()
	req.Tools = testTools()
	b, err := anthropicBody(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools []map[string]any `json:"tools"`
	}
	json.Unmarshal(b, &body)
	var names []string
	for i, tool := range body.Tools {
		names = append(names, tool["name"].(string))
		if _, ok := tool["cache_control"]; ok != (i == len(body.Tools)-1) {
			t.Errorf("tool %d cache_control present = %v; only the last tool has the breakpoint", i, ok)
		}
	}
	if got := strings.Join(names, ","); got != "bash,mcp__edit,read" {
		t.Errorf("tool names = %s, want sorted, wire-encoded bash,mcp__edit,read", got)
	}
}
