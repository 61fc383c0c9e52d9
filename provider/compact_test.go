package provider

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

// compacted is a conversation with tool calls, compacted: the summary is
// sent instead of the turns above it.
const compacted = "@System:\nYou are terse.\n\n@You:\nRun the tests.\n\n@Assistant:\n**Tool Use:** `bash` (`toolu_01`)\n\n```json\n{\"command\": \"make test\"}\n```\n\n" +
	"@You:\n**Tool Result:** `toolu_01`\n\n```\nok  SECRET-ABOVE\n```\n\n@Assistant:\nAll tests pass.\n\n" +
	"@You:\n<!-- flemma:summary: by test -->\nThe user ran the tests; they pass.\n\\@You:\n<!-- /flemma:summary -->\n\nWhat next?\n"

func TestFromDocumentSummary(t *testing.T) {
	sys, msgs, err := FromDocument(parseOK(t, compacted), "anthropic")
	if err != nil {
		t.Fatal(err)
	}
	want := `system "You are terse."
user text "` + strings.ReplaceAll(SummaryPreface, `"`, `\"`) + `\n\nThe user ran the tests; they pass.\n@You:"
user text "What next?"
`
	if got := describe(sys, msgs); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Without the summary block, the whole conversation is sent.
	full := strings.Replace(compacted, "<!-- flemma:summary: by test -->\nThe user ran the tests; they pass.\n\\@You:\n<!-- /flemma:summary -->\n", "", 1)
	_, msgs, err = FromDocument(parseOK(t, full), "anthropic")
	if err != nil || len(msgs) != 5 {
		t.Errorf("without the summary: %d messages, %v\n%s", len(msgs), err, describe("", msgs))
	}
}

// The send refusal counts only the blocks after the summary in force: a
// placeholder above it is not pending work; one below still stops the send.
func TestFromDocumentSummaryRefusal(t *testing.T) {
	above := "@You:\nGo\n\n@Assistant:\n**Tool Use:** `bash` (`toolu_A`)\n\n```json\n{\"command\": \"rm -rf /\"}\n```\n\n" +
		"@You:\n**Tool Result:** `toolu_A`\n\n```flemma:tool status=approved\n```\n\n" +
		"<!-- flemma:summary -->\nNothing happened.\n<!-- /flemma:summary -->\n\nGo on.\n"
	_, msgs, err := FromDocument(buffer.Parse(strings.Split(above, "\n")), "anthropic")
	if err != nil {
		t.Fatalf("a placeholder above the summary refused the send: %v", err)
	}
	if got := describe("", msgs); strings.Contains(got, "toolu_A") || strings.Contains(got, "rm -rf") {
		t.Errorf("the turns above the summary were sent:\n%s", got)
	}
	below := above + "\n@Assistant:\n**Tool Use:** `bash` (`toolu_B`)\n\n```json\n{\"command\": \"ls\"}\n```\n"
	_, _, err = FromDocument(buffer.Parse(strings.Split(below, "\n")), "anthropic")
	if err == nil || !strings.Contains(err.Error(), "toolu_B") || strings.Contains(err.Error(), "toolu_A") {
		t.Errorf("refusal = %v, want toolu_B only", err)
	}
}

// Attack: the model's summary names files and templates. They are its
// words, sent as text: no file part, no expression, nothing to read.
func TestSummaryReadsNoFiles(t *testing.T) {
	chat := "@You:\nRead @./above.txt\n\n@Assistant:\nDone.\n\n@You:\n<!-- flemma:summary -->\nSee @./secret.txt and @~/.ssh/id_rsa and {{ io.open('/etc/passwd') }}.\n<!-- /flemma:summary -->\nAnd @./mine.txt please.\n"
	_, msgs, err := FromDocument(parseOK(t, chat), "anthropic")
	if err != nil {
		t.Fatal(err)
	}
	files := Files(msgs)
	if len(files) != 1 || files[0].Path != "./mine.txt" {
		t.Errorf("files %v: only the user's own reference below the summary is attached (not the one above it)", files)
	}
	if hasKind(msgs, PartExpr) {
		t.Error("a {{ }} of the summary became an expression")
	}
	if !strings.Contains(msgs[0].Parts[0].Text, "@./secret.txt") {
		t.Errorf("the summary's text: %q", msgs[0].Parts[0].Text)
	}
}

