package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Model discovery: what a server says it serves, for :Flemma switch
// completion and its picker. A list is asked for once per host (the engine
// caches it), in the background: a keystroke never waits for it.

// ErrNoListing: the provider has no model list flemma can ask for (Vertex:
// per project and region; the replay provider).
var ErrNoListing = errors.New("this provider does not list its models")

// ErrNoCredential: the provider needs a key and flemma holds none yet (no
// environment variable, no command output in the cache): it is not asked.
var ErrNoCredential = errors.New("no credential held yet: its models are listed once one is")

const (
	listTimeout = 10 * time.Second
	listMaxBody = 4 << 20
	listMaxIDs  = 2000
)

// ListModels asks the server of a provider for the ids of its models,
// sorted. name is the configured name, cfg as for New (its Wire, BaseURL,
// Key, KeyHeader, Headers). The credential is one flemma already holds — an
// environment variable or a command's cached output — never a command run
// for it (a listing must not prompt for a passphrase); without one, a
// server that needs a key is not asked (ErrNoCredential).
//
// The chat_completions wire asks <base>/models (OpenAI's list, which
// OpenRouter, vLLM, LM Studio, llama.cpp, LiteLLM, DeepSeek, Mistral and
// Ollama answer), then, when that fails, Ollama's own /api/tags beside the
// /v1 base. The built-ins: OpenAI's /v1/models, Anthropic's /v1/models, the
// Gemini API's /v1beta/models (those that can generate content).
func ListModels(ctx context.Context, name string, cfg Config) ([]string, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = osGetenv
	}
	client := cfg.HTTPClient
	if client == nil {
		client = defaultClient
	}
	if len(cfg.Headers) > 0 {
		client = customClient(client, cfg.Headers, nil)
	}
	wire := cfg.Wire
	if wire == "" {
		wire = name
	}
	if cfg.Key == nil && name != wire {
		cfg.Key = &KeySource{}
	}
	keys := cfg.Keys
	if keys == nil {
		keys = DefaultKeyring
	}
	w, ok := wireOf(wire)
	if !ok || w.List == nil {
		return nil, ErrNoListing
	}
	key := ""
	if !w.ListSignsIn {
		src := cfg.keySource(name)
		key = keys.Held(src, cfg.Getenv)
		if key == "" && !src.None() {
			// Asking without the key the server needs would only be refused
			// (and a request nobody meant to send).
			return nil, ErrNoCredential
		}
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	ids, err := w.List(ctx, client, name, cfg, key)
	if err != nil {
		return nil, redact(err, key)
	}
	sort.Strings(ids)
	return ids, nil
}

// listChat asks a Chat Completions server: <base>/models, then Ollama's
// /api/tags beside the /v1 base.
func listChat(ctx context.Context, client *http.Client, name string, cfg Config, key string) ([]string, error) {
	h := http.Header{}
	cfg.setKey(h, key, "Authorization", "Bearer ")
	base, q, _ := strings.Cut(cmpOr(cfg.BaseURL, chatBase), "?")
	base = strings.TrimRight(base, "/")
	u := base + "/models"
	if q != "" {
		u += "?" + q
	}
	ids, err := getIDs(ctx, client, name, u, h)
	if err != nil {
		// Ollama's own list, beside its OpenAI-compatible /v1.
		if tags, terr := getIDs(ctx, client, name, strings.TrimSuffix(base, "/v1")+"/api/tags", h); terr == nil {
			return tags, nil
		}
	}
	return ids, err
}

func listOpenAI(ctx context.Context, client *http.Client, name string, cfg Config, key string) ([]string, error) {
	h := http.Header{}
	cfg.setKey(h, key, "Authorization", "Bearer ")
	return getIDs(ctx, client, name, baseURL(cfg.BaseURL, openaiBase, "/v1/models"), h)
}

func listAnthropic(ctx context.Context, client *http.Client, name string, cfg Config, key string) ([]string, error) {
	h := http.Header{}
	cfg.setKey(h, key, "x-api-key", "")
	h.Set("anthropic-version", anthropicVersion)
	return getIDs(ctx, client, name, baseURL(cfg.BaseURL, anthropicBase, "/v1/models?limit=1000"), h)
}

func listGemini(ctx context.Context, client *http.Client, name string, cfg Config, key string) ([]string, error) {
	h := http.Header{}
	cfg.setKey(h, key, "x-goog-api-key", "")
	return getIDs(ctx, client, name, baseURL(cfg.BaseURL, geminiBase, "/v1beta/models?pageSize=1000"), h)
}

func listCopilot(ctx context.Context, client *http.Client, _ string, cfg Config, _ string) ([]string, error) {
	return copilotModels(ctx, client, cfg.Copilot, cfg.BaseURL)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// getIDs reads a model list in any of the shapes servers send:
// {"data":[{"id"}]} (OpenAI and compatible servers, Anthropic),
// {"models":[{"name"|"model"|"id"}]} (Ollama's /api/tags, the Gemini API's
// "models/<id>", kept when it can generate content).
func getIDs(ctx context.Context, client *http.Client, name, u string, h http.Header) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, &Error{Provider: name, Message: "bad endpoint: " + stripURL(err)}
	}
	req.Header = h.Clone()
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "flemma")
	resp, err := client.Do(req)
	if err != nil {
		return nil, transportError(ctx, name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(name, resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, listMaxBody+1))
	if err != nil {
		return nil, transportError(ctx, name, err)
	}
	if len(body) > listMaxBody {
		return nil, &Error{Provider: name, Message: fmt.Sprintf("the model list is larger than %d MB", listMaxBody>>20)}
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Models []struct {
			Name    string   `json:"name"`
			Model   string   `json:"model"`
			ID      string   `json:"id"`
			Methods []string `json:"supportedGenerationMethods"`
		} `json:"models"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, &Error{Provider: name, Message: "the model list is not JSON: " + bodyMessage(body)}
	}
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		id = strings.TrimSpace(id)
		if id != "" && !seen[id] && len(ids) < listMaxIDs && len(id) <= 200 && !strings.ContainsAny(id, " \t\r\n") {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, d := range list.Data {
		add(d.ID)
	}
	for _, m := range list.Models {
		if len(m.Methods) > 0 && !contains(m.Methods, "generateContent") && !contains(m.Methods, "streamGenerateContent") {
			continue // an embedding model
		}
		id := m.ID
		if id == "" {
			id = m.Name
		}
		if id == "" {
			id = m.Model
		}
		add(strings.TrimPrefix(id, "models/"))
	}
	if len(list.Data) == 0 && len(list.Models) == 0 {
		return nil, &Error{Provider: name, Message: "the answer holds no model list"}
	}
	return ids, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
