package tools

import (
	"strings"
	"testing"
)

// Issue 24, class 4: credentials are known by their shape. The inputs are
// the credential files the outside review attached with @~/…, and more;
// the secret part of each must go, the rest of the text stay.
func TestRedactShapes(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		gone     []string // substrings that must not survive
		kept     []string // substrings that must survive
	}{
		{"git config extraheader", "[http]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzXzEyMzQ1Njc4OTA=\n",
			[]string{"eC1hY2Nlc3MtdG9rZW46Z2hzXzEyMzQ1Njc4OTA="}, []string{"extraheader", "AUTHORIZATION: basic"}},
		{"gitconfig url with a token as user", `[url "https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/"]` + "\n\tinsteadOf = https://github.com/\n",
			[]string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, []string{"@github.com/", "insteadOf"}},
		{"url user:password", "remote = https://alice:hunter2hunter2@git.example.com/repo.git",
			[]string{"hunter2hunter2"}, []string{"https://alice:", "@git.example.com/repo.git"}},
		{"ssh url stays", "url = ssh://git@github.com/org/repo.git", nil, []string{"ssh://git@github.com/org/repo.git"}},
		{"maven settings.xml", "<server>\n  <id>central</id>\n  <username>deploy</username>\n  <password>s3cr3tPassw0rd</password>\n</server>\n",
			[]string{"s3cr3tPassw0rd"}, []string{"<username>deploy</username>", "<password>", "</password>"}},
		{"gradle.properties", "signing.password=Gr4dleSigningPass\nossrhPassword=anotherPass123\norg.gradle.jvmargs=-Xmx2g\n",
			[]string{"Gr4dleSigningPass", "anotherPass123"}, []string{"org.gradle.jvmargs=-Xmx2g"}},
		{"pip.conf", "[global]\nindex-url = https://__token__:pypi-AgEIcHlwaS5vcmcCJGFiY2RlZjEyMzQ1Njc4OTA@pypi.example.com/simple\n",
			[]string{"pypi-AgEIcHlwaS5vcmcCJGFiY2RlZjEyMzQ1Njc4OTA"}, []string{"@pypi.example.com/simple"}},
		{"s3cfg", "[default]\naccess_key = AKIAIOSFODNN7EXAMPLE\nsecret_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nhost_base = s3.amazonaws.com\n",
			[]string{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}, []string{"host_base = s3.amazonaws.com"}},
		{"databrickscfg", "[DEFAULT]\nhost = https://adb-123.azuredatabricks.net\ntoken = dapi0123456789abcdef0123456789abcdef\n",
			[]string{"dapi0123456789abcdef0123456789abcdef"}, []string{"host = https://adb-123.azuredatabricks.net"}},
		{"composer auth.json", `{"github-oauth": {"github.com": "ghp_0123456789abcdefghijklmnopqrstuvwxyz"}, "http-basic": {"repo.example.com": {"username": "me", "password": "c0mposerPass"}}}`,
			[]string{"ghp_0123456789abcdefghijklmnopqrstuvwxyz", "c0mposerPass"}, []string{`"username": "me"`}},
		{"npmrc", "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n",
			[]string{"npm_abcdefghijklmnopqrstuvwxyz0123456789"}, []string{"_authToken="}},
		{"jwt", "CI_JOB_JWT eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dGhpc2lzYXNpZ25hdHVyZQ in the log",
			[]string{"eyJhbGciOiJSUzI1NiJ9"}, []string{"CI_JOB_JWT", "in the log"}},
		{"slack and gitlab", "xoxb-1234567890-abcdefghij and glpat-abcdefghijklmnopqrst12",
			[]string{"xoxb-1234567890-abcdefghij", "glpat-abcdefghijklmnopqrst12"}, []string{" and "}},
		{"openai and anthropic keys", "OPENAI=sk-proj-abcdefghijklmnopqrstuvwx1234 ANTHROPIC sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
			[]string{"sk-proj-abcdefghijklmnopqrstuvwx1234", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"}, nil},
		{"bearer header", "Authorization: Bearer abcdef0123456789abcdef0123456789\n", []string{"abcdef0123456789abcdef0123456789"}, []string{"Authorization: Bearer "}},
		{"private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\nafter\n",
			[]string{"b3BlbnNzaC1rZXktdjEAAAAA"}, []string{"after"}},
		{"env file", "DATABASE_PASSWORD=pg_s3cret_pw\nDEBUG=true\nPORT=8080\n", []string{"pg_s3cret_pw"}, []string{"DEBUG=true", "PORT=8080"}},
		{"ordinary code stays", "func tokenize(s string) []string { return strings.Fields(s) }\nmax_tokens = 4096\npassword = ${DB_PASSWORD}\n",
			nil, []string{"func tokenize(s string)", "max_tokens = 4096", "password = ${DB_PASSWORD}"}},
		{"prose stays", "The password must be at least 12 characters; see the auth section.", nil,
			[]string{"The password must be at least 12 characters; see the auth section."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RedactShapes(tc.in)
			for _, g := range tc.gone {
				if strings.Contains(got, g) {
					t.Errorf("%q survived:\n%s", g, got)
				}
			}
			for _, k := range tc.kept {
				if !strings.Contains(got, k) {
					t.Errorf("%q was lost:\n%s", k, got)
				}
			}
			if len(tc.gone) > 0 && !strings.Contains(got, "[redacted]") {
				t.Errorf("no [redacted] marker:\n%s", got)
			}
			if again := RedactShapes(got); again != got {
				t.Errorf("not idempotent:\n%s\n%s", got, again)
			}
		})
	}
}

func FuzzRedactShapes(f *testing.F) {
	f.Add("password = hunter2hunter2\nhttps://a:b@c/ eyJa.eyJb.c")
	f.Fuzz(func(t *testing.T, s string) {
		got := RedactShapes(s)
		if RedactShapes(got) != got {
			t.Errorf("not idempotent on %q", s)
		}
	})
}

// Values whose key says nothing are redacted only when they look random.
func TestRedactShapesGenericValues(t *testing.T) {
	for in, redact := range map[string]bool{
		"blob = eC1hY2Nlc3MtdG9rZW46Z2hzXzEyMzQ1Njc4OTA=":             true,
		"checksum = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c": true,
		"path = src/main/java/com/Example/App2":                       false,
		"id = 123e4567-e89b-12d3-a456-426614174000":                   false,
		"main_class = MyApplicationMainClass2024Final":                false,
		"host = adb-123.azuredatabricks.net":                          false,
	} {
		if got := RedactShapes(in) != in; got != redact {
			t.Errorf("%q: redacted %v, want %v (%q)", in, got, redact, RedactShapes(in))
		}
	}
}