func hasKind(msgs []Message, kind string) bool {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == kind {
				return true
			}
		}
	}
	return false
}

// Every wire's request carries the summary and not the turns above it.
func TestSummaryRequestBodies(t *testing.T) {
	doc := parseOK(t, compacted)
	for _, target := range []string{"anthropic", "openai", "vertex", "chat"} {
		var body string
		if target == "chat" {
			sys, msgs, err := FromDocument(doc, "srv")
			if err != nil {
				t.Fatal(err)
			}
			b, err := chatBody(Request{System: sys, Messages: msgs, Tools: testTools(), Params: Params{Model: "m"}}, "srv", dialectOf("", ""))
			if err != nil {
				t.Fatal(err)
			}
			body = string(b)
		} else {
			body = bodyFor(t, doc, target, Params{})
		}
		for _, gone := range []string{"SECRET-ABOVE", "toolu_01", "make test", "All tests pass", "Run the tests"} {
			if strings.Contains(body, gone) {
				t.Errorf("%s: the request carries %q from above the summary", target, gone)
			}
		}
		for _, kept := range []string{"You are terse.", "The user ran the tests; they pass.", "What next?", "The earlier part of this conversation"} {
			if !strings.Contains(body, kept) {
				t.Errorf("%s: the request lacks %q", target, kept)
			}
		}
	}
}

func TestForSummary(t *testing.T) {
	_, msgs, err := FromDocument(parseOK(t, "@You:\nHi\n\n@Assistant:\nHello.\n"), "anthropic")
	if err != nil {
		t.Fatal(err)
	}
	got := ForSummary(msgs)
	if len(got) != 3 || got[2].Role != RoleUser || got[2].Parts[0].Text != SummarizeInstruction || len(msgs) != 2 {
		t.Errorf("after an answer: %s", describe("", got))
	}
	user := []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "x"}}}}
	got = ForSummary(user)
	if len(got) != 1 || len(got[0].Parts) != 2 || len(user[0].Parts) != 1 {
		t.Errorf("after a user message: %s (input %d parts)", describe("", got), len(user[0].Parts))
	}
}

func TestEstimateTokens(t *testing.T) {
	text := strings.Repeat("abcd", 1000)
	msgs := []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: text}}}}
	if got := EstimateTokens("", msgs, nil); got < 1000 || got > 1010 {
		t.Errorf("4,000 bytes of text = %d tokens, want about 1,000", got)
	}
	img := []Message{{Role: RoleUser, Parts: []Part{{Kind: PartFile, File: &File{MIME: "image/png", Data: make([]byte, 1<<20)}}}}}
	if got := EstimateTokens("", img, nil); got < tokensPerImage || got > tokensPerImage+10 {
		t.Errorf("an image = %d tokens", got)
	}
	pdf := []byte("%PDF /Type /Pages /Type /Page x /Type/Page y")
	if got := pdfPages(pdf); got != 2 {
		t.Errorf("pdfPages = %d, want 2", got)
	}
	// The summary's effect: the compacted conversation costs less than
	// the whole one.
	doc := parseOK(t, compacted)
	sys, small, _ := FromDocument(doc, "anthropic")
	sys2, whole, _ := FromDocument(doc.Whole(), "anthropic")
	if a, b := EstimateTokens(sys, small, nil), EstimateTokens(sys2, whole, nil); a >= b {
		t.Errorf("compacted %d tokens, whole %d", a, b)
	}
}
