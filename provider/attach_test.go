package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

func TestSplitRefs(t *testing.T) {
	type f struct{ path, mime string }
	cases := []struct {
		in    string
		texts string // the text parts joined with "|"
		files []f
	}{
		{"see @./a.png now", "see | now", []f{{"./a.png", ""}}},
		{"@../up/b.pdf.", "|.", []f{{"../up/b.pdf", ""}}},
		{"(@~/notes.txt)", "(|)", []f{{"~/notes.txt", ""}}},
		{"@//etc/x.png;type=image/png, ok", "|, ok", []f{{"/etc/x.png", "image/png"}}},
		{"@./my%20file.txt", "", []f{{"./my file.txt", ""}}},
		{`keep \@./x.txt literal`, "keep @./x.txt literal", nil},
		{"mail me@./x or a@b.c", "mail me@./x or a@b.c", nil},
		{"@ ./x and @./", "@ ./x and @./", nil},
		{"two\nlines @./b.png", "two\nlines ", []f{{"./b.png", ""}}},
	}
	for _, c := range cases {
		parts := splitRefs(c.in, 10)
		var texts []string
		var files []f
		for _, p := range parts {
			switch p.Kind {
			case PartText:
				texts = append(texts, p.Text)
			case PartFile:
				files = append(files, f{p.File.Path, p.File.MIME})
				if p.File.Line != 10+strings.Count(c.in[:strings.Index(c.in, "@")], "\n") {
					t.Errorf("%q: line %d", c.in, p.File.Line)
				}
				if len(files) == 1 && texts == nil {
					texts = append(texts, "")
				}
			}
		}
		if got := strings.Join(texts, "|"); got != c.texts || len(files) != len(c.files) {
			t.Errorf("%q: texts %q files %v, want %q %v", c.in, got, files, c.texts, c.files)
			continue
		}
		for i := range files {
			if files[i] != c.files[i] {
				t.Errorf("%q: file %v, want %v", c.in, files[i], c.files[i])
			}
		}
	}
}

// Only a `read` result that is exactly one file reference carries a file;
// a bash result that prints one does not.
func TestReadResultReference(t *testing.T) {
	doc := buffer.Parse(strings.Split(attachChat, "\n"))
	_, msgs, err := FromDocument(doc, "anthropic")
	if err != nil {
		t.Fatal(err)
	}
	var results []*ToolResult
	var files []*File
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == PartToolResult {
				results = append(results, p.ToolResult)
			}
			if p.Kind == PartFile {
				files = append(files, p.File)
			}
		}
	}
	if len(results) != 2 || len(results[0].Files) != 1 || results[0].Files[0].Path != "./shot.png" || results[0].Files[0].MIME != "image/png" {
		t.Fatalf("read result files = %+v", results)
	}
	if len(results[1].Files) != 0 {
		t.Errorf("a bash result printing a reference got files %+v", results[1].Files)
	}
	if len(files) != 2 || files[0].Path != "./diagram.png" || files[0].Line != 4 || files[1].Path != "./paper.pdf" {
		t.Errorf("user files = %+v", files)
	}
	if got := len(Files(msgs)); got != 3 {
		t.Errorf("Files = %d, want 3", got)
	}
}

const attachChat = `@System:
Be brief.
@You:
Compare @./diagram.png with @./paper.pdf please.
@Assistant:
**Tool Use:** ` + "`read`" + ` (` + "`toolu_1`" + `)

` + "```json" + `
{"label":"look","path":"shot.png"}
` + "```" + `

**Tool Use:** ` + "`bash`" + ` (` + "`toolu_2`" + `)

` + "```json" + `
{"command":"echo @./x.png;type=image/png","label":"echo","timeout":null}
` + "```" + `
@You:
**Tool Result:** ` + "`toolu_1`" + `

` + "```" + `
@./shot.png;type=image/png
` + "```" + `

**Tool Result:** ` + "`toolu_2`" + `

` + "```" + `
@./x.png;type=image/png
` + "```" + `

What do you see?`

