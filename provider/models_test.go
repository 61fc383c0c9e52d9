package provider

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// TestCatalogue checks the table itself: every entry is complete and
// consistent, and each provider's default model is a known id.
func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range catalogue {
		id := m.Provider + "/" + m.Name
		if seen[id] {
			t.Errorf("%s: listed twice", id)
		}
		seen[id] = true
		if _, ok := defaultModels[m.Provider]; !ok {
			t.Errorf("%s: unknown provider", id)
		}
		if m.MaxOutputTokens <= 0 || m.ContextWindow <= m.MaxOutputTokens/2 {
			t.Errorf("%s: limits %d output / %d context", id, m.MaxOutputTokens, m.ContextWindow)
		}
		checkThinkingForm(t, id, m)
		checkEfforts(t, id, m.Efforts)
		p := m.Prices
		if p.Input < 0 || p.Output < p.Input || p.CacheRead < 0 || p.CacheRead > p.Input || p.CacheWrite < 0 {
			t.Errorf("%s: prices %+v", id, p)
		}
		if !m.Family && p.Input == 0 {
			t.Errorf("%s: a model id without its input price", id)
		}
	}
	for prov, model := range defaultModels {
		m := LookupModel(prov, "", nil)
		if !m.Known || m.Family || m.Name != model {
			t.Errorf("default model of %s = %+v, want the catalogue's %s", prov, m, model)
		}
	}
	for _, prov := range []string{"anthropic", "openai", "vertex"} {
		names := ModelNames(prov)
		if !sort.StringsAreSorted(names) || len(names) < 5 {
			t.Errorf("ModelNames(%s) = %v", prov, names)
		}
		for _, n := range names {
			if strings.HasSuffix(n, "-") || strings.HasSuffix(n, ".") {
				t.Errorf("ModelNames(%s) offers the family prefix %s", prov, n)
			}
		}
	}
	if got := ModelNames("replay"); strings.Join(got, ",") != strings.Join(ModelNames("anthropic"), ",") {
		t.Errorf("replay completes %v, want Anthropic's models", got)
	}
}

// checkThinkingForm: a catalogue entry's thinking form is known, and has
// what the form needs (effort words, budget bounds) and nothing it forbids.
func checkThinkingForm(t *testing.T, id string, m ModelInfo) {
	t.Helper()
	switch m.Thinking {
	case ThinkingAdaptive, ThinkingEffort:
		if len(m.Efforts) == 0 {
			t.Errorf("%s: an %s model needs its effort words", id, m.Thinking)
		}
	case ThinkingBudget:
		if m.Provider == "vertex" && (m.MinBudget < 1 || m.MaxBudget <= m.MinBudget || m.MaxBudget >= m.MaxOutputTokens) {
			t.Errorf("%s: budget bounds %d..%d (limit %d)", id, m.MinBudget, m.MaxBudget, m.MaxOutputTokens)
		}
		if m.Provider == "anthropic" && m.MinBudget != anthropicMinBudget {
			t.Errorf("%s: Anthropic's smallest budget is %d, not %d", id, anthropicMinBudget, m.MinBudget)
		}
	case ThinkingNone:
		if len(m.Efforts) > 0 || m.AlwaysThinks {
			t.Errorf("%s: a model that does not think has efforts or always thinks", id)
		}
	default:
		t.Errorf("%s: thinking form %q", id, m.Thinking)
	}
}

// checkEfforts: a catalogue entry's effort words are known, lowest first.
func checkEfforts(t *testing.T, id string, efforts []string) {
	t.Helper()
	last := -1
	for _, e := range efforts {
		r, ok := effortOrder[e]
		if !ok || r <= last {
			t.Errorf("%s: efforts %v are not known words, lowest first", id, efforts)
			return
		}
		last = r
	}
}

