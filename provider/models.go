package provider

import (
	"sort"
	"strings"

	"github.com/flemma-dev/flemma/internal/editdist"
)

// The model catalogue: what flemma knows of each model it can send to, so
// that a request is one the model accepts. It is data (the table below,
// checked by TestCatalogue), applied where each provider builds its body:
//
//   - the thinking form: Anthropic's adaptive thinking with an effort, or a
//     budget_tokens budget; OpenAI's reasoning effort (reasoning models
//     only); Gemini's thinkingLevel (Gemini 3) or thinkingBudget (2.5);
//   - the output-token limit: max_tokens is never sent above it, and a
//     thinking budget always stays below max_tokens;
//   - the context window, and the prices per million tokens (for usage
//     and cost; nothing shows cost yet).
//
// A model matches the entry whose name is the longest prefix of its id
// ending at a separator ("claude-sonnet-4-5-20250929" is
// "claude-sonnet-4-5", "gpt-4o-mini" is not "gpt-4" but its own); entries marked
// Family are prefixes only ("claude-opus-4-"), never completed or offered
// as a correction. setup()'s models = { ["<model or prefix>"] = {…} }
// overrides an entry or declares a model the catalogue lacks
// (ModelOverride). A model that matches nothing gets the safe defaults of
// unknownModel, and the engine says so once.

// Thinking forms (ModelInfo.Thinking, and models.<m>.thinking in setup).
const (
	// ThinkingAdaptive: Anthropic thinking {type: "adaptive"} with
	// output_config.effort (Claude 4.6 and later; the only form from
	// Claude Opus 4.7 on). Elsewhere it means ThinkingEffort.
	ThinkingAdaptive = "adaptive"
	// ThinkingBudget: a token budget — Anthropic thinking {type:
	// "enabled", budget_tokens}, Gemini 2.5 thinkingBudget. OpenAI has no
	// budget: there it means ThinkingEffort.
	ThinkingBudget = "budget"
	// ThinkingEffort: OpenAI reasoning.effort, Gemini 3 thinkingLevel;
	// on Anthropic output_config.effort alone (no thinking block).
	ThinkingEffort = "effort"
	// ThinkingNone: the model takes no thinking parameter.
	ThinkingNone = "none"
)

// UnknownMaxOutputTokens is max_tokens for a model whose output limit is
// not known, when the user sets none: every current model of the three
// providers accepts it. A max_tokens the user sets is sent as it is.
const UnknownMaxOutputTokens = 8192

// ModelInfo is what flemma knows of one model.
type ModelInfo struct {
	Provider string // anthropic | openai | vertex
	// Name is the catalogue entry the model matched (or the override's
	// key); for an unknown model, the model's id.
	Name string
	// Family: Name is a prefix of model ids, not an id itself.
	Family bool
	// Known: the catalogue or the user's models = {…} describes the
	// model. An unknown model gets max_tokens UnknownMaxOutputTokens
	// (unless the user sets one) and no thinking parameter.
	Known bool

	MaxOutputTokens int // the most max_tokens the model accepts; 0 = not known
	ContextWindow   int // input and output, tokens; 0 = not known

	Thinking string // ThinkingAdaptive | ThinkingBudget | ThinkingEffort | ThinkingNone
	// Efforts are the effort words the model takes, lowest first ("none"
	// first when it turns reasoning off). Levels map onto them: "max" is
	// the last, the others the same word or the nearest one.
	Efforts []string
	// MinBudget and MaxBudget bound a budget while thinking is on (0 =
	// no bound); a budget model that is not AlwaysThinks turns thinking
	// off with a budget of 0 (Gemini) or by sending none (Anthropic).
	MinBudget, MaxBudget int
	// AlwaysThinks: the model cannot stop thinking (Gemini 2.5 Pro, Gemini
	// 3): "off" sends no thinking parameter rather than one it rejects.
	AlwaysThinks bool
	// NoSampling: the model rejects temperature (Claude Opus 4.7 and
	// later, OpenAI reasoning models); a configured temperature is dropped.
	NoSampling bool
	// ThoughtSignatures: Gemini 3 requires a thought signature on every
	// function call of the current turn (a call made by another provider
	// gets the documented placeholder).
	ThoughtSignatures bool

	Prices Prices
}

