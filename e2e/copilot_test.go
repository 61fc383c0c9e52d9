package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// copilotStandIn plays github.com, api.github.com and Copilot's API: the
// device flow answers "pending" once, then the token; the exchange gives
// an API token naming this server as the endpoint.
type copilotStandIn struct {
	mu       sync.Mutex
	polls    int
	revoked  bool
	chatAuth []string
	chatIntg []string
}

func (g *copilotStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/login/device/code":
		fmt.Fprintf(w, `{"device_code":"dev-9","user_code":"QRST-7788","verification_uri":"http://%s/login/device","expires_in":900,"interval":0}`, r.Host)
	case "/login/oauth/access_token":
		if g.polls++; g.polls == 1 {
			fmt.Fprint(w, `{"error":"authorization_pending"}`)
			return
		}
		fmt.Fprint(w, `{"access_token":"gho_e2eStandInOAuth55555","token_type":"bearer"}`)
	case "/user":
		fmt.Fprint(w, `{"login":"octocat"}`)
	case "/copilot_internal/v2/token":
		if g.revoked {
			http.Error(w, `{"message":"Bad credentials gho_e2eStandInOAuth55555"}`, http.StatusUnauthorized)
			return
		}
		exp := time.Now().Add(30 * time.Minute).Unix()
		fmt.Fprintf(w, `{"token":"tid=e2eApiToken77;exp=%d","expires_at":%d,"endpoints":{"api":"http://%s"}}`, exp, exp, r.Host)
	case "/chat/completions":
		g.chatAuth = append(g.chatAuth, r.Header.Get("Authorization"))
		g.chatIntg = append(g.chatIntg, r.Header.Get("Copilot-Integration-Id"))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello from Copilot."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4}}`+"\n\ndata: [DONE]\n\n")
	case "/models":
		fmt.Fprint(w, `{"data":[{"id":"gpt-4.1","model_picker_enabled":true,"capabilities":{"type":"chat"}},{"id":"claude-sonnet-4.5","model_picker_enabled":true,"capabilities":{"type":"chat"}}]}`)
	default:
		http.NotFound(w, r)
	}
}

// :Flemma login copilot: the code is shown and its page opened, flemma
// waits for GitHub, stores the token owner-only under stdpath("data"),
// and a send goes to Copilot's API with the short-lived token; completion
// offers Copilot's models; no token reaches the log. When GitHub revokes
// the sign-in, the message says to sign in again.
func TestCopilotLoginAndSend(t *testing.T) {
	g := &copilotStandIn{}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	setup := `{ providers = { copilot = { github_url = "` + srv.URL + `", github_api_url = "` + srv.URL + `", model = "gpt-4.1" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		g.mu.Lock()
		g.polls, g.revoked, g.chatAuth, g.chatIntg = 0, false, nil, nil
		g.mu.Unlock()
		if err := s.Lua(nil, `_G.opened = nil; vim.ui.open = function(url) _G.opened = url end`); err != nil {
			t.Fatal(err)
		}
		if err := s.Nv.Command("Flemma login copilot"); err != nil {
			t.Fatal(err)
		}
		waitMessage(t, s, "GitHub Copilot: enter the code QRST-7788 at "+srv.URL+"/login/device")
		waitMessage(t, s, "Signed in to GitHub Copilot as octocat. :Flemma switch copilot uses it.")
		var opened string
		if err := s.Lua(&opened, `return _G.opened or ""`); err != nil || opened != srv.URL+"/login/device" {
			t.Errorf("opened %q (%v)", opened, err)
		}
		file := filepath.Join(s.Dir, "data", "nvim", "flemma", "copilot.json")
		st, err := os.Stat(file)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("token file: %v %v", st, err)
		}
		if b, _ := os.ReadFile(file); !strings.Contains(string(b), "gho_e2eStandInOAuth55555") {
			t.Errorf("token file holds %s", b)
		}
		if err := s.Nv.Command("Flemma switch copilot"); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "copilot.chat", question)
		press(t, s, "<C-]>")
		waitText(t, s, question+"\n@Assistant:\nHello from Copilot.\n\n@You:\n")
		g.mu.Lock()
		auth, intg := append([]string(nil), g.chatAuth...), append([]string(nil), g.chatIntg...)
		g.mu.Unlock()
		if len(auth) != 1 || auth[0] != "Bearer tid=e2eApiToken77;exp="+strings.TrimPrefix(auth[0], "Bearer tid=e2eApiToken77;exp=") || intg[0] != "vscode-chat" {
			t.Errorf("chat requests: auth %q integration %q", auth, intg)
		}
		var got string
		if _, err := s.Wait(10*time.Second, func(string) bool {
			got = completions(t, s, "Flemma switch copilot ")
			return strings.Contains(got, "claude-sonnet-4.5")
		}); err != nil {
			t.Errorf("Copilot's models were never offered: %q", got)
		}
		// Revoked on GitHub: the next send says to sign in again.
		g.mu.Lock()
		g.revoked = true
		g.mu.Unlock()
		if err := s.Nv.Command("Flemma host:restart"); err != nil { // a fresh host: no API token cached
			t.Fatal(err)
		}
		waitMessage(t, s, "host restarted")
		appendLines(t, s, "Again?")
		press(t, s, "<C-]>")
		waitMessage(t, s, "sign in again with :Flemma login copilot")
		for where, text := range map[string]string{"messages": s.Messages(), "host.log": s.HostLog()} {
			for _, tok := range []string{"gho_e2eStandInOAuth55555", "e2eApiToken77"} {
				if strings.Contains(text, tok) {
					t.Errorf("a token is in %s:\n%s", where, text)
				}
			}
		}
	})
}

// A sign-in of an existing Copilot install (copilot.vim, copilot.lua) is
// used without :Flemma login.
func TestCopilotExistingInstallSignIn(t *testing.T) {
	g := &copilotStandIn{}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	// The install's token is for github.com: the exchange goes to the
	// stand-in through github_api_url only.
	setup := `{ provider = "copilot", providers = { copilot = { github_api_url = "` + srv.URL + `", model = "gpt-4.1" } } }`
	eachNvimEnv(t, setup, nil, func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "config", "github-copilot")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hosts.json"), []byte(`{"github.com":{"user":"octocat","oauth_token":"gho_e2eStandInOAuth55555"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "install.chat", question)
		press(t, s, "<C-]>")
		waitText(t, s, question+"\n@Assistant:\nHello from Copilot.\n\n@You:\n")
	})
}
