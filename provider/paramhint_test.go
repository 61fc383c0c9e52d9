package provider

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A 400 or 422 that names a field flemma sent says which setting sent it,
// for the error bodies the servers document.
func TestRejectedParamHint(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		extra      map[string]any
		want       string // a fragment of the message; "" = no hint
	}{
		{"anthropic temperature", `{"type":"error","error":{"type":"invalid_request_error","message":"` + "`temperature`" + ` is deprecated for this model."},"request_id":"req_011CXyz"}`, nil,
			"the model refused `temperature`: remove parameters.temperature"},
		{"openai temperature", `{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}`, nil,
			"remove parameters.temperature"},
		{"openai effort", `{"error":{"message":"Unsupported value: 'reasoning.effort' does not support 'minimal' with this model. Supported values are: 'low', 'medium', and 'high'.","type":"invalid_request_error","param":"reasoning.effort","code":"unsupported_value"}}`, nil,
			"the model refused `reasoning.effort`: change parameters.thinking"},
		{"anthropic thinking form", `{"type":"error","error":{"type":"invalid_request_error","message":"` + "`thinking.type.enabled`" + ` is not supported for this model. Use ` + "`thinking.type.adaptive`" + ` and ` + "`output_config.effort`" + ` to control thinking behavior."}}`, nil,
			"change parameters.thinking"},
		{"mistral 422 max_completion_tokens", `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted","input":32000}]},"type":"invalid_request_error","param":null,"code":null}`, nil,
			"Extra inputs are not permitted: \"max_completion_tokens\" — the model refused `max_completion_tokens`: lower parameters.max_tokens"},
		{"mistral 422 reasoning_content", `{"detail":[{"type":"extra_forbidden","loc":["body","messages",3,"assistant","reasoning_content"],"msg":"Extra inputs are not permitted","input":"x"}]}`, nil,
			"set providers.srv.reasoning = \"none\""},
		{"extra_body key", `{"error":{"message":"Unrecognized request argument supplied: top_k","type":"invalid_request_error","param":null,"code":null}}`, map[string]any{"top_k": 20},
			"the server refused `top_k`, set by providers.srv.extra_body.top_k: remove or correct it there"},
		{"gemini unknown name", `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"thinkingLevel\" at 'generation_config.thinking_config': Cannot find field.","status":"INVALID_ARGUMENT"}}`, nil,
			"the model refused `thinkingLevel`"},
		{"no field", `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error"}}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startScript(t, reply{status: http.StatusBadRequest, body: tc.body})
			if strings.Contains(tc.name, "422") {
				_, url = startScript(t, reply{status: http.StatusUnprocessableEntity, body: tc.body})
			}
			p := newChat(t, url, func(c *Config) { c.ExtraBody = tc.extra })
			p.(*configured).name = "srv"
			_, err := collect(context.Background(), p, modelReq(hello(), "m"))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if tc.want == "" {
				if strings.Contains(msg, " — the ") {
					t.Errorf("a hint where none applies: %s", msg)
				}
				return
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error:\n%s\nwant it to contain:\n%s", msg, tc.want)
			}
		})
	}
}
