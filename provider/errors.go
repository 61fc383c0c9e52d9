package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Error is a failed request, with a message meant for the user. It never
// contains the credential.
type Error struct {
	Provider string
	Status   int    // HTTP status; 0 for in-stream and transport errors
	Message  string // the provider's own message when it sent one
	// Retryable is true when sending again later may succeed (rate limits,
	// overload, 5xx, timeouts, dropped connections).
	Retryable bool
	// RetryAfter is the server's Retry-After hint; 0 when none.
	RetryAfter time.Duration

	err    error // the underlying cause, for errors.Is (e.g. context.DeadlineExceeded)
	manual bool  // retryable by the user's next press, never automatically (AutoRetry)
}

// Error formats "anthropic: 401 invalid x-api-key".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Status != 0 && !strings.HasPrefix(e.Message, strconv.Itoa(e.Status)) {
		b.WriteString(strconv.Itoa(e.Status))
		if e.Message != "" {
			b.WriteByte(' ')
		}
	}
	b.WriteString(e.Message)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Unwrap returns the cause (a context or network error), if any.
func (e *Error) Unwrap() error { return e.err }

// retryableStatus reports the HTTP statuses worth retrying later.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, 529: // 529: Anthropic "overloaded"
		return true
	}
	return false
}

// maxErrorBody bounds how much of an error body is read.
const maxErrorBody = 64 << 10

// statusError builds the error for a non-2xx response from its body.
func statusError(provider string, resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := bodyMessage(body)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e := &Error{Provider: provider, Status: resp.StatusCode, Message: withHint(msg), Retryable: retryableStatus(resp.StatusCode)}
	e.RetryAfter = retryAfter(resp.Header)
	return e
}

// now is the clock of Retry-After dates (tests replace it).
var now = time.Now

// retryAfter reads the server's wait hint: retry-after-ms (milliseconds,
// OpenAI), else Retry-After (delay seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 {
			return time.Duration(n * float64(time.Millisecond)).Round(time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n > 0 {
			return time.Duration(n * float64(time.Second)).Round(time.Millisecond)
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now()).Round(time.Second); d > 0 {
			return d
		}
	}
	return 0
}

// bodyMessage extracts a readable message from an error body: a JSON error
// object (any of the providers' shapes), an HTML page (its title, else its
// first text), or plain text (whitespace collapsed, cut).
func bodyMessage(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return ""
	}
	if m, ok := jsonErrorMessage([]byte(s)); ok {
		return m
	}
	if looksHTML(s) {
		return htmlMessage(s)
	}
	return cut(collapseSpace(s), 300)
}

// jsonErrorMessage understands, in order: [{"error":{…}}] (Vertex),
// {"error":{"type","message","status","details"}}, {"error":"text"},
// {"message":"text"}, {"errors":[{"message"}]}.
func jsonErrorMessage(b []byte) (string, bool) {
	var arr []json.RawMessage
	if json.Unmarshal(b, &arr) == nil && len(arr) > 0 {
		if m, ok := jsonErrorMessage(arr[0]); ok {
			return m, true
		}
		return "", false
	}
	var obj struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Errors  []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(b, &obj) != nil {
		return "", false
	}
	// A validation error (pydantic, FastAPI: Mistral, vLLM) in "detail",
	// or in "message" as an object (Mistral's 422).
	if m := validationDetail(obj.Detail); m != "" {
		return m, true
	}
	var msgObj struct {
		Detail json.RawMessage `json:"detail"`
	}
	if len(obj.Message) > 0 && obj.Message[0] == '{' && json.Unmarshal(obj.Message, &msgObj) == nil {
		if m := validationDetail(msgObj.Detail); m != "" {
			return m, true
		}
	}
	var message string
	_ = json.Unmarshal(obj.Message, &message)
	if len(obj.Error) > 0 && string(obj.Error) != "null" {
		var s string
		if json.Unmarshal(obj.Error, &s) == nil && s != "" {
			return s, true
		}
		var e struct {
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []struct {
				Type            string `json:"@type"`
				FieldViolations []struct {
					Description string `json:"description"`
				} `json:"fieldViolations"`
			} `json:"details"`
		}
		if json.Unmarshal(obj.Error, &e) == nil {
			msg := e.Message
			if msg == "" {
				msg = e.Type
			}
			if msg == "" && e.Status != "" {
				msg = e.Status
			}
			if msg != "" {
				if e.Status != "" && msg != e.Status {
					msg += " (" + e.Status + ")"
				}
				for _, d := range e.Details {
					if strings.Contains(d.Type, "BadRequest") {
						for _, v := range d.FieldViolations {
							if v.Description != "" {
								msg += "; " + v.Description
							}
						}
					}
				}
				return msg, true
			}
		}
	}
	if message != "" {
		return message, true
	}
	if len(obj.Errors) > 0 && obj.Errors[0].Message != "" {
		return obj.Errors[0].Message, true
	}
	return "", false
}

