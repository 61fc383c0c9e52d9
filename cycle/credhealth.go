package cycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
)

// credentialCheckTime bounds the credential commands :checkhealth runs,
// all together (they run at once): below host.timeout's default (10 s),
// so the report comes back.
const credentialCheckTime = 6 * time.Second

// credentialHealth is :checkhealth's line per configured provider: where
// its credential comes from and whether one can be had — a credential
// command is run (provider.CredentialCheck), so gcloud on $PATH but not
// logged in is not reported present. Never the value.
func (h *Engine) credentialHealth(cfg options.Config, rt options.Runtime) []HealthLine {
	active := options.Resolve(cfg, rt, options.Buffer{}).Provider
	ctx, cancel := context.WithTimeout(context.Background(), credentialCheckTime)
	defer cancel()
	var names []string
	for _, name := range cfg.ProviderNames() {
		if name != "replay" {
			names = append(names, name)
		}
	}
	lines := make([]HealthLine, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		e := options.Resolve(cfg, options.Runtime{Provider: name}, options.Buffer{})
		_, _, pc := h.request(e)
		what := name
		if pc.Wire != "" {
			what = fmt.Sprintf("%s (%s", name, pc.Wire)
			if pc.BaseURL != "" {
				what += " at " + pc.BaseURL
			}
			what += ")"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, src := provider.CredentialCheck(ctx, name, pc)
			switch {
			case ok:
				lines[i] = HealthLine{"ok", fmt.Sprintf("%s credentials present (%s)", what, src)}
			case name == active:
				// The provider a press sends to: nothing can be sent.
				lines[i] = HealthLine{"warn", fmt.Sprintf("%s credentials not set (%s): the active provider cannot send", what, src)}
			default:
				lines[i] = HealthLine{"info", fmt.Sprintf("%s credentials not set (%s)", what, src)}
			}
		}()
	}
	wg.Wait()
	return lines
}
