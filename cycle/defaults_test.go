package cycle

import (
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/tools/sandbox"
	lua "github.com/yuin/gopher-lua"
)

// The Lua defaults (lua/flemma/config.lua) are what a user reads and what
// setup() sends; the Go defaults are what the tools use when a key is not
// sent. They must say the same: the security defaults of issue 11 live in
// both places until one option model replaces them (issue 13).
func TestLuaDefaultsMatchGo(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "lua", "flemma", "config.lua")
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("vim", L.NewTable()) // config.lua uses vim.* only inside functions
	if err := L.DoFile(path); err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	luaSandbox := L.GetField(L.GetField(L.Get(-1), "defaults"), "sandbox")
	list := func(key string) []string {
		var out []string
		L.GetField(luaSandbox, key).(*lua.LTable).ForEach(func(_, v lua.LValue) { out = append(out, v.String()) })
		return out
	}
	if got := list("deny_read"); !reflect.DeepEqual(got, sandbox.DefaultDenyRead) {
		t.Errorf("config.lua sandbox.deny_read = %q\nGo DefaultDenyRead = %q", got, sandbox.DefaultDenyRead)
	}
	if got := list("env_deny"); !reflect.DeepEqual(got, sandbox.DefaultEnvDeny) {
		t.Errorf("config.lua sandbox.env_deny = %q\nGo DefaultEnvDeny = %q", got, sandbox.DefaultEnvDeny)
	}
	if got := list("writable"); !reflect.DeepEqual(got, sandbox.DefaultWritable) {
		t.Errorf("config.lua sandbox.writable = %q\nGo DefaultWritable = %q", got, sandbox.DefaultWritable)
	}
	if got := L.GetField(luaSandbox, "network"); got != lua.LBool(sandbox.DefaultConfig().Network) {
		t.Errorf("config.lua sandbox.network = %v, Go default %v", got, sandbox.DefaultConfig().Network)
	}
	timeouts := map[string]float64{}
	L.GetField(L.GetField(L.GetField(L.Get(-1), "defaults"), "tools"), "timeouts").(*lua.LTable).ForEach(func(k, v lua.LValue) {
		timeouts[k.String()] = float64(v.(lua.LNumber))
	})
	if !reflect.DeepEqual(timeouts, options.DefaultToolTimeouts) {
		t.Errorf("config.lua tools.timeouts = %v, Go options.DefaultToolTimeouts = %v", timeouts, options.DefaultToolTimeouts)
	}
	budget := L.GetField(L.GetField(L.GetField(L.Get(-1), "defaults"), "send"), "budget")
	for key, want := range map[string]float64{
		"template_ms":      float64(DefaultTemplateTime.Milliseconds()),
		"template_bytes":   DefaultTemplateBytes,
		"references":       DefaultReferences,
		"attachment_bytes": DefaultAttachmentBytes,
	} {
		if got := L.GetField(budget, key); got != lua.LNumber(want) {
			t.Errorf("config.lua send.budget.%s = %v, Go default %v", key, got, want)
		}
	}
	if got := L.GetField(luaSandbox, "unix_sockets"); got != lua.LBool(sandbox.DefaultConfig().UnixSockets) {
		t.Errorf("config.lua sandbox.unix_sockets = %v, Go default %v", got, sandbox.DefaultConfig().UnixSockets)
	}
	// sandbox.limits as the host reads them (memory "50%" is half the
	// machine's) are Go's DefaultLimits.
	limits := L.GetField(luaSandbox, "limits").(*lua.LTable)
	num := func(k string) float64 { return float64(L.GetField(limits, k).(lua.LNumber)) }
	mem, ok := sandbox.ParseMemoryLimit(L.GetField(limits, "memory").String())
	got := sandbox.Limits{Processes: int(num("processes")), Memory: mem, FileSize: int64(num("file_size")) << 20,
		OpenFiles: int(num("open_files")), CPU: int(num("cpu"))}
	if want := sandbox.DefaultLimits(); !ok || got != want {
		t.Errorf("config.lua sandbox.limits = %+v, Go DefaultLimits = %+v", got, want)
	}
}
