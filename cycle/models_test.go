package cycle

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/provider"
)

// capturing is a provider that records the requests it is sent and answers
// each with "ok".
type capturing struct {
	name string
	mu   sync.Mutex
	reqs []provider.Request
}

func (c *capturing) Name() string { return c.name }

func (c *capturing) Stream(_ context.Context, req provider.Request, emit func(provider.Event)) error {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.mu.Unlock()
	emit(provider.Event{Kind: provider.EventText, Text: "ok"})
	emit(provider.Event{Kind: provider.EventDone, StopReason: "end_turn"})
	return nil
}

func (c *capturing) last(t *testing.T) provider.Request {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) == 0 {
		t.Fatal("nothing was sent")
	}
	return c.reqs[len(c.reqs)-1]
}

// modelEnv is an engine whose providers all record their requests.
func modelEnv(t *testing.T, setup map[string]any) (*testEnv, *capturing) {
	t.Helper()
	c := &capturing{}
	env := newEnvWith(t, with(noSandbox(), setup), Deps{Providers: func(name string, _ provider.Config) (provider.Provider, error) {
		c.name = name
		return c, nil
	}})
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "VERTEX_AI_ACCESS_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		t.Setenv(v, "test-key")
	}
	return env, c
}

// sendOnce sends a fresh buffer and waits for the answer.
func sendOnce(t *testing.T, env *testEnv, bufnr int) {
	t.Helper()
	env.ed.load(bufnr, filepath.Join(env.dir, "m.chat"), env.dir, "@You:\nhi\n")
	if res, err := env.h.onSend(bufnr); err != nil || res.Phase != "send" || res.Message != "" {
		t.Fatalf("send: %+v %v", res, err)
	}
	env.ed.waitText(t, bufnr, "ok")
	env.ed.waitIdle(t, env.h, bufnr)
}

