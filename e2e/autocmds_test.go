package e2e

import (
	"fmt"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// flemmaAutocmds counts the autocommands of flemma's groups (every group
// whose name starts with "flemma", plugin/flemma.lua's included): those
// that are not buffer-local, those local to each buffer, and the resize
// ones (VimResized).
const flemmaAutocmds = `
local global, resize, per = 0, 0, {}
for _, a in ipairs(vim.api.nvim_get_autocmds({})) do
  local g = a.group and a.group_name or ""
  if type(g) == "string" and g:sub(1, 6) == "flemma" then
    if a.buflocal then
      per[tostring(a.buffer)] = (per[tostring(a.buffer)] or 0) + 1
    else
      global = global + 1
      if a.event == "VimResized" then resize = resize + 1 end
    end
  end
end
return { global = global, resize = resize, per = per }`

type autocmdCount struct {
	Global int            `msgpack:"global"`
	Resize int            `msgpack:"resize"`
	Per    map[string]int `msgpack:"per"`
}

// One attach path (issue 25): attaching chat buffers adds only
// buffer-local autocommands — one resize autocommand in all, however many
// chat buffers are open — and wiping a buffer removes its own.
func TestAttachAutocommands(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		count := func() autocmdCount {
			t.Helper()
			var c autocmdCount
			if err := s.Lua(&c, flemmaAutocmds); err != nil {
				t.Fatal(err)
			}
			return c
		}
		first := mustOpen(t, s, "one.chat", "@You:\nhi\n")
		one := count()
		var bufs []int
		for i := 2; i <= 4; i++ {
			bufs = append(bufs, mustOpen(t, s, fmt.Sprintf("n%d.chat", i), "@You:\nhi\n"))
		}
		four := count()
		if four.Resize != 1 {
			t.Errorf("%d resize autocommands for 4 chat buffers, want 1", four.Resize)
		}
		if four.Global != one.Global {
			t.Errorf("4 chat buffers: %d autocommands that are not buffer-local; 1 chat buffer: %d", four.Global, one.Global)
		}
		local := one.Per[fmt.Sprint(first)]
		if local == 0 {
			t.Fatalf("no buffer-local autocommands for buffer %d: %+v", first, one)
		}
		for _, b := range bufs {
			if got := four.Per[fmt.Sprint(b)]; got != local {
				t.Errorf("buffer %d has %d buffer-local autocommands, buffer %d %d", b, got, first, local)
			}
		}
		if err := s.Nv.Command(fmt.Sprintf("bwipeout! %d", bufs[0])); err != nil {
			t.Fatal(err)
		}
		after := count()
		if n := after.Per[fmt.Sprint(bufs[0])]; n != 0 {
			t.Errorf("buffer %d wiped: %d of its autocommands remain", bufs[0], n)
		}
		if after.Global != four.Global || after.Resize != 1 {
			t.Errorf("after a wipe: %+v, before: %+v", after, four)
		}
		for _, b := range append([]int{first}, bufs[1:]...) {
			if got := after.Per[fmt.Sprint(b)]; got != local {
				t.Errorf("after wiping buffer %d, buffer %d has %d buffer-local autocommands, want %d", bufs[0], b, got, local)
			}
		}
	})
}
