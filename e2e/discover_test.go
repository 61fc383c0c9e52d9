package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// fakeOllama lists its models at /api/tags (its /v1/models is missing, as
// on older versions); release holds every listing until the test lets go.
type fakeOllama struct {
	mu      sync.Mutex
	lists   int
	release chan struct{}
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/tags" {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	f.lists++
	release := f.release
	f.mu.Unlock()
	select {
	case <-release:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"models":[{"name":"qwen3:8b","model":"qwen3:8b"},{"name":"llama3.1:8b","model":"llama3.1:8b"}]}`))
}

func completions(t *testing.T, s *nvimtest.Session, line string) string {
	t.Helper()
	var got []string
	if err := s.Lua(&got, `return vim.fn.getcompletion(..., "cmdline")`, line); err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, " ")
}

// :Flemma switch <provider> <Tab> completes at once with what is known,
// asks the server for its models in the background (the completion does
// not wait while the server is slow), and the next <Tab> offers them; the
// server is asked once per host.
func TestSwitchCompletesServerModels(t *testing.T) {
	f := &fakeOllama{release: make(chan struct{})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	setup := `{ providers = { ollama = { base_url = "` + srv.URL + `/v1", model = "qwen3" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		f.mu.Lock()
		f.lists, f.release = 0, make(chan struct{}) // one server serves every Neovim in turn
		release := f.release
		f.mu.Unlock()
		first := completions(t, s, "Flemma switch ollama ")
		if strings.Contains(first, "llama3.1:8b") || !strings.Contains(first, "qwen3") {
			t.Fatalf("first completion %q", first)
		}
		// The listing is under way and held: completing again answers.
		if _, err := s.Wait(10*time.Second, func(string) bool { f.mu.Lock(); defer f.mu.Unlock(); return f.lists == 1 }); err != nil {
			t.Fatal("the server was never asked for its models")
		}
		if again := completions(t, s, "Flemma switch ollama "); again != first {
			t.Errorf("completion while the list is on its way: %q", again)
		}
		close(release)
		var got string
		if _, err := s.Wait(10*time.Second, func(string) bool {
			got = completions(t, s, "Flemma switch ollama ")
			return strings.Contains(got, "llama3.1:8b")
		}); err != nil {
			t.Fatalf("the server's models never came: %q", got)
		}
		if !strings.Contains(got, "qwen3:8b") || !strings.Contains(got, "max_tokens=") {
			t.Errorf("completion %q", got)
		}
		f.mu.Lock()
		n := f.lists
		f.mu.Unlock()
		if n != 1 {
			t.Errorf("the server was asked %d times, want once per host", n)
		}
	})
}

// :Flemma switch alone opens a picker of presets, models and providers;
// a provider picked opens one of its models (with the server's), and the
// choice is switched to.
func TestSwitchPicker(t *testing.T) {
	f := &fakeOllama{release: make(chan struct{})}
	close(f.release)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	setup := `{ providers = { ollama = { base_url = "` + srv.URL + `/v1", model = "qwen3" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		// The user picks "ollama", then "llama3.1:8b".
		err := s.Lua(nil, `
			_G.picked = {}
			vim.ui.select = function(items, opts, cb)
				local labels = {}
				for i, it in ipairs(items) do
					labels[i] = opts.format_item and opts.format_item(it) or it
				end
				table.insert(_G.picked, opts.prompt .. ": " .. table.concat(labels, ","))
				for i, it in ipairs(items) do
					if labels[i]:find("^ollama …") or it == "llama3.1:8b" then
						return cb(it, i)
					end
				end
				cb(nil)
			end`)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Nv.Command("Flemma switch"); err != nil {
			t.Fatal(err)
		}
		waitMessage(t, s, "Provider ollama, model llama3.1:8b.")
		var picked []string
		if err := s.Lua(&picked, `return _G.picked`); err != nil {
			t.Fatal(err)
		}
		if len(picked) != 2 || !strings.HasPrefix(picked[0], "Switch to: ") || !strings.Contains(picked[1], "ollama model: (its default model),") || !strings.Contains(picked[1], "qwen3:8b") {
			t.Errorf("pickers: %q", picked)
		}
	})
}
