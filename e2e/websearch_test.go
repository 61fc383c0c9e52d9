package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// webSearchSSE is an Anthropic answer that searched the web (the shapes of
// Anthropic's web search tool documentation): the search, its results, a
// cited answer, and the search counted in the usage.
const webSearchSSE = `event: message_start
data: {"type":"message_start","message":{"id":"msg_w","type":"message","role":"assistant","model":"test-model","content":[],"usage":{"input_tokens":100,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"neovim 0.12 release\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[{"type":"web_search_result","title":"Neovim 0.12 news","url":"https://neovim.io/news/0.12","encrypted_content":"Eq"}]}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"It is out."}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","cited_text":"out","url":"https://neovim.io/news/0.12","title":"Neovim 0.12 news","encrypted_index":"Eo"}}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":900,"output_tokens":20,"server_tool_use":{"web_search_requests":1}}}

event: message_stop
data: {"type":"message_stop"}

`

// tools.web_search on: Anthropic's web search runs on its side; the search,
// its sources and the cited ones are written into the answer, and the
// search is counted in the usage. A buffer's frontmatter turns it off.
func TestProviderWebSearch(t *testing.T) {
	f := &stepServer{steps: []step{{status: http.StatusOK, body: webSearchSSE}, {status: http.StatusOK, body: sse("Fine.")}}}
	eachNvimSteps(t, f, `, tools = { web_search = { enabled = true, max_uses = 2 } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "web.chat", question)
		press(t, s, "<C-]>")
		waitText(t, s, question+"\n@Assistant:\n*Web search:* neovim 0.12 release\n\n*Sources:* [Neovim 0.12 news](https://neovim.io/news/0.12)\n\nIt is out.\n\n*Cited:* [Neovim 0.12 news](https://neovim.io/news/0.12)\n\n@You:\n")
		waitMessage(t, s, "anthropic: 900 input · 20 output tokens · 1 web searches")
		b, _ := json.Marshal(f.requests()[0]["tools"])
		if !strings.Contains(string(b), `{"max_uses":2,"name":"web_search","type":"web_search_20250305"}`) {
			t.Errorf("tools sent: %s", b)
		}
		// The frontmatter turns it off for this buffer.
		mustOpen(t, s, "noweb.chat", "```lua\nflemma.opt.tools.web_search = false\n```\n"+question)
		press(t, s, "<C-]>")
		if _, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "Fine.") }); err != nil {
			t.Fatalf("no answer: %s", s.Messages())
		}
		b, _ = json.Marshal(f.requests()[1]["tools"])
		if strings.Contains(string(b), "web_search") {
			t.Errorf("web search sent although the buffer turned it off: %s", b)
		}
	})
}
