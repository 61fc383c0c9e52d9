package tools

import (
	"bytes"
	"path/filepath"
	"strings"
)

// textMIME maps extensions to MIME types (reference §7.2); anything else is
// sniffed.
var textMIME = map[string]string{
	".txt": "text/plain", ".md": "text/markdown", ".json": "application/json", ".yaml": "application/yaml",
	".yml": "application/yaml", ".toml": "application/toml", ".xml": "application/xml", ".csv": "text/csv",
	".sql": "application/sql", ".html": "text/html", ".htm": "text/html", ".css": "text/css",
	".js": "application/javascript", ".mjs": "application/javascript", ".ts": "application/typescript",
	".py": "text/x-python", ".go": "text/x-go", ".rs": "text/x-rust", ".c": "text/x-c", ".h": "text/x-c",
	".lua": "text/x-lua", ".sh": "text/x-shellscript",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".svg": "image/svg+xml", ".webp": "image/webp", ".bmp": "image/bmp", ".pdf": "application/pdf",
}

var magicMIME = []struct {
	prefix string
	mime   string
}{
	{"\x89PNG\r\n\x1a\n", "image/png"}, {"\xff\xd8\xff", "image/jpeg"}, {"GIF87a", "image/gif"}, {"GIF89a", "image/gif"},
	{"%PDF-", "application/pdf"}, {"PK\x03\x04", "application/zip"}, {"\x1f\x8b", "application/gzip"},
	{"\x7fELF", "application/x-executable"},
}

// DetectMIME returns the MIME type of a file and whether it is binary: by
// extension first, else by magic number, else binary iff its first 8KB hold
// a NUL byte (as ripgrep and git decide). Text is text/*, or an
// application type that is text (json, javascript, typescript, xml, yaml,
// toml, sql).
func DetectMIME(path string, head []byte) (string, bool) {
	mime, ok := textMIME[strings.ToLower(filepath.Ext(path))]
	if !ok {
		for _, m := range magicMIME {
			if bytes.HasPrefix(head, []byte(m.prefix)) {
				mime, ok = m.mime, true
				break
			}
		}
		if len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP" {
			mime, ok = "image/webp", true
		}
	}
	if !ok {
		if bytes.IndexByte(head, 0) >= 0 {
			return "application/octet-stream", true
		}
		return "text/plain", false
	}
	if strings.HasPrefix(mime, "text/") {
		return mime, false
	}
	switch mime {
	case "application/json", "application/javascript", "application/typescript", "application/xml",
		"application/yaml", "application/toml", "application/sql":
		return mime, false
	}
	return mime, true
}