// Prices are USD per million tokens; 0 = not known (or free: OpenAI and
// Gemini do not bill cache writes by the token).
type Prices struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Cost is what u costs at these prices, in US dollars, and whether it is
// known: the input and output prices are (a cache price of 0 costs nothing).
func (p Prices) Cost(u Usage) (float64, bool) {
	if p.Input == 0 || p.Output == 0 {
		return 0, false
	}
	c := float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite
	return c/1e6 + u.SearchFee, true
}

// ModelOverride is one entry of setup()'s models = {…}: nil/"" fields keep
// the catalogue's value (or the unknown-model default).
type ModelOverride struct {
	MaxOutputTokens int      `json:"max_output_tokens"`
	ContextWindow   int      `json:"context_window"`
	Thinking        string   `json:"thinking"` // adaptive | budget | effort | none
	InputPrice      *float64 `json:"input_price"`
	OutputPrice     *float64 `json:"output_price"`
	CacheReadPrice  *float64 `json:"cache_read_price"`
	CacheWritePrice *float64 `json:"cache_write_price"`
}

// Effort lists shared by several entries.
var (
	effortsClaude45  = []string{"low", "medium", "high"}
	effortsClaude46  = []string{"low", "medium", "high", "max"}
	effortsClaude47  = []string{"low", "medium", "high", "xhigh", "max"}
	effortsOSeries   = []string{"low", "medium", "high"}
	effortsGPT5      = []string{"minimal", "low", "medium", "high"}
	effortsGPT51     = []string{"none", "low", "medium", "high"}
	effortsGPT52     = []string{"none", "low", "medium", "high", "xhigh"}
	effortsGPT5Pro   = []string{"high"}
	effortsGPT52Pro  = []string{"medium", "high", "xhigh"}
	effortsGPT56     = []string{"none", "low", "medium", "high", "xhigh", "max"}
	effortsGemini3   = []string{"low", "high"}
	effortsGemini31  = []string{"low", "medium", "high"}
	effortsGemini3Fl = []string{"minimal", "low", "medium", "high"}
	effortsDeclared  = []string{"low", "medium", "high"} // a model declared in setup: the words every provider takes
)