// TestLookupModel: a model id finds the entry that is the longest prefix of
// it (dated snapshots, aliases, later versions of a family, a gateway's
// vendor/ path); an id that matches nothing is unknown.
func TestLookupModel(t *testing.T) {
	cases := []struct {
		provider, model string
		entry           string // "" = unknown
		form            string
		limit           int
	}{
		{"anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5", ThinkingBudget, 64000},
		{"anthropic", "claude-opus-4-8", "claude-opus-4-8", ThinkingAdaptive, 128000},
		{"anthropic", "claude-opus-4-9", "claude-opus-4-", ThinkingAdaptive, 128000}, // a later 4.x: adaptive
		{"anthropic", "claude-opus-4-20250514", "claude-opus-4-20250514", ThinkingBudget, 32000},
		{"anthropic", "claude-sonnet-4-7", "claude-sonnet-4-", ThinkingAdaptive, 64000},
		{"anthropic", "claude-3-5-haiku-latest", "claude-3-5-haiku", ThinkingNone, 8192},
		{"anthropic", "claude-opus-5-5", "claude-opus-5-5", ThinkingAdaptive, 128000},
		{"anthropic", "claude-opus-5-7", "claude-opus-5", ThinkingAdaptive, 128000},
		{"replay", "", "claude-sonnet-4-6", ThinkingAdaptive, 64000},
		{"openai", "gpt-4o-2024-08-06", "gpt-4o", ThinkingNone, 16384},
		{"openai", "gpt-4o-mini", "gpt-4o-mini", ThinkingNone, 16384},
		{"openai", "gpt-4.1-mini-2025-04-14", "gpt-4.1-mini", ThinkingNone, 32768},
		{"openai", "gpt-5.5", "gpt-5.5", ThinkingEffort, 128000},
		{"openai", "gpt-5.7", "gpt-5.", ThinkingEffort, 128000},
		{"openai", "gpt-5.7-pro", "gpt-5.*-pro", ThinkingEffort, 128000},
		{"openai", "gpt-5.7-chat-latest", "gpt-5.*-chat", ThinkingNone, 16384},
		{"openai", "gpt-5.6-sol-2026-06-26", "gpt-5.6-sol", ThinkingEffort, 128000},
		{"anthropic", "claude-mythos-5", "claude-mythos-5", ThinkingAdaptive, 128000},
		{"anthropic", "claude-mythos-6-preview", "claude-", ThinkingAdaptive, 128000},
		{"vertex", "gemini-3.5-flash", "gemini-3.5-flash", ThinkingEffort, 65536},
		{"vertex", "gemini-3.7-flash-lite", "gemini-*-flash", ThinkingEffort, 65536},
		{"openai", "gpt-5.4-pro", "gpt-5.4-pro", ThinkingEffort, 128000},
		{"openai", "o4-mini", "o4-mini", ThinkingEffort, 100000},
		{"openai", "openai/gpt-4o", "gpt-4o", ThinkingNone, 16384},
		{"vertex", "gemini-2.5-flash-lite-preview-09-2025", "gemini-2.5-flash-lite", ThinkingBudget, 65536},
		{"vertex", "gemini-3.5-pro", "gemini-*-pro", ThinkingEffort, 65536},
		{"vertex", "gemini-4", "gemini-", ThinkingEffort, 65536},
		{"vertex", "gemini-2.0-flash-001", "gemini-2.0-flash", ThinkingNone, 8192},
		{"anthropic", "gpt-4o", "", ThinkingNone, 0}, // another provider's model
		{"openai", "llama3.1:8b", "", ThinkingNone, 0},
		{"openai", "gpt-4p", "", ThinkingNone, 0}, // a prefix ends at a separator: not gpt-4
		{"openai", "o30", "", ThinkingNone, 0},
		{"vertex", "text-bison", "", ThinkingNone, 0},
		{"anthropic", "my-finetune", "", ThinkingNone, 0},
	}
	for _, tc := range cases {
		m := LookupModel(tc.provider, tc.model, nil)
		name := m.Name
		if !m.Known {
			name = ""
		}
		if name != tc.entry || m.Thinking != tc.form || m.MaxOutputTokens != tc.limit {
			t.Errorf("LookupModel(%s, %s) = %s %s %d, want %s %s %d", tc.provider, tc.model, name, m.Thinking, m.MaxOutputTokens, tc.entry, tc.form, tc.limit)
		}
	}
}

