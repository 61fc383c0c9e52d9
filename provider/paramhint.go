package provider

import (
	"regexp"
	"sort"
	"strings"
)

// settingOf names, per field flemma may send, the setting it comes from
// and what to do when a model refuses it.
var settingOf = []struct {
	fields []string
	hint   string
}{
	{[]string{"temperature"},
		"remove parameters.temperature (setup, :Flemma switch temperature=…, or the buffer's flemma.opt.temperature), or describe the model in setup's models = {…}"},
	{[]string{"max_tokens", "max_completion_tokens", "max_output_tokens", "maxOutputTokens", "max_new_tokens"},
		"lower parameters.max_tokens, or set the model's max_output_tokens in setup's models = {…}"},
	{[]string{"reasoning_effort", "reasoning.effort", "reasoning", "thinking", "thinking.type", "budget_tokens", "thinking.budget_tokens",
		"output_config", "output_config.effort", "effort", "thinkingConfig", "thinking_config", "thinkingLevel", "thinking_level", "thinkingBudget", "thinking_budget"},
		"change parameters.thinking (\"off\" sends none), or set the model's thinking form in setup's models = {…} (adaptive, budget, effort or none)"},
	{[]string{"prompt_cache_key", "prompt_cache_retention", "cache_control"},
		"set parameters.cache_retention = \"none\""},
}

// quotedField finds a name the way error messages quote a field: in
// quotes or backticks ('temperature', `temperature`, "temperature", a
// pydantic loc ["body","max_completion_tokens"], "Unknown name \"topK\"").
var quotedField = regexp.MustCompile("[`'\"]([A-Za-z_][A-Za-z0-9_.]*)[`'\"\\\\]")

// namedField finds a field named after the words OpenAI-style servers use
// ("Unrecognized request argument supplied: top_k", "Unknown parameter:
// foo").
var namedField = regexp.MustCompile(`(?i)(?:argument supplied|unknown (?:parameter|name|field|argument)|unsupported parameter|extra inputs? (?:are|is) not permitted)s?:?\s+([A-Za-z_][A-Za-z0-9_.]*)`)

// rejectedParamHint reads an error message of a 400/422 for the request
// field it names and says which setting sent it: one of flemma's
// parameters, or a key of the provider's extra_body. "" when the message
// names none of them.
func rejectedParamHint(name, msg string, extra map[string]any) string {
	seen := map[string]bool{}
	var fields []string
	for _, re := range []*regexp.Regexp{quotedField, namedField} {
		for _, m := range re.FindAllStringSubmatch(msg, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				fields = append(fields, m[1])
			}
		}
	}
	var keys []string
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, f := range fields {
		top, _, _ := strings.Cut(f, ".")
		for _, k := range keys {
			if f == k || top == k {
				return "the server refused `" + f + "`, set by providers." + name + ".extra_body." + k + ": remove or correct it there"
			}
		}
	}
	for _, f := range fields {
		if f == "reasoning_content" || strings.HasSuffix(f, ".reasoning_content") {
			return "the server refused `reasoning_content` in the conversation: set providers." + name + ".reasoning = \"none\""
		}
		top, _, _ := strings.Cut(f, ".")
		for _, s := range settingOf {
			for _, sf := range s.fields {
				if strings.EqualFold(f, sf) || strings.EqualFold(top, sf) {
					return "the model refused `" + f + "`: " + s.hint
				}
			}
		}
	}
	return ""
}