// catalogue is the built-in table. Sources (prices are the base tier, a
// prompt up to 200K tokens where the price depends on it) are cited in
// docs/design.md, "Models".
var catalogue = []ModelInfo{
	// Anthropic. Adaptive from Claude 4.6 on (budget_tokens is rejected
	// from Opus 4.7 on, and so is temperature); budget before; none before
	// Claude 3.7.
	{Provider: "anthropic", Name: "claude-fable-5", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{10, 50, 1, 12.5}},
	{Provider: "anthropic", Name: "claude-fable-5-1", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{10, 50, 0.25, 12.5}},
	{Provider: "anthropic", Name: "claude-opus-5", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{5, 25, 0.5, 6.25}},
	{Provider: "anthropic", Name: "claude-opus-5-5", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{4, 20, 0.4, 5}},
	{Provider: "anthropic", Name: "claude-sonnet-5", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{2, 10, 0.2, 2.5}},
	{Provider: "anthropic", Name: "claude-sonnet-5-5", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{2, 10, 0.1, 2.5}},
	{Provider: "anthropic", Name: "claude-haiku-5-5", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude45, NoSampling: true, Prices: Prices{0.1, 0.5, 0.01, 0.125}},
	{Provider: "anthropic", Name: "claude-mythos-5", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{10, 50, 1, 12.5}},
	// Any other Claude model is taken for the newest family: adaptive
	// thinking, the efforts up to max, no temperature (every Claude from
	// Opus 4.7 on refuses it).
	{Provider: "anthropic", Name: "claude-", Family: true, MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true},
	{Provider: "anthropic", Name: "claude-opus-4-", Family: true, MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{5, 25, 0.5, 6.25}},
	{Provider: "anthropic", Name: "claude-opus-4-8", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{5, 25, 0.5, 6.25}},
	{Provider: "anthropic", Name: "claude-opus-4-7", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude47, NoSampling: true, Prices: Prices{5, 25, 0.5, 6.25}},
	{Provider: "anthropic", Name: "claude-opus-4-6", MaxOutputTokens: 128000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude46, Prices: Prices{5, 25, 0.5, 6.25}},
	{Provider: "anthropic", Name: "claude-opus-4-5", MaxOutputTokens: 64000, ContextWindow: 200000, Thinking: ThinkingBudget, Efforts: effortsClaude45, MinBudget: 1024, Prices: Prices{5, 25, 0.5, 6.25}},
	{Provider: "anthropic", Name: "claude-opus-4-1", MaxOutputTokens: 32000, ContextWindow: 200000, Thinking: ThinkingBudget, MinBudget: 1024, Prices: Prices{15, 75, 1.5, 18.75}},
	{Provider: "anthropic", Name: "claude-opus-4-0", MaxOutputTokens: 32000, ContextWindow: 200000, Thinking: ThinkingBudget, MinBudget: 1024, Prices: Prices{15, 75, 1.5, 18.75}},
	{Provider: "anthropic", Name: "claude-opus-4-20250514", MaxOutputTokens: 32000, ContextWindow: 200000, Thinking: ThinkingBudget, MinBudget: 1024, Prices: Prices{15, 75, 1.5, 18.75}},
	{Provider: "anthropic", Name: "claude-sonnet-4-", Family: true, MaxOutputTokens: 64000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude46, Prices: Prices{3, 15, 0.3, 3.75}},
	{Provider: "anthropic", Name: "claude-sonnet-4-6", MaxOutputTokens: 64000, ContextWindow: 1000000, Thinking: ThinkingAdaptive, Efforts: effortsClaude46, Prices: Prices{3, 15, 0.3, 3.75}},
	{Provider: "anthropic", Name: "claude-sonnet-4-5", MaxOutputTokens: 64000, ContextWindow: 200000, Thinking: ThinkingBudget, MinBudget: 1024, Prices: Prices{3, 15, 0.3, 3.75}},
	{Provider: "anthropic", Name: "claude-sonnet-4-0", MaxOutputTokens: 64000, ContextWindow: 200000, Thinking: ThinkingBudget, MinBudget: 1024, Prices: Prices{3, 15, 0.3, 3.75}},
	{Provider: "anthropic", Name: "claude-sonnet-4-20250514", MaxOutputTokens: 64000, ContextWindow: 200000, Thinking: ThinkingBudget, MinBudget: 1024, Prices: Prices{3, 15, 0.3, 3.75}},
	{Provider: "anthropic", Name: "claude-haiku-4-5", MaxOutputTokens: 64000, ContextWindow: 200000, Thinking: ThinkingBudget, MinBudget: 1024, Prices: Prices{1, 5, 0.1, 1.25}},
	{Provider: "anthropic", Name: "claude-3-7-sonnet", MaxOutputTokens: 64000, ContextWindow: 200000, Thinking: ThinkingBudget, MinBudget: 1024, Prices: Prices{3, 15, 0.3, 3.75}},
	{Provider: "anthropic", Name: "claude-3-5-sonnet", MaxOutputTokens: 8192, ContextWindow: 200000, Thinking: ThinkingNone, Prices: Prices{3, 15, 0.3, 3.75}},
	{Provider: "anthropic", Name: "claude-3-5-haiku", MaxOutputTokens: 8192, ContextWindow: 200000, Thinking: ThinkingNone, Prices: Prices{0.8, 4, 0.08, 1}},
	{Provider: "anthropic", Name: "claude-3-opus", MaxOutputTokens: 4096, ContextWindow: 200000, Thinking: ThinkingNone, Prices: Prices{15, 75, 1.5, 18.75}},
	{Provider: "anthropic", Name: "claude-3-haiku", MaxOutputTokens: 4096, ContextWindow: 200000, Thinking: ThinkingNone, Prices: Prices{0.25, 1.25, 0.03, 0.3}},

	// OpenAI (Responses). Reasoning effort on the o-series and GPT-5
	// (not the -chat models); temperature only on the others.
	{Provider: "openai", Name: "gpt-5", MaxOutputTokens: 128000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT5, NoSampling: true, Prices: Prices{1.25, 10, 0.125, 0}},
	{Provider: "openai", Name: "gpt-5-mini", MaxOutputTokens: 128000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT5, NoSampling: true, Prices: Prices{0.25, 2, 0.025, 0}},
	{Provider: "openai", Name: "gpt-5-nano", MaxOutputTokens: 128000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT5, NoSampling: true, Prices: Prices{0.05, 0.4, 0.005, 0}},
	{Provider: "openai", Name: "gpt-5-pro", MaxOutputTokens: 272000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT5Pro, NoSampling: true, Prices: Prices{15, 120, 0, 0}},
	{Provider: "openai", Name: "gpt-5-chat", MaxOutputTokens: 16384, ContextWindow: 128000, Thinking: ThinkingNone, Prices: Prices{1.25, 10, 0.125, 0}},
	// A later GPT-5.x is taken for the newest: efforts none … max, no
	// temperature; its -pro models think at medium and above only, its
	// -chat models do not reason.
	{Provider: "openai", Name: "gpt-5.", Family: true, MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT56, NoSampling: true},
	{Provider: "openai", Name: "gpt-5.*-pro", Family: true, MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT52Pro, NoSampling: true},
	{Provider: "openai", Name: "gpt-5.*-chat", Family: true, MaxOutputTokens: 16384, ContextWindow: 128000, Thinking: ThinkingNone},
	{Provider: "openai", Name: "gpt-5.1", MaxOutputTokens: 128000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT51, NoSampling: true, Prices: Prices{1.25, 10, 0.125, 0}},
	{Provider: "openai", Name: "gpt-5.1-chat", MaxOutputTokens: 16384, ContextWindow: 128000, Thinking: ThinkingNone, Prices: Prices{1.25, 10, 0.125, 0}},
	{Provider: "openai", Name: "gpt-5.2", MaxOutputTokens: 128000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT52, NoSampling: true, Prices: Prices{1.75, 14, 0.175, 0}},
	{Provider: "openai", Name: "gpt-5.2-pro", MaxOutputTokens: 128000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT52Pro, NoSampling: true, Prices: Prices{21, 168, 0, 0}},
	{Provider: "openai", Name: "gpt-5.2-chat", MaxOutputTokens: 16384, ContextWindow: 128000, Thinking: ThinkingNone, Prices: Prices{1.75, 14, 0.175, 0}},
	{Provider: "openai", Name: "gpt-5.4", MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT52, NoSampling: true, Prices: Prices{2.5, 15, 0.25, 0}},
	{Provider: "openai", Name: "gpt-5.4-pro", MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT52Pro, NoSampling: true, Prices: Prices{30, 180, 0, 0}},
	{Provider: "openai", Name: "gpt-5.4-mini", MaxOutputTokens: 128000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT52, NoSampling: true, Prices: Prices{0.75, 4.5, 0.075, 0}},
	{Provider: "openai", Name: "gpt-5.4-nano", MaxOutputTokens: 128000, ContextWindow: 400000, Thinking: ThinkingEffort, Efforts: effortsGPT52, NoSampling: true, Prices: Prices{0.2, 1.25, 0.02, 0}},
	{Provider: "openai", Name: "gpt-5.5", MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT52, NoSampling: true, Prices: Prices{5, 30, 0.5, 0}},
	{Provider: "openai", Name: "gpt-5.5-pro", MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT52Pro, NoSampling: true, Prices: Prices{30, 180, 0, 0}},
	{Provider: "openai", Name: "gpt-5.6-sol", MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT56, NoSampling: true, Prices: Prices{5, 30, 0.5, 0}},
	{Provider: "openai", Name: "gpt-5.6-terra", MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT56, NoSampling: true, Prices: Prices{2.5, 15, 0.25, 0}},
	{Provider: "openai", Name: "gpt-5.6-luna", MaxOutputTokens: 128000, ContextWindow: 1050000, Thinking: ThinkingEffort, Efforts: effortsGPT56, NoSampling: true, Prices: Prices{1, 6, 0.1, 0}},
	{Provider: "openai", Name: "gpt-4", MaxOutputTokens: 8192, ContextWindow: 8192, Thinking: ThinkingNone, Prices: Prices{30, 60, 0, 0}},
	{Provider: "openai", Name: "gpt-4-turbo", MaxOutputTokens: 4096, ContextWindow: 128000, Thinking: ThinkingNone, Prices: Prices{10, 30, 0, 0}},
	{Provider: "openai", Name: "gpt-4.1", MaxOutputTokens: 32768, ContextWindow: 1047576, Thinking: ThinkingNone, Prices: Prices{2, 8, 0.5, 0}},
	{Provider: "openai", Name: "gpt-4.1-mini", MaxOutputTokens: 32768, ContextWindow: 1047576, Thinking: ThinkingNone, Prices: Prices{0.4, 1.6, 0.1, 0}},
	{Provider: "openai", Name: "gpt-4.1-nano", MaxOutputTokens: 32768, ContextWindow: 1047576, Thinking: ThinkingNone, Prices: Prices{0.1, 0.4, 0.025, 0}},
	{Provider: "openai", Name: "gpt-4o", MaxOutputTokens: 16384, ContextWindow: 128000, Thinking: ThinkingNone, Prices: Prices{2.5, 10, 1.25, 0}},
	{Provider: "openai", Name: "gpt-4o-mini", MaxOutputTokens: 16384, ContextWindow: 128000, Thinking: ThinkingNone, Prices: Prices{0.15, 0.6, 0.075, 0}},
	{Provider: "openai", Name: "o1", MaxOutputTokens: 100000, ContextWindow: 200000, Thinking: ThinkingEffort, Efforts: effortsOSeries, NoSampling: true, Prices: Prices{15, 60, 7.5, 0}},
	{Provider: "openai", Name: "o3", MaxOutputTokens: 100000, ContextWindow: 200000, Thinking: ThinkingEffort, Efforts: effortsOSeries, NoSampling: true, Prices: Prices{2, 8, 0.5, 0}},
	{Provider: "openai", Name: "o3-mini", MaxOutputTokens: 100000, ContextWindow: 200000, Thinking: ThinkingEffort, Efforts: effortsOSeries, NoSampling: true, Prices: Prices{1.1, 4.4, 0.55, 0}},
	{Provider: "openai", Name: "o3-pro", MaxOutputTokens: 100000, ContextWindow: 200000, Thinking: ThinkingEffort, Efforts: effortsOSeries, NoSampling: true, Prices: Prices{20, 80, 0, 0}},
	{Provider: "openai", Name: "o4-mini", MaxOutputTokens: 100000, ContextWindow: 200000, Thinking: ThinkingEffort, Efforts: effortsOSeries, NoSampling: true, Prices: Prices{1.1, 4.4, 0.275, 0}},

	// Vertex AI (Gemini). A thinkingLevel on Gemini 3 (which always
	// thinks and signs its function calls), a thinkingBudget on 2.5.
	// Any Gemini after those listed is taken for Gemini 3: a thinkingLevel
	// (Flash and Flash-Lite take minimal … high, Pro low … high), signed
	// function calls.
	{Provider: "vertex", Name: "gemini-", Family: true, MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingEffort, Efforts: effortsGemini31, AlwaysThinks: true, ThoughtSignatures: true},
	{Provider: "vertex", Name: "gemini-3", Family: true, MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingEffort, Efforts: effortsGemini3, AlwaysThinks: true, ThoughtSignatures: true},
	{Provider: "vertex", Name: "gemini-*-pro", Family: true, MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingEffort, Efforts: effortsGemini31, AlwaysThinks: true, ThoughtSignatures: true},
	{Provider: "vertex", Name: "gemini-*-flash", Family: true, MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingEffort, Efforts: effortsGemini3Fl, AlwaysThinks: true, ThoughtSignatures: true},
	{Provider: "vertex", Name: "gemini-3.5-flash", MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingEffort, Efforts: effortsGemini3Fl, AlwaysThinks: true, ThoughtSignatures: true, Prices: Prices{1.5, 9, 0.15, 0}},
	{Provider: "vertex", Name: "gemini-3-pro-preview", MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingEffort, Efforts: effortsGemini3, AlwaysThinks: true, ThoughtSignatures: true, Prices: Prices{2, 12, 0.2, 0}},
	{Provider: "vertex", Name: "gemini-3-flash-preview", MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingEffort, Efforts: effortsGemini3Fl, AlwaysThinks: true, ThoughtSignatures: true, Prices: Prices{0.5, 3, 0.05, 0}},
	{Provider: "vertex", Name: "gemini-3.1-pro-preview", MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingEffort, Efforts: effortsGemini31, AlwaysThinks: true, ThoughtSignatures: true, Prices: Prices{2, 12, 0.2, 0}},
	{Provider: "vertex", Name: "gemini-2.5-pro", MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingBudget, MinBudget: 128, MaxBudget: 32768, AlwaysThinks: true, Prices: Prices{1.25, 10, 0.125, 0}},
	{Provider: "vertex", Name: "gemini-2.5-flash", MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingBudget, MinBudget: 1, MaxBudget: 24576, Prices: Prices{0.3, 2.5, 0.03, 0}},
	{Provider: "vertex", Name: "gemini-2.5-flash-lite", MaxOutputTokens: 65536, ContextWindow: 1048576, Thinking: ThinkingBudget, MinBudget: 512, MaxBudget: 24576, Prices: Prices{0.1, 0.4, 0.01, 0}},
	{Provider: "vertex", Name: "gemini-2.0-flash", MaxOutputTokens: 8192, ContextWindow: 1048576, Thinking: ThinkingNone, Prices: Prices{0.15, 0.6, 0, 0}},
	{Provider: "vertex", Name: "gemini-2.0-flash-lite", MaxOutputTokens: 8192, ContextWindow: 1048576, Thinking: ThinkingNone, Prices: Prices{0.075, 0.3, 0, 0}},
}