// TestModelOverride: setup's models = {…} changes what a known model is
// taken for (only the fields it sets) and declares models the catalogue
// lacks; the longest matching key wins.
func TestModelOverride(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	ov := map[string]ModelOverride{
		"claude-opus-4-8": {MaxOutputTokens: 16000, OutputPrice: f(30)},
		"my-claude":       {MaxOutputTokens: 20000, ContextWindow: 500000, Thinking: "adaptive", InputPrice: f(1)},
		"my-claude-big":   {MaxOutputTokens: 40000},
		"qwen":            {Thinking: "budget"},
		"local-":          {Thinking: "effort"},
		"odd":             {Thinking: "deep", ContextWindow: 1000},
	}
	m := LookupModel("anthropic", "claude-opus-4-8", ov)
	if m.MaxOutputTokens != 16000 || m.Prices.Output != 30 || m.Prices.Input != 5 || m.Thinking != ThinkingAdaptive || !m.Known {
		t.Errorf("override of a known model = %+v", m)
	}
	m = LookupModel("anthropic", "my-claude-2", ov)
	if !m.Known || m.Name != "my-claude" || m.MaxOutputTokens != 20000 || m.ContextWindow != 500000 || m.Thinking != ThinkingAdaptive || len(m.Efforts) == 0 || m.Prices.Input != 1 {
		t.Errorf("a declared model = %+v", m)
	}
	if m = LookupModel("anthropic", "my-claude-big-1", ov); m.MaxOutputTokens != 40000 || m.Thinking != ThinkingNone {
		t.Errorf("the longest key wins, alone: %+v", m)
	}
	if m = LookupModel("openai", "odd-1", ov); m.Thinking != ThinkingNone || m.ContextWindow != 1000 {
		t.Errorf("a thinking form that is none of the four is ignored, the rest applies: %+v", m)
	}
	if m = LookupModel("anthropic", "qwen3", ov); m.MinBudget != anthropicMinBudget || m.MaxOutputTokens != 0 {
		t.Errorf("a declared budget model on Anthropic = %+v", m)
	}

	// The body is built for what the override says.
	body := func(prov string, p Params) map[string]json.RawMessage {
		t.Helper()
		info := LookupModel(prov, p.Model, ov)
		req := hello()
		req.Params, req.ModelInfo = p, &info
		var b []byte
		var err error
		switch prov {
		case "anthropic":
			b, err = anthropicBody(req)
		case "openai":
			b, err = openaiBody(req)
		default:
			b, err = vertexBody(req, "vertex")
		}
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		json.Unmarshal(b, &top)
		return top
	}
	top := body("anthropic", Params{Model: "claude-opus-4-8", MaxTokens: 64000})
	if string(top["max_tokens"]) != "16000" {
		t.Errorf("max_tokens above the overridden limit: %s", top["max_tokens"])
	}
	top = body("anthropic", Params{Model: "my-claude-2", Thinking: "low"})
	if string(top["thinking"]) != `{"display":"summarized","type":"adaptive"}` || string(top["output_config"]) != `{"effort":"low"}` || string(top["max_tokens"]) != "20000" {
		t.Errorf("declared adaptive model: thinking %s output_config %s max_tokens %s", top["thinking"], top["output_config"], top["max_tokens"])
	}
	top = body("openai", Params{Model: "local-r1", Thinking: "minimal"})
	if string(top["reasoning"]) != `{"effort":"low","summary":"auto"}` {
		t.Errorf("declared effort model: reasoning %s", top["reasoning"])
	}
	top = body("vertex", Params{Model: "qwen-x", Thinking: "medium", MaxTokens: 20000})
	if string(top["generationConfig"]) != `{"maxOutputTokens":20000,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}` {
		t.Errorf("declared budget model on Vertex: %s", top["generationConfig"])
	}
}