func countNotes(env *testEnv, sub string) int {
	n := 0
	for _, m := range env.ed.notifications() {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// A model flemma does not know is sent with safe defaults, and the user is
// told once per model; a max_tokens above a model's limit is cut, once
// said; setup's models = {…} is what the request is built for.
func TestModelNotes(t *testing.T) {
	env, c := modelEnv(t, map[string]any{"model": "my-finetune"})
	sendOnce(t, env, 1)
	sendOnce(t, env, 2)
	const unknown = "flemma does not know the model my-finetune (anthropic): it sends max_tokens 8,192 and no thinking parameter"
	if n := countNotes(env, unknown); n != 1 {
		t.Errorf("%d unknown-model notes, want 1: %q", n, env.ed.notifications())
	}
	if info := c.last(t).ModelInfo; info == nil || info.Known || info.Name != "my-finetune" {
		t.Errorf("request built for %+v", info)
	}
	// A Claude model flemma does not list is taken for the newest family
	// (it was sent the user's temperature, which every Claude since Opus
	// 4.7 refuses), and the user is told once.
	env, c = modelEnv(t, map[string]any{"model": "claude-next-preview", "parameters": map[string]any{"temperature": 0.3}})
	sendOnce(t, env, 1)
	sendOnce(t, env, 2)
	if n := countNotes(env, "flemma does not list claude-next-preview (anthropic) and takes it for the family claude-: thinking adaptive, no temperature"); n != 1 {
		t.Errorf("%d family notes, want 1: %q", n, env.ed.notifications())
	}
	if info := c.last(t).ModelInfo; info == nil || !info.Family || !info.NoSampling {
		t.Errorf("request built for %+v", info)
	}
	env.as("switch to another unknown model").reply(env.h.onSwitch("openai my-local-model max_tokens=20000"))
	sendOnce(t, env, 3)
	if n := countNotes(env, "does not know the model my-local-model (openai): it sends max_tokens 20,000"); n != 1 {
		t.Errorf("no note for the second model: %q", env.ed.notifications())
	}

	env, c = modelEnv(t, map[string]any{"provider": "openai", "model": "gpt-4o", "parameters": map[string]any{"max_tokens": 64000}})
	sendOnce(t, env, 1)
	sendOnce(t, env, 2)
	if n := countNotes(env, "max_tokens 64,000 is above the output limit of gpt-4o (16,384): 16,384 is sent."); n != 1 {
		t.Errorf("%d limit notes, want 1: %q", n, env.ed.notifications())
	}
	if info := c.last(t).ModelInfo; info == nil || info.MaxOutputTokens != 16384 {
		t.Errorf("request built for %+v", info)
	}

	env, c = modelEnv(t, map[string]any{"model": "claude-next-preview", "models": map[string]any{
		"claude-next": map[string]any{"max_output_tokens": 50000, "thinking": "adaptive", "input_price": 2.5},
	}})
	sendOnce(t, env, 1)
	if n := countNotes(env, "does not know"); n != 0 {
		t.Errorf("a model setup describes is noted: %q", env.ed.notifications())
	}
	info := c.last(t).ModelInfo
	if info == nil || !info.Known || info.MaxOutputTokens != 50000 || info.Thinking != provider.ThinkingAdaptive || info.Prices.Input != 2.5 {
		t.Errorf("request built for %+v", info)
	}
}

// :Flemma switch refuses a misspelt model with the one it probably meant,
// and takes names it does not know that are not near a known one.
func TestSwitchModelNames(t *testing.T) {
	env, _ := modelEnv(t, map[string]any{"models": map[string]any{"my-claude": map[string]any{"thinking": "budget"}}})
	cases := []struct {
		args, want string
		ok         bool
	}{
		{"anthropic claude-sonet-4-6", `unknown model "claude-sonet-4-6" for anthropic — did you mean claude-sonnet-4-6?`, false},
		{"anthropic claude-sonnet-4.6", "did you mean claude-sonnet-4-6?", false},
		{"openai gpt-4p", "did you mean gpt-4o?", false},
		{"vertex gemini-2.5-flsh", "did you mean gemini-2.5-flash?", false},
		{"anthropic my-claud", "did you mean my-claude?", false},
		{"anthropic claude-sonnet-4-5-20250929", "Provider anthropic, model claude-sonnet-4-5-20250929.", true}, // a dated snapshot
		{"anthropic claude-opus-6", "Provider anthropic, model claude-opus-6.", true},                           // a later version
		{"anthropic claude-opus-4-9", "Provider anthropic, model claude-opus-4-9.", true},                       // a family member
		{"openai gpt-5.5", "Provider openai, model gpt-5.5.", true},
		{"openai llama3.1:8b", "Provider openai, model llama3.1:8b.", true}, // far from every known name
		{"anthropic my-claude-2", "Provider anthropic, model my-claude-2.", true},
		{"vertex", "Provider vertex, model gemini-3.1-pro-preview (default).", true},
	}
	for _, tc := range cases {
		res, err := env.h.onSwitch(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Message, tc.want) || (res.Phase == "switch") != tc.ok {
			t.Errorf("switch %s = %s %q, want %v %q", tc.args, res.Phase, res.Message, tc.ok, tc.want)
		}
	}
	// A refused switch changes nothing.
	env.h.onSwitch("openai gpt-4o")
	env.h.onSwitch("anthropic claude-sonet-4-6")
	if e := env.h.session(1).effective(nil); e.Provider != "openai" || e.Model != "gpt-4o" {
		t.Errorf("after a refused switch: %s %s", e.Provider, e.Model)
	}
}

// :Flemma status names the model a send uses (the provider's default when
// none is set) and what flemma knows of it.
func TestStatusNamesTheModel(t *testing.T) {
	env, _ := modelEnv(t, nil)
	env.ed.load(1, filepath.Join(env.dir, "s.chat"), env.dir, "@You:\nhi\n")
	st, _ := env.h.onStatus(1)
	for _, want := range []string{"provider: anthropic  model: claude-sonnet-4-6 (default)", "max_tokens=32000 (default)",
		"model info: context 1,000,000 · output limit 64,000 · thinking adaptive (low, medium, high, max) · $3 in · $15 out · $0.3 cache read · $3.75 cache write per million tokens"} {
		if !strings.Contains(st.Text, want) {
			t.Errorf("status lacks %q:\n%s", want, st.Text)
		}
	}
	env.h.onSwitch("openai gpt-4o max_tokens=64000")
	st, _ = env.h.onStatus(1)
	if !strings.Contains(st.Text, "model: gpt-4o ") || !strings.Contains(st.Text, "max_tokens=64000 (16384 is sent: the model's limit)") {
		t.Errorf("status:\n%s", st.Text)
	}
	env.h.onSwitch("openai my-local-model")
	st, _ = env.h.onStatus(1)
	if !strings.Contains(st.Text, "model info: not in flemma's catalogue: max_tokens 64,000, no thinking parameter") {
		t.Errorf("status:\n%s", st.Text)
	}
}

// The completion lists: providers, and per provider the catalogue's ids and
// the models setup describes.
func TestModelsReply(t *testing.T) {
	env, _ := modelEnv(t, map[string]any{"models": map[string]any{"my-model": map[string]any{"max_output_tokens": 1000}}})
	r, err := env.h.onModels()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Providers, ",") != strings.Join(provider.Names(), ",") {
		t.Errorf("providers %v", r.Providers)
	}
	a := strings.Join(r.Models["anthropic"], ",")
	if !strings.Contains(a, "claude-sonnet-4-6") || !strings.Contains(a, "my-model") || strings.Contains(a, "claude-opus-4-,") || strings.Contains(a, "gpt-4o") {
		t.Errorf("anthropic models %s", a)
	}
	if !strings.Contains(strings.Join(r.Models["openai"], ","), "gpt-4o") || len(r.Models["replay"]) == 0 {
		t.Errorf("models %v", r.Models)
	}
}

// A named provider: its wire's catalogue section, its configured model in
// the completion; on a Chat Completions server only what the user set is
// sent, so there is no note on a model flemma does not know, and no name
// is refused.
func TestNamedProviderModels(t *testing.T) {
	env, c := modelEnv(t, map[string]any{"provider": "ollama", "providers": map[string]any{
		"ollama": map[string]any{"wire": "chat_completions", "base_url": "http://127.0.0.1:9/v1", "model": "qwen3"},
		"proxy":  map[string]any{"wire": "anthropic", "base_url": "http://127.0.0.1:9", "model": "claude-opus-4-8"},
	}})
	r, _ := env.h.onModels()
	if got := strings.Join(r.Models["ollama"], ","); got != "qwen3" {
		t.Errorf("ollama completes %s", got)
	}
	if got := strings.Join(r.Models["proxy"], ","); !strings.Contains(got, "claude-opus-4-8") || !strings.Contains(got, "claude-sonnet-4-6") {
		t.Errorf("proxy completes %s", got)
	}
	env.ed.load(1, filepath.Join(env.dir, "n.chat"), env.dir, "@You:\nhi\n")
	st, _ := env.h.onStatus(1)
	for _, want := range []string{"provider: ollama  model: qwen3", "max_tokens=(not sent: the server's default)", "the server's limits and defaults apply"} {
		if !strings.Contains(st.Text, want) {
			t.Errorf("status lacks %q:\n%s", want, st.Text)
		}
	}
	sendOnce(t, env, 2)
	if n := countNotes(env, "does not know"); n != 0 {
		t.Errorf("a note on a Chat Completions model: %q", env.ed.notifications())
	}
	if res, _ := env.h.onSwitch("ollama qwen"); res.Phase != "switch" {
		t.Errorf("a compatible server's name was refused: %q", res.Message)
	}
	if res, _ := env.h.onSwitch("proxy claude-sonet-4-6"); res.Phase == "switch" || !strings.Contains(res.Message, "did you mean claude-sonnet-4-6?") {
		t.Errorf("proxy on the anthropic wire: %q", res.Message)
	}
	env.h.onSwitch("proxy")
	st, _ = env.h.onStatus(1)
	if !strings.Contains(st.Text, "provider: proxy  model: claude-opus-4-8") || !strings.Contains(st.Text, "thinking adaptive") {
		t.Errorf("status:\n%s", st.Text)
	}
	sendOnce(t, env, 3)
	if info := c.last(t).ModelInfo; info == nil || info.Name != "claude-opus-4-8" || info.Provider != "anthropic" {
		t.Errorf("proxy request built for %+v", info)
	}
}

// Discover asks a provider's server for its models once per host (and
// again after a setup), in the background: Models gives them, the
// FlemmaModels event brings them, a failure is logged and marks the
// provider as not listed.
func TestDiscoverModels(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	deps := Deps{ListModels: func(_ context.Context, name string, cfg provider.Config) ([]string, error) {
		mu.Lock()
		calls[name]++
		mu.Unlock()
		if name == "vertex" {
			return nil, provider.ErrNoListing
		}
		if cfg.BaseURL != "http://localhost:11434/v1" {
			return nil, fmt.Errorf("base %q", cfg.BaseURL)
		}
		return []string{"llama3.1:8b", "qwen3:8b"}, nil
	}}
	env := newEnvWith(t, map[string]any{"providers": map[string]any{"ollama": map[string]any{"base_url": "http://localhost:11434/v1", "model": "qwen3"}}}, deps)
	for i := 0; i < 3; i++ {
		if r, err := env.h.onDiscover("ollama"); err != nil || r.Message != "" {
			t.Fatalf("Discover: %+v %v", r, err)
		}
	}
	_, _ = env.h.onDiscover("vertex")
	_, _ = env.h.onDiscover("nope") // not a provider: nothing asked
	var m ModelsReply
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, _ = env.h.onModels()
		if _, done := m.Listed["vertex"]; m.Listed["ollama"] && done || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := strings.Join(m.Models["ollama"], ","); got != "llama3.1:8b,qwen3,qwen3:8b" || !m.Listed["ollama"] {
		t.Errorf("ollama models %q listed %v", got, m.Listed)
	}
	if listed, done := m.Listed["vertex"]; !done || listed {
		t.Errorf("vertex listed %v %v, want done and false", listed, done)
	}
	mu.Lock()
	if calls["ollama"] != 1 || calls["nope"] != 0 {
		t.Errorf("calls %v, want ollama asked once", calls)
	}
	mu.Unlock()
	// The event follows the list (it is sent after the catalogue is
	// updated): wait for both, then count them.
	count := func() int {
		n := 0
		for _, e := range env.ed.evs {
			if strings.HasPrefix(e, "FlemmaModels ") {
				n++
			}
		}
		return n
	}
	if env.ed.bufs[1] == nil {
		env.ed.load(1, "", env.dir, "") // a buffer for wait to show if it times out
	}
	env.ed.wait(t, 1, "a FlemmaModels event per provider asked", func(*fakeBuf) bool { return count() >= 2 })
	env.ed.mu.Lock()
	n := count()
	env.ed.mu.Unlock()
	if n != 2 {
		t.Errorf("%d FlemmaModels events, want one per provider asked", n)
	}
}
