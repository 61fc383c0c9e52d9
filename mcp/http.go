package mcp

import (
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport is the streamable HTTP transport of a url server, sending
// its headers (an Authorization token from setup) with every request.
func httpTransport(cfg ServerConfig) sdk.Transport {
	client := &http.Client{Transport: headerRT{headers: cfg.Headers, base: http.DefaultTransport}}
	return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client, MaxRetries: 2}
}

type headerRT struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}