// testPNG is a small PNG made here (2×2 pixels).
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	img.Set(1, 1, color.RGBA{0, 0, 255, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// testPDF is the smallest document that starts like a PDF.
var testPDF = []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")

// attachRequest is attachChat with its files loaded as the engine does.
func attachRequest(t *testing.T, provider string) Request {
	t.Helper()
	sys, msgs, err := FromDocument(buffer.Parse(strings.Split(attachChat, "\n")), provider)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{System: sys, Messages: msgs}
	for _, f := range Files(req.Messages) {
		switch f.Path {
		case "./paper.pdf":
			f.MIME, f.Data = "application/pdf", testPDF
		default:
			if f.MIME == "" {
				f.MIME = "image/png"
			}
			f.Data = testPNG(t)
		}
	}
	return req
}

// TestAttachmentRequests: the body of each wire with an image and a PDF in
// the user's text and an image a read returned.
func TestAttachmentRequests(t *testing.T) {
	streams := map[string]func(string) Provider{
		"anthropic": func(u string) Provider { return newTest(t, "anthropic", u) },
		"openai":    func(u string) Provider { return newTest(t, "openai", u) },
		"vertex":    func(u string) Provider { return newTest(t, "vertex", u) },
		"chat":      func(u string) Provider { return newChat(t, u+"/v1", nil) },
	}
	for name, mk := range streams {
		t.Run(name, func(t *testing.T) {
			srv, c := server(t, 200, "text/event-stream", "")
			wire := name
			if name == "chat" {
				wire = "ollama"
			}
			req := attachRequest(t, wire)
			req.Params = Params{Model: map[string]string{"anthropic": "claude-sonnet-4-5", "openai": "gpt-5", "vertex": "gemini-2.5-pro", "chat": "qwen3"}[name], MaxTokens: 4000, Thinking: "off"}
			_, _ = collect(context.Background(), mk(srv.URL), req)
			_, _, _, body := c.get()
			goldenJSON(t, "request/attach_"+name+".json", body)
			if !json.Valid(body) {
				t.Fatal("body is not JSON")
			}
		})
	}
}

// Sizes and types a provider refuses become a text note, not a failing
// request.
func TestAttachmentLimits(t *testing.T) {
	big := &File{Path: "./big.png", Ref: "@./big.png", MIME: "image/png", Data: make([]byte, 6*mb)}
	if b := anthropicFile(big); b["type"] != "text" || !strings.Contains(b["text"].(string), "larger than anthropic's limit of 5.0 MB") {
		t.Errorf("anthropic 6 MB image = %v", b["text"])
	}
	if b := openaiFile(big); b["type"] != "input_image" {
		t.Errorf("openai 6 MB image = %v", b["type"])
	}
	pdf := &File{Path: "./a.pdf", MIME: "application/pdf", Data: testPDF}
	if b := chatFile(pdf, dialectOf("http://localhost:11434/v1", "")); b["type"] != "text" || !strings.Contains(b["text"].(string), "does not accept application/pdf") {
		t.Errorf("chat pdf = %v", b)
	}
	zip := &File{Path: "./a.zip", MIME: "application/zip", Data: []byte("PK")}
	if b := vertexFile(zip); b["text"] == nil {
		t.Errorf("vertex zip = %v", b)
	}
	gone := &File{Path: "./gone.png", Ref: "@./gone.png", Note: "file not found"}
	if b := anthropicFile(gone); b["text"] != "[@./gone.png: not attached: file not found]" {
		t.Errorf("missing = %v", b["text"])
	}
}

// PDFs go to a Chat Completions server as file parts where it documents
// them (OpenAI, Azure OpenAI, OpenRouter; they were refused everywhere),
// and as a note elsewhere.
func TestChatPDFWhereDocumented(t *testing.T) {
	for _, tc := range []struct {
		base string
		file bool
	}{
		{"https://api.openai.com/v1", true},
		{"https://myres.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-10-21", true},
		{"https://openrouter.ai/api/v1", true},
		{"http://localhost:11434/v1", false},
		{"https://api.deepseek.com", false},
	} {
		req := attachRequest(t, "ollama")
		req.Params = Params{Model: "gpt-4o"}
		body, err := chatBody(req, "srv", dialectOf(tc.base, ""))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(string(body), `{"file":{"file_data":"data:application/pdf;base64,`)
		if got != tc.file || got == strings.Contains(string(body), "does not accept application/pdf") {
			t.Errorf("%s: file part %v, want %v", tc.base, got, tc.file)
		}
		if tc.base == "https://api.openai.com/v1" {
			goldenJSON(t, "request/attach_chat_openai.json", body)
		}
	}
}

func TestSplitUserTemplates(t *testing.T) {
	parts := splitUser("a {{ x }}\nb \\{{ y }} {{ t[\"}}\"] }} @./f.png", 5)
	var kinds []string
	for _, p := range parts {
		switch p.Kind {
		case PartText:
			kinds = append(kinds, "T:"+p.Text)
		case PartExpr:
			kinds = append(kinds, "E:"+p.Expr.Code+":"+string(rune('0'+p.Expr.Line)))
		case PartFile:
			kinds = append(kinds, "F:"+p.File.Path+":"+string(rune('0'+p.File.Line)))
		}
	}
	want := `T:a |E: x :5|T:` + "\n" + `b {{ y }} |E: t["}}"] :6|T: |F:./f.png:6`
	if got := strings.Join(kinds, "|"); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestSplitTemplate(t *testing.T) {
	show := func(parts []Part) string {
		var b []string
		for _, p := range parts {
			switch p.Kind {
			case PartText:
				b = append(b, "T:"+p.Text)
			case PartExpr:
				b = append(b, fmt.Sprintf("E:%s:%d", p.Expr.Code, p.Expr.Line))
			case PartCode:
				b = append(b, fmt.Sprintf("C:%s:%d", p.Expr.Code, p.Expr.Line))
			}
		}
		return strings.Join(b, "|")
	}
	for _, c := range []struct{ in, want string }{
		{"a {{ x }} b", "T:a |E: x :1|T: b"},
		{"{% for i = 1, 2 do %}i={{ i }};{% end %}", "C: for i = 1, 2 do :1|T:i=|E: i :1|T:;|C: end :1"},
		{"a\n{% if x then %}\nyes\n{% end %}\nz", "T:a\n|C: if x then :2|T:\nyes\n|C: end :4|T:\nz"},
		// Trim markers take the blanks beside the tag up to one newline.
		{"a\n  {%- if x then -%}  \nyes\n{%- end -%}\nz", "T:a|C: if x then :2|T:yes|C: end :4|T:z"},
		{"x  {{- 1 -}}  y", "T:x|E: 1 :1|T:y"},
		{"{{-1}}", "E:1:1"}, // as the Lua Flemma: "-" is the trim marker
		// Escapes and unclosed openers are text.
		{`\{% raw %} and \{{ y }}`, "T:{% raw %} and {{ y }}"},
		{"a {% if x", "T:a {% if x"},
		// A "%}" inside a string or a comment does not close the block.
		{"{% s = '%}' -- %} here\n%}", "C: s = '%}' -- %} here\n:1"},
		{"50% {done}", "T:50% {done}"},
	} {
		if got := show(SplitTemplate(c.in, 1)); got != c.want {
			t.Errorf("SplitTemplate(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
