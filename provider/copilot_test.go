package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ghStandIn plays github.com, api.github.com and Copilot's API for the
// sign-in and the sends: the device flow answers pending, then polls
// slowing down, then the token; the exchange gives a fresh API token each
// time; revoked makes GitHub refuse the stored token.
type ghStandIn struct {
	mu        sync.Mutex
	polls     []string // the answers given to the polls, in order
	script    []string // what the polls answer: pending, slow_down, slow_down5, expired, denied, ok
	exchanges int
	revoked   bool
	expiresIn time.Duration
	now       func() time.Time
	chatAuth  []string
	chatHdr   []string
}

func (g *ghStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/login/device/code":
		_ = r.ParseForm()
		if r.Form.Get("client_id") != copilotClientID {
			http.Error(w, `{"error":"bad client"}`, 400)
			return
		}
		fmt.Fprint(w, `{"device_code":"dev-123","user_code":"WDJB-MJHT","verification_uri":"https://github.com/login/device","expires_in":900,"interval":5}`)
	case "/login/oauth/access_token":
		_ = r.ParseForm()
		if r.Form.Get("device_code") != "dev-123" || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:device_code" {
			http.Error(w, `{"error":"bad request"}`, 400)
			return
		}
		step := "ok"
		if len(g.polls) < len(g.script) {
			step = g.script[len(g.polls)]
		}
		g.polls = append(g.polls, step)
		switch step {
		case "pending":
			fmt.Fprint(w, `{"error":"authorization_pending","error_description":"The authorization request is still pending."}`)
		case "slow_down":
			fmt.Fprint(w, `{"error":"slow_down","error_description":"Too many requests have been made in the same timeframe.","interval":10}`)
		case "slow_down5":
			fmt.Fprint(w, `{"error":"slow_down"}`)
		case "expired":
			fmt.Fprint(w, `{"error":"expired_token"}`)
		case "denied":
			fmt.Fprint(w, `{"error":"access_denied"}`)
		default:
			fmt.Fprint(w, `{"access_token":"gho_standinOAuthToken0123456789","token_type":"bearer","scope":"read:user"}`)
		}
	case "/user":
		if r.Header.Get("Authorization") != "token gho_standinOAuthToken0123456789" {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"login":"octocat","id":1}`)
	case "/copilot_internal/v2/token":
		if g.revoked || !strings.HasPrefix(r.Header.Get("Authorization"), "token gho_") {
			http.Error(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`, http.StatusUnauthorized)
			return
		}
		g.exchanges++
		exp := g.now().Add(g.expiresIn).Unix()
		fmt.Fprintf(w, `{"token":"tid=standin%d;exp=%d;sku=copilot","expires_at":%d,"refresh_in":1500,"endpoints":{"api":"http://%s"}}`, g.exchanges, exp, exp, r.Host)
	case "/chat/completions":
		g.chatAuth = append(g.chatAuth, r.Header.Get("Authorization"))
		g.chatHdr = append(g.chatHdr, r.Header.Get("Copilot-Integration-Id"))
		if !strings.HasPrefix(r.Header.Get("Authorization"), fmt.Sprintf("Bearer tid=standin%d;", g.exchanges)) {
			http.Error(w, `{"error":{"message":"unauthorized: token expired"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi from Copilot."},"finish_reason":null}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4}}`+"\n\ndata: [DONE]\n\n")
	case "/models":
		fmt.Fprint(w, `{"data":[{"id":"gpt-4.1","model_picker_enabled":true,"capabilities":{"type":"chat"}},{"id":"claude-sonnet-4.5","model_picker_enabled":true,"capabilities":{"type":"chat"}},{"id":"text-embedding-3-small","capabilities":{"type":"embeddings"}},{"id":"gpt-4o-2024-05-13","model_picker_enabled":false,"capabilities":{"type":"chat"}}],"object":"list"}`)
	default:
		http.NotFound(w, r)
	}
}

