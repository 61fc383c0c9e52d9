package provider

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// CredentialCheck says whether a credential of the provider can be had now,
// for :checkhealth: as CredentialStatus, but a credential that only a
// command gives is obtained (through the keyring, so the send after it
// uses the value without running the command again) instead of judged by
// the command being on $PATH. A command on $PATH that gives nothing
// (gcloud not logged in, a locked password store) is then not present.
// The value is never part of the answer. ctx bounds the command.
func CredentialCheck(ctx context.Context, name string, cfg Config) (present bool, desc string) {
	ok, desc := CredentialStatus(name, cfg)
	src := cfg.keySource(name)
	if !ok || name == "replay" || cfg.Wire == "replay" || name == "copilot" || cfg.Wire == "copilot" || len(src.Cmd) == 0 || strings.HasPrefix(desc, "$") {
		return ok, desc
	}
	keys := cfg.Keys
	if keys == nil {
		keys = DefaultKeyring
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = osGetenv
	}
	if _, err := keys.Get(ctx, name, src, getenv); err != nil {
		msg := err.Error()
		var pe *Error
		if errors.As(err, &pe) {
			msg = pe.Message
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			msg = "the command `" + src.Cmd[0] + "` did not answer in time"
		}
		if slices.Equal(src.Cmd, gcloudToken) {
			msg += " (log in with `gcloud auth login`)"
		}
		return false, msg
	}
	return true, "the command `" + src.Cmd[0] + "`, which gave one"
}
