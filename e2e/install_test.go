package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// The plugin's build step (build.lua, which lazy.nvim runs, and
// :Flemma install) against a local release server: FLEMMA_DOWNLOAD_BASE
// points the installer at it. Each case installs into a copy of the plugin,
// never into the checkout the other tests use.

// pluginCopy copies the plugin's Lua side and build.lua (withSource: every
// tracked file, for go build) into a new folder; returns it.
func pluginCopy(t *testing.T, withSource bool) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "flemma")
	root := nvimtest.RepoRoot()
	var files []string
	if withSource {
		out, err := exec.Command("git", "-C", root, "ls-files").Output()
		if err != nil {
			t.Fatalf("git ls-files: %v", err)
		}
		files = strings.Split(strings.TrimSpace(string(out)), "\n")
	} else {
		files = []string{"build.lua", "lua/flemma/install.lua", "lua/flemma/VERSION"}
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// release serves v<version>/SHA256SUMS and v<version>/<asset> as a forge's
// release does; sums and asset are the bodies, cut makes the asset's
// transfer stop halfway (the connection dropped).
type release struct {
	sums  string
	asset []byte
	cut   bool
}

func (rel *release) serve(t *testing.T) string {
	t.Helper()
	prefix := "/v" + flemma.Version + "/"
	name := "flemma-host-" + runtime.GOOS + "-" + runtime.GOARCH
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case prefix + "SHA256SUMS":
			fmt.Fprint(w, rel.sums)
		case prefix + name:
			if rel.cut {
				w.Header().Set("Content-Length", fmt.Sprint(len(rel.asset)))
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write(rel.asset[:len(rel.asset)/2])
				if f, ok := w.(http.Flusher); ok {
					f.Flush()
				}
				if hj, ok := w.(http.Hijacker); ok {
					if conn, _, err := hj.Hijack(); err == nil {
						conn.Close()
					}
				}
				return
			}
			_, _ = w.Write(rel.asset)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func sumLine(data []byte, name string) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:]) + "  " + name + "\n"
}

// hostBinary is the host `go test` built for the e2e tests.
func hostBinary(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nvimtest.RepoRoot(), "bin", "flemma-host"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// noGoPath is a PATH with curl and sha256sum but no Go.
const noGoPath = "PATH=/usr/bin:/bin"

// install runs the copy's build.lua in a real Neovim, as lazy.nvim does;
// returns its message and whether it succeeded.
func install(t *testing.T, bin, plugin string, env ...string) (string, bool) {
	t.Helper()
	s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: t.TempDir(), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var res struct {
		OK  bool   `msgpack:"ok"`
		Msg string `msgpack:"msg"`
	}
	if err := s.Lua(&res, `
		local ok, err = pcall(vim.cmd, "luafile " .. vim.fn.fnameescape(...))
		return { ok = ok, msg = ok and vim.trim(vim.fn.execute("messages")) or tostring(err) }`, filepath.Join(plugin, "build.lua")); err != nil {
		t.Fatal(err)
	}
	return res.Msg, res.OK
}

// leftovers are the files of bin/ besides the host (partial downloads).
func leftovers(t *testing.T, plugin string) []string {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(plugin, "bin"))
	var out []string
	for _, e := range entries {
		if e.Name() != "flemma-host" {
			out = append(out, e.Name())
		}
	}
	return out
}