// TestModelRequests are the request bodies per provider and class of model
// (golden files under testdata/request/models/): the thinking form, the
// output limit, temperature.
func TestModelRequests(t *testing.T) {
	temp := 0.5
	req := func(p Params) Request {
		r := hello()
		r.System = "Be brief."
		r.Params = p
		r.Params.Temperature = &temp
		r.Params.CacheRetention = "none"
		return r
	}
	cases := []struct {
		provider, name string
		params         Params
	}{
		{"anthropic", "adaptive_opus_4_8", Params{Model: "claude-opus-4-8"}},
		{"anthropic", "adaptive_sonnet_4_6_max", Params{Model: "claude-sonnet-4-6", Thinking: "max"}},
		{"anthropic", "budget_sonnet_4_5", Params{Model: "claude-sonnet-4-5", Thinking: "medium"}},
		{"anthropic", "budget_effort_opus_4_5", Params{Model: "claude-opus-4-5", Thinking: "low"}},
		{"anthropic", "none_haiku_3_5_clamped", Params{Model: "claude-3-5-haiku-20241022", MaxTokens: 32000}},
		{"anthropic", "unknown", Params{Model: "my-finetune"}},
		{"anthropic", "family_mythos_6", Params{Model: "claude-mythos-6", Thinking: "max"}},
		{"openai", "reasoning_o3", Params{Model: "o3", Thinking: "medium"}},
		{"openai", "reasoning_gpt_5_4_default", Params{}},
		{"openai", "none_gpt_4o_clamped", Params{Model: "gpt-4o", MaxTokens: 64000}},
		{"openai", "unknown", Params{Model: "deepseek-reasoner"}},
		{"openai", "family_gpt_5_7_max", Params{Model: "gpt-5.7", Thinking: "max"}},
		{"openai", "pro_gpt_5_5_low", Params{Model: "gpt-5.5-pro", Thinking: "low"}},
		{"vertex", "level_gemini_3_flash", Params{Model: "gemini-3-flash-preview", Thinking: "low"}},
		{"vertex", "budget_gemini_2_5_flash", Params{Model: "gemini-2.5-flash", Thinking: "high"}},
		{"vertex", "none_gemini_2_0_clamped", Params{Model: "gemini-2.0-flash", MaxTokens: 32000}},
		{"vertex", "unknown", Params{Model: "tuned-support-bot-7"}},
		{"vertex", "flash_gemini_3_5_medium", Params{Model: "gemini-3.5-flash", Thinking: "medium"}},
	}
	for _, tc := range cases {
		t.Run(tc.provider+"_"+tc.name, func(t *testing.T) {
			srv, c := sseServer(t, map[string]string{"anthropic": anthropicStreams()["text_only"], "openai": openaiStreams()["text_only"], "vertex": vertexStreams()["text_only"]}[tc.provider])
			if _, err := collect(t.Context(), newTest(t, tc.provider, srv.URL), req(tc.params)); err != nil {
				t.Fatal(err)
			}
			_, _, _, body := c.get()
			goldenJSON(t, "request/models/"+tc.provider+"_"+tc.name+".json", body)
		})
	}
}

