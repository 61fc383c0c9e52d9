package cycle

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// The option schema (options.Schema, from which lua/flemma/schema.lua is
// generated) is what a user reads and what setup() sends; the sandbox and
// the send budget keep their own defaults for a host never sent a key
// (tools/sandbox cannot import options). They must say the same: the
// security defaults of issue 11.
func TestSchemaMatchesToolDefaults(t *testing.T) {
	list := func(path string) []string { return options.Default(path).([]string) }
	num := func(path string) float64 { return options.DefaultNumber(path) }
	if got := list("sandbox.deny_read"); !reflect.DeepEqual(got, sandbox.DefaultDenyRead) {
		t.Errorf("schema sandbox.deny_read = %q\nGo DefaultDenyRead = %q", got, sandbox.DefaultDenyRead)
	}
	if got := list("sandbox.env_deny"); !reflect.DeepEqual(got, sandbox.DefaultEnvDeny) {
		t.Errorf("schema sandbox.env_deny = %q\nGo DefaultEnvDeny = %q", got, sandbox.DefaultEnvDeny)
	}
	if got := list("sandbox.writable"); !reflect.DeepEqual(got, sandbox.DefaultWritable) {
		t.Errorf("schema sandbox.writable = %q\nGo DefaultWritable = %q", got, sandbox.DefaultWritable)
	}
	d := sandbox.DefaultConfig()
	if options.Default("sandbox.network") != d.Network || options.Default("sandbox.unix_sockets") != d.UnixSockets ||
		options.Default("sandbox.enabled") != d.Enabled {
		t.Errorf("schema sandbox.network/unix_sockets/enabled = %v/%v/%v, Go %v/%v/%v", options.Default("sandbox.network"),
			options.Default("sandbox.unix_sockets"), options.Default("sandbox.enabled"), d.Network, d.UnixSockets, d.Enabled)
	}
	for path, want := range map[string]float64{
		"send.budget.template_ms":      float64(DefaultTemplateTime / time.Millisecond),
		"send.budget.template_bytes":   DefaultTemplateBytes,
		"send.budget.references":       DefaultReferences,
		"send.budget.attachment_bytes": DefaultAttachmentBytes,
	} {
		if got := num(path); got != want {
			t.Errorf("schema %s = %v, Go default %v", path, got, want)
		}
	}
	// sandbox.limits as the host reads them (memory "50%" is half the
	// machine's) are Go's DefaultLimits.
	mem, ok := sandbox.ParseMemoryLimit(options.Default("sandbox.limits.memory"))
	got := sandbox.Limits{Processes: int(num("sandbox.limits.processes")), Memory: mem, FileSize: int64(num("sandbox.limits.file_size")) << 20,
		OpenFiles: int(num("sandbox.limits.open_files")), CPU: int(num("sandbox.limits.cpu"))}
	if want := sandbox.DefaultLimits(); !ok || got != want {
		t.Errorf("schema sandbox.limits = %+v, Go DefaultLimits = %+v", got, want)
	}
}

// Every wire the providers speak can be named in providers.<name>.wire.
func TestSchemaNamesEveryWire(t *testing.T) {
	var enum []string
	for _, o := range options.Entries["providers"] {
		if o.Path == "wire" {
			enum = o.Enum
		}
	}
	for _, w := range provider.Wires() {
		if !slices.Contains(enum, w) {
			t.Errorf("wire %q is not among providers.<name>.wire's values %v", w, enum)
		}
	}
}