// validationDetail reads a list of validation errors ({loc, msg}) as
// "Extra inputs are not permitted: \"max_completion_tokens\"; …" ("" when
// raw is not one). The field stays quoted, as the hint looks for it so.
func validationDetail(raw json.RawMessage) string {
	var detail []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &detail) != nil {
		return ""
	}
	var parts []string
	for _, d := range detail {
		var path []string
		for i, l := range d.Loc {
			s := fmt.Sprint(l)
			if i == 0 && s == "body" {
				continue
			}
			path = append(path, s)
		}
		msg := d.Msg
		if msg == "" {
			msg = "invalid"
		}
		if len(path) > 0 {
			msg += ": \"" + strings.Join(path, ".") + "\""
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

var (
	htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>`)
	htmlDrop  = regexp.MustCompile(`(?is)<(script|style|head)[^>]*>.*?</(script|style|head)>`)
)

func looksHTML(s string) bool {
	l := strings.ToLower(s[:min(len(s), 512)])
	return strings.HasPrefix(l, "<!doctype html") || strings.Contains(l, "<html") ||
		strings.HasPrefix(l, "<head") || strings.HasPrefix(l, "<body")
}

// htmlMessage returns an HTML page's title, else its first text.
func htmlMessage(s string) string {
	if m := htmlTitle.FindStringSubmatch(s); m != nil {
		if t := collapseSpace(html.UnescapeString(htmlTag.ReplaceAllString(m[1], " "))); t != "" {
			return cut(t, 200)
		}
	}
	text := htmlTag.ReplaceAllString(htmlDrop.ReplaceAllString(s, " "), " ")
	return cut(collapseSpace(html.UnescapeString(text)), 200)
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		i--
	}
	return s[:i] + "…"
}

// withHint adds advice to messages whose cause the user can act on.
func withHint(msg string) string {
	l := strings.ToLower(msg)
	for _, p := range []string{"prompt is too long", "exceeds the context window", "maximum context length",
		"context length exceeded", "context_length_exceeded", "too many tokens", "token limit exceeded"} {
		if strings.Contains(l, p) {
			return msg + " — the conversation is too long for this model; shorten it or start a new chat"
		}
	}
	return msg
}

// transportError turns an error of the HTTP round trip or of the body read
// into the error Stream returns: ctx.Err() itself on cancel, else an *Error.
func transportError(ctx context.Context, provider string, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return context.Canceled
	}
	var pe *Error
	if errors.As(err, &pe) { // already readable (the replay transport)
		return pe
	}
	var st *stallError
	if errors.As(err, &st) {
		return &Error{Provider: provider, Message: st.Error(), Retryable: true, manual: true, err: st}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Provider: provider, Message: "the request timed out (send.timeouts.total)", Retryable: true, manual: true, err: context.DeadlineExceeded}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Provider: provider, Message: "the request timed out (" + stripURL(err) + ")", Retryable: true, manual: true, err: err}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &Error{Provider: provider, Message: "cannot connect: connection refused by " + hostOf(err), Retryable: true, manual: true, err: err}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return &Error{Provider: provider, Message: "cannot resolve host " + dns.Name, Retryable: true, manual: true, err: err}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) {
		return &Error{Provider: provider, Message: "the connection closed before the response was complete", Retryable: true, err: err}
	}
	return &Error{Provider: provider, Message: "request failed: " + stripURL(err), Retryable: true, manual: true, err: err}
}

// stripURL drops the "Post \"https://…\": " prefix of a *url.Error: the
// endpoint is noise in a notification.
func stripURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func hostOf(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return u.Host
		}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Addr != nil {
		return oe.Addr.String()
	}
	return "the server"
}

// redact removes the credential from an error message, should a server or
// proxy ever echo it back.
func redact(err error, secret string) error {
	if secret == "" || err == nil {
		return err
	}
	var e *Error
	if errors.As(err, &e) && strings.Contains(e.Message, secret) {
		e.Message = strings.ReplaceAll(e.Message, secret, "[redacted]")
	}
	return err
}
