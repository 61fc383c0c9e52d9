package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/internal/secrets"
)

// GitHub Copilot: a Chat Completions server reached with a GitHub sign-in
// instead of an API key. The user signs in once with GitHub's device flow
// (:Flemma login copilot): the GitHub OAuth token is stored, readable by
// its owner only, in flemma's data folder (or read from an existing
// Copilot install: copilot.vim, copilot.lua, VS Code). Each send exchanges
// it for Copilot's short-lived API token (about 30 minutes), kept in
// memory and exchanged again a minute before it expires. The API token
// names the endpoint to send to. No token is ever logged: every one joins
// the redaction set (internal/secrets) when it is read.

// copilotClientID is the OAuth app of GitHub's Copilot editor plugins: the
// device flow for Copilot is granted to it (copilot.vim, copilot.lua and
// the other editors' integrations sign in with it).
const copilotClientID = "Iv1.b507a08c87ecfe98"

const (
	copilotGitHub    = "https://github.com"
	copilotGitHubAPI = "https://api.github.com"
	copilotAPI       = "https://api.githubcopilot.com"
	// refreshBefore: an API token is exchanged again this long before it
	// expires, so a long stream never starts with one about to lapse.
	refreshBefore = 60 * time.Second
)

// ErrSignIn: no GitHub sign-in is stored, or GitHub refused the stored
// one (revoked, expired, no Copilot subscription). Its message says to
// sign in again.
var ErrSignIn = errors.New("sign in to GitHub Copilot with :Flemma login copilot")

// CopilotConfig is where the Copilot provider signs in and keeps its
// token. Empty fields take GitHub's own URLs.
type CopilotConfig struct {
	// GitHubURL is GitHub (device flow): https://github.com, or a GitHub
	// Enterprise host. GitHubAPIURL its API (the token exchange).
	GitHubURL, GitHubAPIURL string
	// TokenFile is where the sign-in is stored (owner-only): flemma's
	// data folder, copilot.json. "" = none (only an existing install).
	TokenFile string
	// ConfigDir is where Copilot installs keep their sign-in
	// ($XDG_CONFIG_HOME or ~/.config: github-copilot/apps.json,
	// hosts.json); "" = not read.
	ConfigDir string
	// Now is the clock of expiry; nil = time.Now.
	Now func() time.Time
}

func (c CopilotConfig) github() string {
	return strings.TrimRight(cmpOr(c.GitHubURL, copilotGitHub), "/")
}
func (c CopilotConfig) githubAPI() string {
	return strings.TrimRight(cmpOr(c.GitHubAPIURL, copilotGitHubAPI), "/")
}

func (c CopilotConfig) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// copilotSignIn is the stored sign-in.
type copilotSignIn struct {
	OAuthToken string `json:"oauth_token"`
	User       string `json:"user,omitempty"`
	GitHubURL  string `json:"github_url,omitempty"`
}

// OAuthToken is the stored GitHub token and where it came from: flemma's
// file first, else an existing Copilot install's (for github.com only).
// The token joins the redaction set.
func (c CopilotConfig) OAuthToken() (token, source string, err error) {
	if c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err == nil {
			var s copilotSignIn
			if json.Unmarshal(b, &s) == nil && strings.TrimSpace(s.OAuthToken) != "" {
				secrets.Default.Add(s.OAuthToken)
				return strings.TrimSpace(s.OAuthToken), c.TokenFile, nil
			}
			return "", "", fmt.Errorf("%s holds no sign-in: %w", c.TokenFile, ErrSignIn)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("cannot read %s: %v", c.TokenFile, errors.Unwrap(err))
		}
	}
	if c.ConfigDir != "" && c.github() == copilotGitHub {
		for _, name := range []string{"apps.json", "hosts.json"} {
			p := filepath.Join(c.ConfigDir, "github-copilot", name)
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			var entries map[string]copilotSignIn
			if json.Unmarshal(b, &entries) != nil {
				continue
			}
			for host, e := range entries {
				if (host == "github.com" || strings.HasPrefix(host, "github.com:")) && strings.TrimSpace(e.OAuthToken) != "" {
					secrets.Default.Add(e.OAuthToken)
					return strings.TrimSpace(e.OAuthToken), p, nil
				}
			}
		}
	}
	return "", "", ErrSignIn
}

// Save stores a sign-in: the folder made private (0700), the file written
// owner-only (0600) beside and renamed over the old one.
func (c CopilotConfig) Save(token, user string) error {
	if c.TokenFile == "" {
		return errors.New("no place to store the sign-in (flemma's data folder is not known)")
	}
	dir := filepath.Dir(c.TokenFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	_ = os.Chmod(dir, 0o700)
	b, _ := json.Marshal(copilotSignIn{OAuthToken: token, User: user, GitHubURL: c.GitHubURL})
	f, err := os.CreateTemp(dir, ".copilot-*.json")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	secrets.Default.Add(token)
	return os.Rename(tmp, c.TokenFile)
}

// DeviceCode is GitHub's answer to the start of a device sign-in.
type DeviceCode struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int    `json:"expires_in"`
	Interval        int    `json:"interval"`
}