func installed(t *testing.T, plugin string) (string, bool) {
	t.Helper()
	out, err := exec.Command(filepath.Join(plugin, "bin", "flemma-host"), "-version").Output()
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

func TestInstallDownloadsVerifiedHost(t *testing.T) {
	host := hostBinary(t)
	name := "flemma-host-" + runtime.GOOS + "-" + runtime.GOARCH
	for _, bin := range neovims(t) {
		t.Run("nvim-"+nvimtest.Version(bin), func(t *testing.T) {
			plugin := pluginCopy(t, false)
			rel := &release{asset: host, sums: sumLine([]byte("other"), "flemma-host-darwin-arm64") + sumLine(host, name)}
			msg, ok := install(t, bin, plugin, noGoPath, "FLEMMA_DOWNLOAD_BASE="+rel.serve(t)+"/")
			if !ok || !strings.Contains(msg, "downloaded "+name+" (v"+flemma.Version+", checksum verified)") {
				t.Fatalf("install = %v %q", ok, msg)
			}
			if v, ok := installed(t, plugin); !ok || v != "flemma-host "+flemma.Version {
				t.Errorf("installed host reports %q", v)
			}
			if l := leftovers(t, plugin); len(l) > 0 {
				t.Errorf("left in bin/: %v", l)
			}
			// A second run finds it and downloads nothing.
			rel.asset = nil
			msg, ok = install(t, bin, plugin, noGoPath, "FLEMMA_DOWNLOAD_BASE="+rel.serve(t))
			if !ok || !strings.Contains(msg, "is already installed") {
				t.Errorf("second install = %v %q", ok, msg)
			}
		})
	}
}

// The attacks and failures: each leaves no binary (whole or partial) and
// says what to do, since Go is not there to build one.
func TestInstallRefusesAndFails(t *testing.T) {
	host := hostBinary(t)
	name := "flemma-host-" + runtime.GOOS + "-" + runtime.GOARCH
	tampered := append(append([]byte(nil), host...), []byte("\x00evil")...)
	closed := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}
	cases := []struct {
		name string
		base func(t *testing.T) string
		want []string
	}{
		{"checksum mismatch refused", func(t *testing.T) string {
			return (&release{asset: tampered, sums: sumLine(host, name)}).serve(t)
		}, []string{"checksum mismatch for " + name, "deleted, not installed", "tampered"}},
		{"missing platform", func(t *testing.T) string {
			return (&release{asset: host, sums: sumLine(host, "flemma-host-plan9-mips")}).serve(t)
		}, []string{"has no prebuilt host for " + runtime.GOOS + "/" + runtime.GOARCH}},
		{"offline", closed, []string{"could not download", "SHA256SUMS"}},
		{"no release", func(t *testing.T) string {
			return (&release{}).serve(t) + "/nothing-here"
		}, []string{"could not download", "404"}},
		{"interrupted download", func(t *testing.T) string {
			return (&release{asset: host, sums: sumLine(host, name), cut: true}).serve(t)
		}, []string{"could not download " + name}},
	}
	for _, bin := range neovims(t) {
		t.Run("nvim-"+nvimtest.Version(bin), func(t *testing.T) {
			for _, c := range cases {
				t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
					plugin := pluginCopy(t, false)
					msg, ok := install(t, bin, plugin, noGoPath, "FLEMMA_DOWNLOAD_BASE="+c.base(t))
					if ok {
						t.Fatalf("install succeeded: %q", msg)
					}
					for _, w := range append(c.want, "Go is not installed", "Install Go", ":Flemma install") {
						if !strings.Contains(msg, w) {
							t.Errorf("message %q\nlacks %q", msg, w)
						}
					}
					if _, ok := installed(t, plugin); ok {
						t.Error("a host was installed")
					}
					if l := leftovers(t, plugin); len(l) > 0 {
						t.Errorf("left in bin/: %v", l)
					}
				})
			}
		})
	}
}

// With Go on PATH, a failed download falls back to go build.
func TestInstallFallsBackToGoBuild(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go on PATH")
	}
	bins := neovims(t)
	plugin := pluginCopy(t, true)
	rel := &release{asset: []byte("not a host"), sums: sumLine([]byte("something else"), "flemma-host-"+runtime.GOOS+"-"+runtime.GOARCH)}
	gocache, _ := exec.Command("go", "env", "GOCACHE").Output()
	msg, ok := install(t, bins[len(bins)-1], plugin, "PATH="+filepath.Dir(goBin)+":/usr/bin:/bin",
		"GOCACHE="+strings.TrimSpace(string(gocache)), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "FLEMMA_DOWNLOAD_BASE="+rel.serve(t))
	if !ok || !strings.Contains(msg, "checksum mismatch") || !strings.Contains(msg, "built with go build") {
		t.Fatalf("install = %v %q", ok, msg)
	}
	if v, ok := installed(t, plugin); !ok || v != "flemma-host "+flemma.Version {
		t.Errorf("built host reports %q", v)
	}
	if l := leftovers(t, plugin); len(l) > 0 {
		t.Errorf("left in bin/: %v", l)
	}
}

// :Flemma install in the plugin the tests run finds its host in place.
func TestFlemmaInstallCommand(t *testing.T) {
	eachNvimEnv(t, "", []string{noGoPath, "FLEMMA_DOWNLOAD_BASE=http://127.0.0.1:1"}, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Nv.Command("Flemma install"); err != nil {
			t.Fatal(err)
		}
		if m := s.Messages(); !strings.Contains(m, "flemma-host "+flemma.Version+" is already installed at "+filepath.Join(nvimtest.RepoRoot(), "bin", "flemma-host")) {
			t.Errorf("messages: %s", m)
		}
	})
}