// TestBudgetsFit: for every budget model, level and max_tokens, the request
// never has max_tokens above the model's limit, and a budget is always
// at least the model's smallest and below max_tokens, with room for the
// answer.
func TestBudgetsFit(t *testing.T) {
	for _, m := range catalogue {
		if m.Provider == "openai" {
			continue
		}
		for _, level := range []string{"minimal", "low", "medium", "high", "max", "100", "40000", "200000"} {
			for _, mt := range []int{0, 1, 500, 1024, 1500, 2048, 4000, 8192, 16000, 32000, 64000, 128000, 1 << 20} {
				req := hello()
				req.Params = Params{Model: m.Name, Thinking: level, MaxTokens: mt}
				name := fmt.Sprintf("%s/%s level %s max_tokens %d", m.Provider, m.Name, level, mt)
				var maxTokens, budget int
				var b []byte
				var err error
				if m.Provider == "anthropic" {
					b, err = anthropicBody(req)
					var body struct {
						MaxTokens int `json:"max_tokens"`
						Thinking  *struct {
							Budget int `json:"budget_tokens"`
						} `json:"thinking"`
					}
					json.Unmarshal(b, &body)
					maxTokens = body.MaxTokens
					if body.Thinking != nil {
						budget = body.Thinking.Budget
					}
				} else {
					b, err = vertexBody(req, "vertex")
					var body struct {
						Gen struct {
							MaxTokens int `json:"maxOutputTokens"`
							Thinking  *struct {
								Budget *int `json:"thinkingBudget"`
							} `json:"thinkingConfig"`
						} `json:"generationConfig"`
					}
					json.Unmarshal(b, &body)
					maxTokens = body.Gen.MaxTokens
					if body.Gen.Thinking != nil && body.Gen.Thinking.Budget != nil {
						budget = *body.Gen.Thinking.Budget
					}
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if maxTokens < 1 || maxTokens > m.MaxOutputTokens {
					t.Errorf("%s: max_tokens %d (limit %d)", name, maxTokens, m.MaxOutputTokens)
				}
				if mt > 0 && maxTokens != min(mt, m.MaxOutputTokens) {
					t.Errorf("%s: max_tokens %d, want the set %d within the limit", name, maxTokens, mt)
				}
				if budget == 0 {
					continue
				}
				if m.Thinking != ThinkingBudget {
					t.Errorf("%s: a budget on a %s model", name, m.Thinking)
				}
				if budget < m.MinBudget || (m.MaxBudget > 0 && budget > m.MaxBudget) || budget >= maxTokens || maxTokens-budget < min(4096, maxTokens/2) {
					t.Errorf("%s: budget %d with max_tokens %d (bounds %d..%d)", name, budget, maxTokens, m.MinBudget, m.MaxBudget)
				}
			}
		}
	}
}

// TestEffortFor: levels land on the model's own effort words.
func TestEffortFor(t *testing.T) {
	cases := []struct {
		efforts []string
		level   string
		want    string
	}{
		{effortsClaude47, "max", "max"},
		{effortsClaude47, "minimal", "low"},
		{effortsClaude45, "max", "high"},
		{effortsGPT5Pro, "minimal", "high"},
		{effortsGPT52Pro, "low", "medium"},
		{effortsGPT51, "minimal", "low"}, // never "none" for a level
		{effortsGPT52, "max", "xhigh"},
		{effortsGemini3, "medium", "high"}, // a tie goes up
		{effortsGemini3Fl, "minimal", "minimal"},
		{effortsOSeries, "xhigh", "high"},
		{effortsOSeries, "turbo", "turbo"}, // a word of the user's own is passed on
	}
	for _, tc := range cases {
		if got := effortFor(ModelInfo{Efforts: tc.efforts}, tc.level); got != tc.want {
			t.Errorf("effortFor(%v, %s) = %s, want %s", tc.efforts, tc.level, got, tc.want)
		}
	}
}

// TestSuggestModel: the rule :Flemma switch refuses model names by.
func TestSuggestModel(t *testing.T) {
	ov := map[string]ModelOverride{"my-llm": {}}
	cases := []struct{ provider, model, want string }{
		{"anthropic", "claude-sonet-4-6", "claude-sonnet-4-6"},  // a letter missing
		{"anthropic", "claude-sonnet-4.6", "claude-sonnet-4-6"}, // the wrong separator
		{"anthropic", "claude-opus-45", ""},                     // shaped like claude-opus-5: numbers are not judged
		{"openai", "gpt-4p", "gpt-4o"},                          // a tie: the same length wins (not gpt-4)
		{"openai", "GPT-4o", ""},                                // two letters off in a short name: not near
		{"openai", "gpt4o", "gpt-4o"},
		{"vertex", "gemini-2.5-flsh", "gemini-2.5-flash"},
		{"openai", "my-lm", "my-llm"},                       // setup's models count
		{"anthropic", "claude-sonnet-4-6", ""},              // known
		{"anthropic", "claude-sonnet-4-5-20250929", ""},     // a snapshot of a known model
		{"anthropic", "claude-opus-6", ""},                  // a later version: numbers only
		{"openai", "gpt-6", ""},                             // likewise
		{"vertex", "gemini-2.7-flash", ""},                  // likewise
		{"openai", "llama3.1:8b", ""},                       // far from every known name
		{"openai", "my-llm-v2", ""},                         // an override's prefix
		{"replay", "claude-sonet-4-6", "claude-sonnet-4-6"}, // replay is Anthropic
		{"anthropic", "", ""},
	}
	for _, tc := range cases {
		if got := SuggestModel(tc.provider, tc.model, ov); got != tc.want {
			t.Errorf("SuggestModel(%s, %q) = %q, want %q", tc.provider, tc.model, got, tc.want)
		}
	}
}

// TestChatCompletionsModels: on the chat_completions wire only what the
// user set is sent, bounded by what the catalogue knows of the model (any
// section: a gateway may serve any of them, under a vendor/ path too).
func TestChatCompletionsModels(t *testing.T) {
	temp := 0.3
	cases := []struct {
		name   string
		params Params
		want   map[string]string // top-level keys; "" = absent
	}{
		{"unknown model: what was set, as it was", Params{Model: "qwen3", MaxTokens: 64000, Temperature: &temp, Thinking: "max"},
			map[string]string{"max_tokens": "64000", "temperature": "0.3", "reasoning_effort": `"high"`}},
		{"nothing set, nothing sent", Params{Model: "gpt-4o"},
			map[string]string{"max_tokens": "", "temperature": "", "reasoning_effort": ""}},
		{"gpt-4o: cut to its limit, no reasoning_effort", Params{Model: "gpt-4o", MaxTokens: 64000, Thinking: "high"},
			map[string]string{"max_tokens": "16384", "reasoning_effort": ""}},
		{"openai/gpt-4o through a gateway", Params{Model: "openai/gpt-4o", MaxTokens: 64000},
			map[string]string{"max_tokens": "16384"}},
		{"o3: max_completion_tokens, no temperature, its own effort words", Params{Model: "o3", MaxTokens: 200000, Temperature: &temp, Thinking: "minimal"},
			map[string]string{"max_completion_tokens": "100000", "max_tokens": "", "temperature": "", "reasoning_effort": `"low"`}},
		{"gpt-5.4 max is xhigh", Params{Model: "gpt-5.4", Thinking: "max"},
			map[string]string{"reasoning_effort": `"xhigh"`}},
		{"a Claude through a gateway: common effort words, no temperature", Params{Model: "anthropic/claude-opus-4-8", Thinking: "max", Temperature: &temp, MaxTokens: 500000},
			map[string]string{"reasoning_effort": `"high"`, "temperature": "", "max_tokens": "128000"}},
		{"setup's models bound it too", Params{Model: "my-llm-7b", MaxTokens: 9000},
			map[string]string{"max_tokens": "4096"}},
	}
	ov := map[string]ModelOverride{"my-llm": {MaxOutputTokens: 4096}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := hello()
			req.Params = tc.params
			if strings.HasPrefix(tc.params.Model, "my-llm") {
				info := LookupModel(chatWire, tc.params.Model, ov)
				req.ModelInfo = &info
			}
			b, err := chatBody(req, "gw", dialectOf("", ""))
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

func TestPricesCost(t *testing.T) {
	sonnet := Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	u := Usage{InputTokens: 1000, OutputTokens: 2000, CacheReadTokens: 10000, CacheWriteTokens: 4000, ThinkingTokens: 500}
	got, ok := sonnet.Cost(u)
	// 1000*3 + 2000*15 + 10000*0.3 + 4000*3.75 = 3000+30000+3000+15000 = 51000 per million
	if !ok || got < 0.050999 || got > 0.051001 {
		t.Errorf("Cost = %v, %v; want 0.051, true", got, ok)
	}
	if _, ok := (Prices{}).Cost(u); ok {
		t.Error("unknown prices gave a cost")
	}
	if _, ok := (Prices{Input: 1}).Cost(u); ok {
		t.Error("a missing output price gave a cost")
	}
}

// The replay provider answers from a recorded script: its model has the
// Anthropic catalogue's limits but no prices (nothing is billed), unless
// setup gives some.
func TestReplayModelHasNoPrices(t *testing.T) {
	if m := LookupModel("replay", "", nil); m.Prices != (Prices{}) || m.MaxOutputTokens == 0 {
		t.Errorf("replay: %+v", m)
	}
	in := 3.0
	out := 15.0
	m := LookupModel("replay", "claude-sonnet-4-6", map[string]ModelOverride{"claude-sonnet-4-6": {InputPrice: &in, OutputPrice: &out}})
	if m.Prices.Input != 3 || m.Prices.Output != 15 {
		t.Errorf("replay with prices from setup: %+v", m.Prices)
	}
}
