package cycle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
)

// signInTimeout bounds the start of a sign-in (GitHub's device code).
const signInTimeout = 20 * time.Second

// copilotConfig is where the copilot provider signs in and keeps its
// token: setup's providers.copilot (github_url, github_api_url), flemma's
// data folder, and the configuration folder of an existing Copilot
// install.
func copilotConfig(data string, ep options.Endpoint) provider.CopilotConfig {
	cc := provider.CopilotConfig{GitHubURL: ep.GitHubURL, GitHubAPIURL: ep.GitHubAPIURL}
	if data != "" {
		cc.TokenFile = filepath.Join(data, "copilot.json")
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		cc.ConfigDir = x
	} else if home, err := os.UserHomeDir(); err == nil {
		cc.ConfigDir = filepath.Join(home, ".config")
	}
	return cc
}

// onLogin is :Flemma login <provider>: GitHub Copilot's device sign-in. The
// reply carries the code and the page to enter it on (the plugin opens
// it); the host then waits for GitHub in the background, stores the
// token owner-only and says when it is done. A new login cancels one that
// is waiting.
func (h *Engine) onLogin(name string) (Reply, error) {
	name = strings.TrimSpace(name)
	if name != "copilot" {
		return reply("none", "login: only copilot signs in (:Flemma login copilot); the other providers read a key from api_key_env or api_key_cmd", levelWarn), nil
	}
	h.mu.Lock()
	e := options.Resolve(h.cfg, options.Runtime{Provider: name}, options.Buffer{})
	cc := copilotConfig(e.DataDir, e.Endpoint)
	if h.loginCancel != nil {
		h.loginCancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.loginCancel = cancel
	sleep := h.sleep
	h.mu.Unlock()
	client := provider.HTTPClient()
	sctx, scancel := context.WithTimeout(ctx, signInTimeout)
	dc, err := cc.StartSignIn(sctx, client)
	scancel()
	if err != nil {
		cancel()
		return reply("login", "GitHub Copilot: "+err.Error(), levelError), nil
	}
	go func() {
		defer cancel()
		token, user, err := cc.FinishSignIn(ctx, client, dc, sleep)
		if err != nil {
			if ctx.Err() == nil {
				h.notify("GitHub Copilot: "+err.Error(), levelError)
			}
			return
		}
		if err := cc.Save(token, user); err != nil {
			h.notify("GitHub Copilot: signed in, but the sign-in could not be stored: "+err.Error(), levelError)
			return
		}
		as := ""
		if user != "" {
			as = " as " + user
		}
		h.logf("copilot: signed in%s; stored in %s", as, cc.TokenFile)
		h.notify(fmt.Sprintf("Signed in to GitHub Copilot%s. :Flemma switch copilot uses it.", as), levelInfo)
	}()
	mins := (dc.ExpiresIn + 59) / 60
	r := reply("login", fmt.Sprintf("GitHub Copilot: enter the code %s at %s (flemma waits for it, %d minutes at most).", dc.UserCode, dc.VerificationURI, mins), levelInfo)
	r.URL, r.Code = dc.VerificationURI, dc.UserCode
	return r, nil
}
