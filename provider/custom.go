package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/flemma-dev/flemma/internal/secrets"
)

// configured is a client as setup configured it: the provider's name (a
// named provider's, e.g. "ollama", over its wire's), and the credential's
// life: a 401 drops a command's cached credential (or an environment token
// a command can replace, Vertex's) and sends once more; a 401 or 403 that
// remains names the credential's source and how to fix it.
type configured struct {
	inner Provider
	name  string
	cfg   Config
}

func (p *configured) Name() string { return p.name }

func (p *configured) Stream(ctx context.Context, req Request, emit func(Event)) error {
	keys := p.cfg.Keys
	if keys == nil {
		keys = DefaultKeyring
	}
	src := p.cfg.keySource(p.inner.Name())
	for attempt := 0; ; attempt++ {
		emitted := false
		err := p.inner.Stream(ctx, req, func(e Event) { emitted = true; emit(e) })
		var pe *Error
		if !errors.As(err, &pe) {
			return err
		}
		pe.Provider = p.name
		// A server may echo any credential (the key, a header's token) in
		// its error; the message reaches the buffer, the log, a
		// notification.
		pe.Message = secrets.Default.Redact(pe.Message)
		if pe.Status == http.StatusBadRequest || pe.Status == http.StatusUnprocessableEntity {
			// A field the model refuses: say which setting sent it.
			if h := rejectedParamHint(p.name, pe.Message, p.cfg.ExtraBody); h != "" {
				pe.Message += " — " + h
			}
			return err
		}
		if pe.Status != http.StatusUnauthorized && pe.Status != http.StatusForbidden {
			return err
		}
		p.cfg.cred.mu.Lock()
		used := p.cfg.cred.used
		p.cfg.cred.mu.Unlock()
		if pe.Status == http.StatusUnauthorized && attempt == 0 && !emitted && used.Value != "" && keys.Refused(src, used, p.cfg.Getenv) {
			continue
		}
		pe.Message += authHint(p.name, src, used)
		return redact(err, used.Value)
	}
}

// authHint says, after a 401 or 403, which credential was sent and how to
// change it. It never contains the value.
func authHint(name string, src KeySource, used Credential) string {
	switch {
	case used.Value == "" && src.None():
		return fmt.Sprintf(" — no key was sent: set providers.%s.api_key_env or api_key_cmd", name)
	case used.Source == "":
		return ""
	case used.fromCmd:
		return fmt.Sprintf(" — the key came from %s (providers.%s.api_key_cmd), run again and refused again: check what it prints", used.Source, name)
	}
	return fmt.Sprintf(" — the key came from %s: check its value, or choose another source with providers.%s.api_key_env or api_key_cmd (Neovim's environment is fixed when it starts)", used.Source, name)
}

// protectedHeaders carry the credential or the protocol: headers may not
// replace them.
var protectedHeaders = []string{"accept", "api-key", "authorization", "content-length", "content-type", "copilot-integration-id", "host", "x-api-key", "x-goog-api-key"}

// checkCustom refuses headers and extra body fields that would replace what
// flemma sets itself.
func checkCustom(name, wire string, cfg Config) error {
	var keys []string
	for k := range cfg.ExtraBody {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, p := range protectedKeys(wire) { // the body keys flemma builds itself (Wire.Protected)
			if k == p {
				return fmt.Errorf("providers.%s.extra_body.%s: flemma sets %q itself (use model, parameters or the buffer for it); remove it from extra_body", name, k, k)
			}
		}
	}
	keys = keys[:0]
	for k := range cfg.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := strings.ToLower(strings.TrimSpace(k))
		for _, p := range protectedHeaders {
			if l == p || (cfg.KeyHeader != "" && l == strings.ToLower(cfg.KeyHeader)) {
				return fmt.Errorf("providers.%s.headers[%q]: this header carries the credential or the protocol and is set by flemma (use api_key_env, api_key_cmd, api_key_header)", name, k)
			}
		}
	}
	return nil
}

// customClient returns a client whose requests carry headers and whose
// JSON body has extra merged into it.
func customClient(base *http.Client, headers map[string]string, extra map[string]any) *http.Client {
	c := *base
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &customTransport{base: rt, headers: headers, extra: extra}
	return &c
}

type customTransport struct {
	base    http.RoundTripper
	headers map[string]string
	extra   map[string]any
}

func (t *customTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	if len(t.extra) > 0 && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		merged, err := mergeBody(body, t.extra)
		if err != nil {
			return nil, &Error{Message: "extra_body: " + err.Error()}
		}
		r.Body = io.NopCloser(bytes.NewReader(merged))
		r.ContentLength = int64(len(merged))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(merged)), nil }
	}
	return t.base.RoundTrip(r)
}

// mergeBody merges extra into a JSON object, keeping the object's key
// order (the big trailing parts stay last, for prompt caching): a key the
// body has is replaced in place (two objects are merged key by key), new
// keys come first, sorted.
func mergeBody(body []byte, extra map[string]any) ([]byte, error) {
	type kv struct {
		key string
		val json.RawMessage
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("the request body is not a JSON object")
	}
	var fields []kv
	have := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		have[key] = len(fields)
		fields = append(fields, kv{key, v})
	}
	var added []kv
	var names []string
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if i, ok := have[k]; ok {
			var cur any
			d := json.NewDecoder(bytes.NewReader(fields[i].val))
			d.UseNumber()
			if err := d.Decode(&cur); err != nil {
				return nil, err
			}
			b, err := marshal(mergeValue(cur, extra[k]))
			if err != nil {
				return nil, err
			}
			fields[i].val = b
			continue
		}
		b, err := marshal(extra[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		added = append(added, kv{k, b})
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range append(added, fields...) {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := marshal(f.key)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(f.val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// mergeValue merges over into base: objects key by key, anything else is
// replaced.
func mergeValue(base, over any) any {
	bm, ok1 := base.(map[string]any)
	om, ok2 := over.(map[string]any)
	if !ok1 || !ok2 {
		return over
	}
	out := make(map[string]any, len(bm)+len(om))
	for k, v := range bm {
		out[k] = v
	}
	for k, v := range om {
		out[k] = mergeValue(bm[k], v)
	}
	return out
}