// StartSignIn asks GitHub for a device code: the user enters UserCode at
// VerificationURI.
func (c CopilotConfig) StartSignIn(ctx context.Context, client *http.Client) (DeviceCode, error) {
	var dc DeviceCode
	form := url.Values{"client_id": {copilotClientID}, "scope": {"read:user"}}
	status, body, err := copilotForm(ctx, client, c.github()+"/login/device/code", form)
	if err != nil {
		return dc, err
	}
	if status != http.StatusOK || json.Unmarshal(body, &dc) != nil || dc.DeviceCode == "" || dc.UserCode == "" {
		return dc, &Error{Provider: "copilot", Status: status, Message: "GitHub did not start the sign-in: " + bodyMessage(body)}
	}
	if dc.VerificationURI == "" {
		dc.VerificationURI = c.github() + "/login/device"
	}
	return dc, nil
}

// FinishSignIn waits, polling GitHub as it asks (interval, slow_down),
// until the user entered the code, and returns the GitHub token and the
// user's login. It ends with an error when the code expires, the user
// declines, or ctx ends.
func (c CopilotConfig) FinishSignIn(ctx context.Context, client *http.Client, dc DeviceCode, sleep func(context.Context, time.Duration) error) (token, user string, err error) {
	if sleep == nil {
		sleep = sleepCtx
	}
	// GitHub's interval, at least a second: a server that asks for none
	// must not be polled in a tight loop for the code's whole life.
	interval := max(time.Duration(dc.Interval)*time.Second, time.Second)
	deadline := c.now().Add(time.Duration(max(dc.ExpiresIn, 1)) * time.Second)
	form := url.Values{"client_id": {copilotClientID}, "device_code": {dc.DeviceCode}, "grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}
	for {
		if err := sleep(ctx, interval); err != nil {
			return "", "", err
		}
		status, body, err := copilotForm(ctx, client, c.github()+"/login/oauth/access_token", form)
		if err != nil {
			return "", "", err
		}
		var r struct {
			AccessToken string `json:"access_token"`
			Error       string `json:"error"`
			Interval    int    `json:"interval"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &r) != nil {
			return "", "", &Error{Provider: "copilot", Status: status, Message: "GitHub's sign-in failed: " + bodyMessage(body)}
		}
		switch r.Error {
		case "":
			if r.AccessToken == "" {
				return "", "", &Error{Provider: "copilot", Message: "GitHub's sign-in answered without a token"}
			}
			secrets.Default.Add(r.AccessToken)
			return r.AccessToken, c.user(ctx, client, r.AccessToken), nil
		case "authorization_pending":
		case "slow_down":
			// GitHub asks for a longer wait: the new interval, else 5 s more.
			if r.Interval > 0 {
				interval = time.Duration(r.Interval) * time.Second
			} else {
				interval += 5 * time.Second
			}
		case "expired_token":
			return "", "", &Error{Provider: "copilot", Message: "the sign-in code expired before it was entered: run :Flemma login copilot again"}
		case "access_denied":
			return "", "", &Error{Provider: "copilot", Message: "the sign-in was declined on GitHub"}
		default:
			return "", "", &Error{Provider: "copilot", Message: "GitHub's sign-in failed: " + r.Error}
		}
		if c.now().After(deadline) {
			return "", "", &Error{Provider: "copilot", Message: "the sign-in code expired before it was entered: run :Flemma login copilot again"}
		}
	}
}

// user is the login of the token's owner ("" when GitHub does not say).
func (c CopilotConfig) user(ctx context.Context, client *http.Client, token string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.githubAPI()+"/user", nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Authorization", "token "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var u struct {
		Login string `json:"login"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&u) != nil {
		return ""
	}
	return u.Login
}

func copilotForm(ctx context.Context, client *http.Client, u string, form url.Values) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, &Error{Provider: "copilot", Message: "bad endpoint: " + stripURL(err)}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "flemma")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, transportError(ctx, "copilot", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return resp.StatusCode, body, nil
}

// copilotToken is Copilot's API token and the endpoint it is for.
type copilotToken struct {
	value   string
	api     string
	expires time.Time
}

// copilotTokens caches API tokens per GitHub token, host-wide: every send
// builds a new client.
var copilotTokens = struct {
	sync.Mutex
	m map[string]copilotToken
}{m: map[string]copilotToken{}}

// APIToken is a valid Copilot API token for the stored sign-in, from the
// cache or exchanged anew (when none is cached, or it expires within a
// minute); forget drops the cached one first (after a 401).
func (c CopilotConfig) APIToken(ctx context.Context, client *http.Client, forget bool) (token, api string, err error) {
	oauth, _, err := c.OAuthToken()
	if err != nil {
		return "", "", err
	}
	key := c.githubAPI() + "\x00" + oauth
	copilotTokens.Lock()
	if forget {
		delete(copilotTokens.m, key)
	}
	t, ok := copilotTokens.m[key]
	copilotTokens.Unlock()
	if ok && c.now().Add(refreshBefore).Before(t.expires) {
		return t.value, t.api, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.githubAPI()+"/copilot_internal/v2/token", nil)
	if err != nil {
		return "", "", &Error{Provider: "copilot", Message: "bad endpoint: " + stripURL(err)}
	}
	req.Header.Set("Authorization", "token "+oauth)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "flemma")
	resp, err := client.Do(req)
	if err != nil {
		return "", "", transportError(ctx, "copilot", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound:
		// A revoked or expired GitHub token, or no Copilot for this user.
		return "", "", &Error{Provider: "copilot", Status: resp.StatusCode,
			Message: "GitHub refused the stored sign-in (" + secrets.Default.Redact(bodyMessage(body)) + "): sign in again with :Flemma login copilot", err: ErrSignIn}
	case resp.StatusCode != http.StatusOK:
		e := &Error{Provider: "copilot", Status: resp.StatusCode, Message: "Copilot's token exchange failed: " + secrets.Default.Redact(bodyMessage(body)), Retryable: retryableStatus(resp.StatusCode)}
		e.RetryAfter = retryAfter(resp.Header)
		return "", "", e
	}
	var r struct {
		Token     string `json:"token"`
		ExpiresAt int64  `json:"expires_at"`
		RefreshIn int64  `json:"refresh_in"`
		Endpoints struct {
			API string `json:"api"`
		} `json:"endpoints"`
	}
	if json.Unmarshal(body, &r) != nil || r.Token == "" {
		return "", "", &Error{Provider: "copilot", Message: "Copilot's token exchange answered without a token"}
	}
	secrets.Default.Add(r.Token)
	t = copilotToken{value: r.Token, api: strings.TrimRight(cmpOr(r.Endpoints.API, copilotAPI), "/"), expires: time.Unix(r.ExpiresAt, 0)}
	if r.ExpiresAt == 0 {
		t.expires = c.now().Add(time.Duration(max(r.RefreshIn, 60)) * time.Second)
	}
	copilotTokens.Lock()
	copilotTokens.m[key] = t
	copilotTokens.Unlock()
	return t.value, t.api, nil
}

// copilotHeaders are what Copilot's API asks of an editor integration.
func copilotHeaders(h http.Header) {
	h.Set("Copilot-Integration-Id", "vscode-chat")
	h.Set("Editor-Version", "Neovim/flemma")
	h.Set("Editor-Plugin-Version", "flemma")
	h.Set("Openai-Intent", "conversation-panel")
}

// copilot is the provider: the Chat Completions client with the API token
// as its key and the token's endpoint as its base.
func init() {
	registerWire(Wire{Name: "copilot", Builtin: true, List: listCopilot, ListSignsIn: true,
		Protected: []string{"messages", "model", "stream", "stream_options", "tool_choice", "tools"},
		New: func(name string, cfg Config) Provider {
			return &copilot{chat: &chat{cfg: cfg, name: name}, cc: cfg.Copilot}
		}})
}

type copilot struct {
	chat *chat
	cc   CopilotConfig
}

func (p *copilot) Name() string { return p.chat.name }

func (p *copilot) Stream(ctx context.Context, req Request, emit func(Event)) error {
	for attempt := 0; ; attempt++ {
		token, api, err := p.cc.APIToken(ctx, p.chat.cfg.HTTPClient, attempt > 0)
		if err != nil {
			return err
		}
		base := p.chat.cfg.BaseURL
		if base == "" {
			base = api
		}
		h := http.Header{}
		copilotHeaders(h)
		emitted := false
		err = p.chat.streamWith(ctx, req, func(e Event) { emitted = true; emit(e) }, token, base, h)
		var pe *Error
		// An API token refused before anything arrived: exchange again
		// once (it may have been revoked early).
		if attempt == 0 && !emitted && errors.As(err, &pe) && pe.Status == http.StatusUnauthorized {
			continue
		}
		return err
	}
}

// copilotModels lists the chat models the sign-in may use.
func copilotModels(ctx context.Context, client *http.Client, cc CopilotConfig, base string) ([]string, error) {
	token, api, err := cc.APIToken(ctx, client, false)
	if err != nil {
		return nil, err
	}
	if base == "" {
		base = api
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
	if err != nil {
		return nil, &Error{Provider: "copilot", Message: "bad endpoint: " + stripURL(err)}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	copilotHeaders(req.Header)
	resp, err := client.Do(req)
	if err != nil {
		return nil, transportError(ctx, "copilot", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError("copilot", resp)
	}
	var list struct {
		Data []struct {
			ID           string `json:"id"`
			PickerOn     *bool  `json:"model_picker_enabled"`
			Capabilities struct {
				Type string `json:"type"`
			} `json:"capabilities"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, listMaxBody)).Decode(&list); err != nil {
		return nil, &Error{Provider: "copilot", Message: "the model list is not JSON"}
	}
	var ids []string
	for _, m := range list.Data {
		if m.ID == "" || (m.Capabilities.Type != "" && m.Capabilities.Type != "chat") || (m.PickerOn != nil && !*m.PickerOn) {
			continue
		}
		ids = append(ids, m.ID)
	}
	return ids, nil
}
