package provider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
)

// handler consumes one SSE event (its "event:" name, possibly empty, and
// its data). It returns an *Error for an in-stream error, and reports
// through done() when the response is complete.
type handler interface {
	handle(event string, data []byte) error
	done() bool
}

// post sends the request and returns the response when its status is 2xx;
// otherwise the error built from the body.
func post(ctx context.Context, client *http.Client, provider, url string, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Provider: provider, Message: "bad endpoint: " + stripURL(err), err: err}
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", "flemma")
	resp, err := client.Do(req)
	if err != nil {
		return nil, transportError(ctx, provider, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, statusError(provider, resp)
	}
	return resp, nil
}

// consume reads the SSE body into h until h is done, the body ends, or an
// error occurs. A body that ends before h is done is an error: either the
// server sent something that is not a stream (an error page, a JSON error
// with a 200 status) or the connection dropped.
func consume(ctx context.Context, provider string, body io.Reader, h handler) error {
	var junk bytes.Buffer
	events := 0
	err := readSSE(body, func(event string, data []byte) error {
		events++
		return h.handle(event, data)
	}, func(line []byte) {
		if junk.Len() < maxErrorBody {
			junk.Write(line)
			junk.WriteByte('\n')
		}
	}, h.done)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			return err
		}
		return transportError(ctx, provider, err)
	}
	if h.done() {
		return nil
	}
	if ctx.Err() != nil {
		return transportError(ctx, provider, ctx.Err())
	}
	if events == 0 && junk.Len() > 0 {
		msg := bodyMessage(junk.Bytes())
		if _, ok := jsonErrorMessage(bytes.TrimSpace(junk.Bytes())); !ok {
			msg = "unexpected response: " + msg
		}
		return &Error{Provider: provider, Message: withHint(msg)}
	}
	return &Error{Provider: provider, Message: "the response ended before it was complete (connection closed)", Retryable: true}
}

// readSSE parses a text/event-stream body. Each event's "data:" lines are
// joined with "\n" and handed to on at the blank line that ends the event
// (or at the end of the body); "data: [DONE]" is skipped. Lines that are no
// SSE field go to other. Reading stops early once stop() is true.
func readSSE(r io.Reader, on func(event string, data []byte) error, other func(line []byte), stop func() bool) error {
	br := bufio.NewReaderSize(r, 32<<10)
	var (
		event   string
		data    []byte
		hasData bool
		long    []byte // a line longer than the buffer, assembled
	)
	dispatch := func() error {
		defer func() { event, data, hasData = "", data[:0], false }()
		if !hasData || string(data) == "[DONE]" {
			return nil
		}
		return on(event, data)
	}
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			long = append(long, chunk...)
			line, long = long, nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) > 0 || err == nil {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			switch {
			case len(line) == 0:
				if derr := dispatch(); derr != nil {
					return derr
				}
			case line[0] == ':':
				// comment
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				switch string(field) {
				case "data":
					if hasData {
						data = append(data, '\n')
					}
					data = append(data, value...)
					hasData = true
				case "event":
					event = string(value)
				case "id", "retry":
				default:
					other(line)
				}
			}
		}
		if stop() {
			return nil
		}
		if err == io.EOF {
			return dispatch()
		}
	}
}

// unreadable hands on a piece of the stream a parser could not decode
// (EventUnreadable): the response goes on, and the piece is reported,
// never dropped in silence. Blank data carries nothing and is not one.
func unreadable(emit func(Event), data []byte, err error) error {
	if len(bytes.TrimSpace(data)) > 0 {
		emit(Event{Kind: EventUnreadable, Text: string(data), Detail: err.Error()})
	}
	return nil
}

// emitText hands on a piece of answer (EventText) or reasoning
// (EventThinking) text; an empty piece, which servers send at the start of
// a block or beside other fields, is nothing.
func emitText(emit func(Event), kind, text string) {
	if text != "" {
		emit(Event{Kind: kind, Text: text})
	}
}

// turnEnd is the stop reason of a whole answer: tool_use when it made tool
// calls (some servers say "stop" all the same), else end_turn.
func turnEnd(toolUsed bool) string {
	if toolUsed {
		return "tool_use"
	}
	return "end_turn"
}