// defaultModels is each provider's model when none is configured.
var defaultModels = map[string]string{
	"anthropic": "claude-sonnet-4-6",
	"openai":    "gpt-5.4",
	"vertex":    "gemini-3.1-pro-preview",
	"copilot":   "gpt-4.1",
}

// catalogueProvider is the catalogue section a provider (or wire) reads:
// the replay provider is the Anthropic client, "responses" is OpenAI's.
// The chat_completions wire reads every section (chatWire): a gateway or a
// compatible server may serve any of these models.
func catalogueProvider(provider string) string {
	switch provider {
	case "replay":
		return "anthropic"
	case "responses":
		return "openai"
	case "gemini":
		return "vertex" // the same models, the same wire
	case "copilot":
		return chatWire // Copilot serves OpenAI's, Anthropic's and Google's models
	}
	return provider
}

// chatWire is the wire of OpenAI-compatible servers (named providers).
const chatWire = "chat_completions"

// DefaultModel is the model a provider sends when none is configured ("" for
// a provider without one).
func DefaultModel(provider string) string {
	if m, ok := defaultModels[provider]; ok {
		return m
	}
	return defaultModels[catalogueProvider(provider)]
}

// ModelNames lists the catalogue's model ids of a provider (family prefixes
// left out), sorted: what :Flemma switch completes. None for the
// chat_completions wire: what a compatible server serves is its own.
func ModelNames(provider string) []string {
	provider = catalogueProvider(provider)
	var out []string
	for _, m := range catalogue {
		if m.Provider == provider && !m.Family {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

// LookupModel returns what is known of a model of a provider: the catalogue
// entry whose name is the longest prefix of the id (also tried without a
// "vendor/" path, as gateways name models), with the user's override of
// the longest matching key of overrides on top. model "" is the provider's
// default model.
func LookupModel(provider, model string, overrides map[string]ModelOverride) ModelInfo {
	replay := provider == "replay"
	subscription := provider == "copilot" // billed by the seat, not the token
	if model == "" {
		model = DefaultModel(provider)
	}
	provider = catalogueProvider(provider)
	info, ok := catalogueEntry(provider, model)
	if !ok {
		if i := strings.LastIndexByte(model, '/'); i >= 0 {
			info, ok = catalogueEntry(provider, model[i+1:])
		}
	}
	if !ok {
		info = unknownModel(provider, model)
	}
	if replay || subscription {
		info.Prices = Prices{} // a recorded script, a subscription: not billed per token
	}
	if key, o, found := overrideFor(model, overrides); found {
		info = o.apply(info, key)
	}
	return info
}

// unknownModel is the safe description of a model flemma does not know: no
// known output limit (max_tokens UnknownMaxOutputTokens unless the user sets
// one), no thinking parameter (any thinking form is rejected by some
// model), temperature sent when configured.
func unknownModel(provider, model string) ModelInfo {
	return ModelInfo{Provider: provider, Name: model, Thinking: ThinkingNone,
		// Gemini models after 2.x sign their calls; the placeholder
		// signature is accepted by the ones that do not.
		ThoughtSignatures: provider == "vertex"}
}

// matchScore says how well an entry (or override) name matches a model id:
// -1 when it does not, else the number of the name's letters the id
// matched (the most specific entry wins). The id is the name, or goes on
// after it with a separator ("claude-sonnet-4-5-20250929",
// "gpt-4o-2024-08-06", "gemini-3.5-pro" for the family "gemini-3"); a name
// ending in a separator is a family prefix ("claude-opus-4-"). A '*' in a
// family's name stands for a version, digits and dots ("gpt-5.*-pro" is
// gpt-5.5-pro and gpt-5.6-pro; "gemini-*-flash" is gemini-3.5-flash).
// "gpt-4p" is not gpt-4.
func matchScore(model, name string) int {
	if name == "" {
		return -1
	}
	head, tail, star := strings.Cut(name, "*")
	if !strings.HasPrefix(model, head) {
		return -1
	}
	rest := model[len(head):]
	if star {
		n := 0
		for n < len(rest) && (rest[n] >= '0' && rest[n] <= '9' || rest[n] == '.') {
			n++
		}
		if n == 0 || !strings.HasPrefix(rest[n:], tail) {
			return -1
		}
		rest = rest[n+len(tail):]
	}
	if rest == "" || isSeparator(name[len(name)-1]) || isSeparator(rest[0]) {
		return len(head) + len(tail)
	}
	return -1
}

func isSeparator(c byte) bool {
	switch c {
	case '-', '.', '_', ':', '@', '/':
		return true
	}
	return false
}

func catalogueEntry(provider, model string) (ModelInfo, bool) {
	best, bestScore := -1, -1
	for i, m := range catalogue {
		if m.Provider != provider && provider != chatWire {
			continue
		}
		if sc := matchScore(model, m.Name); sc > bestScore {
			best, bestScore = i, sc
		}
	}
	if best < 0 {
		return ModelInfo{}, false
	}
	m := catalogue[best]
	m.Known = true
	return m, true
}

// overrideFor finds the override whose key is the longest prefix of model
// (any prefix: the user's key says what it means, ["qwen"] is every qwen).
func overrideFor(model string, overrides map[string]ModelOverride) (string, ModelOverride, bool) {
	key, found := "", false
	for k := range overrides {
		if k != "" && strings.HasPrefix(model, k) && (!found || len(k) > len(key)) {
			key, found = k, true
		}
	}
	return key, overrides[key], found
}

func (o ModelOverride) apply(m ModelInfo, key string) ModelInfo {
	if !m.Known {
		m.Name = key
	}
	m.Known = true
	if o.MaxOutputTokens > 0 {
		m.MaxOutputTokens = o.MaxOutputTokens
	}
	if o.ContextWindow > 0 {
		m.ContextWindow = o.ContextWindow
	}
	if t := strings.ToLower(strings.TrimSpace(o.Thinking)); t != "" && t != m.Thinking && validThinkingForm(t) {
		m.Thinking = t
		if t != ThinkingNone && len(m.Efforts) == 0 {
			m.Efforts = effortsDeclared
		}
		if t == ThinkingBudget && m.MinBudget == 0 && m.Provider == "anthropic" {
			m.MinBudget = anthropicMinBudget
		}
	}
	for _, p := range []struct {
		v   *float64
		dst *float64
	}{{o.InputPrice, &m.Prices.Input}, {o.OutputPrice, &m.Prices.Output}, {o.CacheReadPrice, &m.Prices.CacheRead}, {o.CacheWritePrice, &m.Prices.CacheWrite}} {
		if p.v != nil {
			*p.dst = *p.v
		}
	}
	return m
}

// validThinkingForm reports whether s is a thinking form models.<m>.thinking
// takes (the plugin reports any other; the host ignores it).
func validThinkingForm(s string) bool {
	switch s {
	case ThinkingAdaptive, ThinkingBudget, ThinkingEffort, ThinkingNone:
		return true
	}
	return false
}

// effortOrder ranks the effort words of all providers.
var effortOrder = map[string]int{"none": 0, "minimal": 1, "low": 2, "medium": 3, "high": 4, "xhigh": 5, "max": 6}

// effortFor maps a level (minimal … max) or a provider's own word onto the
// model's effort words: the same word when the model takes it, "max" the
// model's highest, otherwise the nearest word (the higher one on a tie);
// "none" is never chosen for a level. A word outside the known order is
// passed on as it is (the user's override: the provider judges it).
func effortFor(m ModelInfo, level string) string {
	efforts := m.Efforts
	if len(efforts) == 0 {
		efforts = effortsDeclared
	}
	for _, e := range efforts {
		if e == level {
			return e
		}
	}
	want, ok := effortOrder[level]
	if !ok {
		return level
	}
	if level == "max" {
		return efforts[len(efforts)-1]
	}
	best, bestD := "", 1<<30
	for _, e := range efforts {
		r, ok := effortOrder[e]
		if !ok || e == "none" {
			continue
		}
		d := r - want
		if d < 0 {
			d = -d*2 + 1 // below the wanted level: a tie goes to the higher word
		} else {
			d *= 2
		}
		if d < bestD {
			best, bestD = e, d
		}
	}
	if best == "" {
		return efforts[len(efforts)-1]
	}
	return best
}

// takesEffort reports whether the model takes the effort word.
func takesEffort(m ModelInfo, word string) bool {
	for _, e := range m.Efforts {
		if e == word {
			return true
		}
	}
	return false
}

// outputTokens is the max_tokens of a request: the configured value, or
// the provider's default (UnknownMaxOutputTokens when the model's limit is
// not known), never above the model's limit.
func outputTokens(p Params, m ModelInfo, providerDefault int) int {
	n := p.MaxTokens
	if n <= 0 {
		n = providerDefault
		if m.MaxOutputTokens <= 0 {
			n = UnknownMaxOutputTokens
		}
	}
	if m.MaxOutputTokens > 0 && n > m.MaxOutputTokens {
		n = m.MaxOutputTokens
	}
	return n
}

// fitBudget fits a thinking budget (bounded by lo and hi) under max_tokens
// with room left for the answer: when the user left max_tokens to flemma,
// max_tokens grows to hold both (within the model's limit, when it is
// known); otherwise the
// budget shrinks, keeping at least half of max_tokens (up to 4096 tokens)
// for the answer. ok is false when no budget of at least lo fits: thinking
// stays off rather than sending a budget the API rejects, or one that
// leaves nothing of max_tokens to answer with.
func fitBudget(p Params, m ModelInfo, budget, lo, hi, maxTokens int) (int, int, bool) {
	const answer = 4096
	if hi > 0 && budget > hi {
		budget = hi
	}
	if budget < lo {
		budget = lo
	}
	if p.MaxTokens <= 0 && m.MaxOutputTokens > 0 && budget+answer > maxTokens {
		maxTokens = min(budget+answer, m.MaxOutputTokens)
	}
	if room := max(1, min(answer, maxTokens/2)); budget > maxTokens-room {
		budget = maxTokens - room
	}
	if budget < lo || budget < 1 {
		return 0, maxTokens, false
	}
	return budget, maxTokens, true
}

// MaxTokens is the max_tokens a request of the provider (or wire) sends for
// the parameters (before a thinking budget may raise it), as :Flemma status
// shows it; 0 = none is sent (chat_completions without one set: the
// server's default applies).
func MaxTokens(provider string, p Params, m ModelInfo) int {
	provider = catalogueProvider(provider)
	if provider == chatWire {
		if p.MaxTokens <= 0 {
			return 0
		}
		return outputTokens(p, m, 0)
	}
	def := map[string]int{"anthropic": anthropicMaxTokens, "openai": openaiMaxTokens, "vertex": vertexMaxTokens}[provider]
	if def == 0 {
		def = UnknownMaxOutputTokens
	}
	return outputTokens(p, m, def)
}

// SuggestModel decides whether a model name typed for a provider looks
// like a typo (:Flemma switch refuses it, naming the suggestion) or may be
// sent. It returns "" when the name may be sent: a catalogue entry or an
// override matches it; it differs from a known id only in its numbers (a
// later version: "claude-opus-6" after claude-opus-5, "gpt-5.5"); or it
// is not near any known id — a model released after this catalogue must
// stay usable. Near is within edit distance 2 (1 for names under 8
// bytes): "claude-sonet-4-6" and "claude-sonnet-4.6" are typos of
// claude-sonnet-4-6, "gpt-4p" of gpt-4o. On the chat_completions wire every
// name is taken: what a compatible server serves is its own.
// known are more model ids the provider takes (a named provider's
// configured model): taken, and offered as corrections.
func SuggestModel(provider, model string, overrides map[string]ModelOverride, known ...string) string {
	if model == "" || provider == chatWire {
		return "" // a compatible server's names are its own
	}
	// A family takes any later version (claude-opus-4-9), not any name
	// that starts like one: claude-sonet-4-6 is still a typo.
	if m, ok := catalogueEntry(catalogueProvider(provider), model); ok && !m.Family {
		return ""
	}
	if _, _, ok := overrideFor(model, overrides); ok {
		return ""
	}
	names := ModelNames(provider)
	for k := range overrides {
		names = append(names, k)
	}
	for _, k := range known {
		if k == model {
			return ""
		}
		if k != "" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	shape := digitShape(model)
	for _, n := range names {
		if digitShape(n) == shape {
			return ""
		}
	}
	limit := 2
	if len(model) < 8 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, n := range names {
		d := editdist.Distance(model, n, limit+1) // limit+1: too far
		// On a tie, a name as long as the typed one (a wrong letter) wins.
		if d < bestD || d == bestD && best != "" && len(n) == len(model) && len(best) != len(model) {
			best, bestD = n, d
		}
	}
	return best
}

// digitShape replaces every run of digits by '#'.
func digitShape(s string) string {
	var b strings.Builder
	digits := false
	for _, c := range []byte(s) {
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteByte(c)
	}
	return b.String()
}