// copilotEnv is a stand-in and a CopilotConfig pointed at it, with a
// clock the test moves.
func copilotEnv(t *testing.T, script ...string) (*ghStandIn, *httptest.Server, CopilotConfig, *time.Time) {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	g := &ghStandIn{script: script, expiresIn: 30 * time.Minute, now: func() time.Time { return now }}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cc := CopilotConfig{GitHubURL: srv.URL, GitHubAPIURL: srv.URL, TokenFile: filepath.Join(dir, "data", "flemma", "copilot.json"),
		Now: func() time.Time { return now }}
	copilotTokens.Lock()
	copilotTokens.m = map[string]copilotToken{}
	copilotTokens.Unlock()
	return g, srv, cc, &now
}

// The device flow: pending, slow_down (with GitHub's new interval, and
// without one: 5 s more), then the token; the waits are GitHub's.
func TestCopilotSignIn(t *testing.T) {
	g, srv, cc, _ := copilotEnv(t, "pending", "slow_down", "slow_down5", "pending", "ok")
	dc, err := cc.StartSignIn(context.Background(), srv.Client())
	if err != nil || dc.UserCode != "WDJB-MJHT" || dc.Interval != 5 {
		t.Fatalf("StartSignIn = %+v, %v", dc, err)
	}
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	token, user, err := cc.FinishSignIn(context.Background(), srv.Client(), dc, sleep)
	if err != nil || token != "gho_standinOAuthToken0123456789" || user != "octocat" {
		t.Fatalf("FinishSignIn = %q %q %v", token, user, err)
	}
	want := []time.Duration{5 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 15 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v (polls %v)", waits, want, g.polls)
	}
	if err := cc.Save(token, user); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(cc.TokenFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file %v %v: want owner-only", st.Mode(), err)
	}
	if dst, _ := os.Stat(filepath.Dir(cc.TokenFile)); dst.Mode().Perm() != 0o700 {
		t.Errorf("token folder %v: want 0700", dst.Mode())
	}
	if got, src, err := cc.OAuthToken(); got != token || src != cc.TokenFile || err != nil {
		t.Errorf("OAuthToken = %q %q %v", got, src, err)
	}
}

