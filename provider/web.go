package provider

import (
	"strings"

	"github.com/flemma-dev/flemma/buffer"
)

// Provider-side web search fees, USD per search (billed apart from the
// tokens the results add to the input). Sources in docs/design.md.
const (
	anthropicSearchFee = 0.01  // $10 per 1,000 searches; web_fetch has no fee
	openaiSearchFee    = 0.01  // web_search: $10 per 1,000 calls
	gemini3SearchFee   = 0.014 // Gemini 3: $14 per 1,000 grounded prompts (a free monthly allowance is not modelled)
	gemini2SearchFee   = 0.035 // Gemini 2.x: $35 per 1,000 grounded prompts
)

const maxSourcesShown = 10

// webSources keeps the http(s) sources, each once, at most limit.
func webSources(in []Source, limit int) []Source {
	seen := map[string]bool{}
	var out []Source
	for _, s := range in {
		u := strings.TrimSpace(s.URL)
		l := strings.ToLower(u)
		if !(strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")) || seen[u] || strings.ContainsAny(u, " \t\r\n<>") {
			continue
		}
		seen[u] = true
		out = append(out, Source{URL: u, Title: s.Title})
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// sourceLinks renders sources as one line of Markdown links. Titles and
// URLs come from the web: made one line, brackets and parentheses that
// would end the link taken out, cut.
func sourceLinks(sources []Source) string {
	var parts []string
	for _, s := range sources {
		title := collapseSpace(buffer.Sanitize(s.Title))
		title = strings.NewReplacer("[", "(", "]", ")", "`", "'").Replace(title)
		if title == "" {
			title = s.URL
		}
		title = cut(title, 80)
		u := strings.NewReplacer("(", "%28", ")", "%29").Replace(s.URL)
		parts = append(parts, "["+title+"]("+u+")")
	}
	return strings.Join(parts, " · ")
}

// webLine renders a provider-side search or fetch as a line of the answer:
// what was looked for, then what was found.
func webLine(e Event) string {
	var b strings.Builder
	if q := collapseSpace(buffer.Sanitize(e.Text)); q != "" {
		what := "Web search"
		if e.Detail == "web_fetch" {
			what = "Web fetch"
		}
		b.WriteString("*" + what + ":* " + cut(q, 200))
	}
	if src := webSources(e.Sources, maxSourcesShown); len(src) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("*Sources:* " + sourceLinks(src))
	}
	return b.String()
}