// An expired code or a declined sign-in ends the wait with what to do.
func TestCopilotSignInEnds(t *testing.T) {
	for _, tc := range []struct{ step, want string }{
		{"expired", "the sign-in code expired before it was entered: run :Flemma login copilot again"},
		{"denied", "the sign-in was declined on GitHub"},
	} {
		_, srv, cc, _ := copilotEnv(t, "pending", tc.step)
		dc, _ := cc.StartSignIn(context.Background(), srv.Client())
		_, _, err := cc.FinishSignIn(context.Background(), srv.Client(), dc, func(context.Context, time.Duration) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v", tc.step, err)
		}
	}
	// The user's <C-c> (a new login) ends it too.
	_, srv, cc, _ := copilotEnv(t, "pending", "pending", "pending")
	dc, _ := cc.StartSignIn(context.Background(), srv.Client())
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, _, err := cc.FinishSignIn(ctx, srv.Client(), dc, func(ctx context.Context, _ time.Duration) error {
		if n++; n == 2 {
			cancel()
		}
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Each send uses Copilot's short-lived API token: exchanged once, kept
// while valid, exchanged again a minute before it expires; a revoked
// sign-in says to sign in again; a token refused mid-life is exchanged
// again once.
func TestCopilotTokenLife(t *testing.T) {
	g, srv, cc, now := copilotEnv(t)
	if err := cc.Save("gho_standinOAuthToken0123456789", "octocat"); err != nil {
		t.Fatal(err)
	}
	p, err := New("copilot", Config{Copilot: cc, HTTPClient: srv.Client(), Keys: &Keyring{}})
	if err != nil {
		t.Fatal(err)
	}
	send := func() error {
		_, err := collect(context.Background(), p, modelReq(hello(), "gpt-4.1"))
		return err
	}
	for i := 0; i < 3; i++ {
		if err := send(); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if g.exchanges != 1 {
		t.Errorf("%d exchanges for three sends within the token's life, want 1", g.exchanges)
	}
	*now = now.Add(29*time.Minute + 30*time.Second) // within a minute of expiry
	if err := send(); err != nil {
		t.Fatal(err)
	}
	if g.exchanges != 2 {
		t.Errorf("%d exchanges after nearing expiry, want 2", g.exchanges)
	}
	if last := g.chatAuth[len(g.chatAuth)-1]; !strings.HasPrefix(last, "Bearer tid=standin2;") || g.chatHdr[len(g.chatHdr)-1] != "vscode-chat" {
		t.Errorf("chat auth %q, integration %q", last, g.chatHdr[len(g.chatHdr)-1])
	}
	// Copilot refuses the cached token (revoked early): exchanged again
	// once, the answer arrives.
	g.mu.Lock()
	g.exchanges = 5 // the stand-in now expects tid=standin5
	g.mu.Unlock()
	if err := send(); err != nil {
		t.Fatalf("after an early revocation: %v", err)
	}
	// The GitHub sign-in revoked: the message says to sign in again.
	g.mu.Lock()
	g.revoked = true
	g.mu.Unlock()
	*now = now.Add(time.Hour)
	err = send()
	if err == nil || !strings.Contains(err.Error(), "sign in again with :Flemma login copilot") || strings.Contains(err.Error(), "gho_") {
		t.Errorf("revoked: %v", err)
	}
}

// Without a sign-in of flemma's, an existing Copilot install's is used
// (copilot.vim / copilot.lua: github-copilot/apps.json or hosts.json);
// without any, the send is refused before anything is written.
func TestCopilotExistingInstall(t *testing.T) {
	_, srv, cc, _ := copilotEnv(t)
	cc.GitHubURL = "" // an install's token is for github.com
	cfgDir := t.TempDir()
	cc.ConfigDir = cfgDir
	if _, _, err := cc.OAuthToken(); !errors.Is(err, ErrSignIn) {
		t.Errorf("no sign-in: %v", err)
	}
	if ok, desc := CredentialStatus("copilot", Config{Copilot: cc}); ok || !strings.Contains(desc, ":Flemma login copilot") {
		t.Errorf("CredentialStatus = %v %q", ok, desc)
	}
	os.MkdirAll(filepath.Join(cfgDir, "github-copilot"), 0o700)
	apps, _ := json.Marshal(map[string]any{"github.com:" + copilotClientID: map[string]string{"user": "octocat", "oauth_token": "gho_installToken9876543210"}})
	os.WriteFile(filepath.Join(cfgDir, "github-copilot", "apps.json"), apps, 0o600)
	token, src, err := cc.OAuthToken()
	if err != nil || token != "gho_installToken9876543210" || !strings.HasSuffix(src, "apps.json") {
		t.Errorf("OAuthToken = %q %q %v", token, src, err)
	}
	if ok, desc := CredentialStatus("copilot", Config{Copilot: cc}); !ok || !strings.Contains(desc, "apps.json") {
		t.Errorf("CredentialStatus = %v %q", ok, desc)
	}
	_ = srv
}

// The model list is Copilot's chat models that its picker offers.
func TestCopilotModels(t *testing.T) {
	_, srv, cc, _ := copilotEnv(t)
	if err := cc.Save("gho_standinOAuthToken0123456789", ""); err != nil {
		t.Fatal(err)
	}
	ids, err := ListModels(context.Background(), "copilot", Config{Copilot: cc, HTTPClient: srv.Client(), Keys: &Keyring{}})
	if err != nil || strings.Join(ids, ",") != "claude-sonnet-4.5,gpt-4.1" {
		t.Errorf("ListModels = %v %v", ids, err)
	}
}
