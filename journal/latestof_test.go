package journal

import (
	"context"
	"fmt"
	"testing"
)

// LatestOf answers, in one query, what Latest answers for each id: the
// newest run of each journaled id of that buffer, nothing for the others
// (another buffer's run of the same id included), past the chunk size too.
func TestLatestOf(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, nil)
	mustStart(t, j, call("/a.chat", "t1"))
	second := mustStart(t, j, call("/a.chat", "t1")) // a re-run: the newest wins
	t2 := mustStart(t, j, call("/a.chat", "t2"))
	mustStart(t, j, call("/b.chat", "t3"))
	ids := []string{"t1", "t2", "t3", "never"}
	for i := range 600 {
		ids = append(ids, fmt.Sprintf("x%d", i))
	}
	last := mustStart(t, j, call("/a.chat", "x599")) // in the second chunk
	got, err := j.LatestOf(ctx, "/a.chat", ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["t1"].ID != second || got["t2"].ID != t2 || got["x599"].ID != last {
		t.Fatalf("LatestOf = %v, want t1 → %d, t2 → %d, x599 → %d", got, second, t2, last)
	}
	for _, id := range []string{"t1", "t2", "t3", "never"} {
		want, ok, err := j.Latest(ctx, "/a.chat", id)
		if err != nil {
			t.Fatal(err)
		}
		if c, in := got[id]; in != ok || in && c.ID != want.ID {
			t.Errorf("%s: LatestOf %+v (%v), Latest %+v (%v)", id, c, in, want, ok)
		}
	}
	if one, err := j.LatestOf(ctx, "/a.chat", []string{"t2"}); err != nil || one["t2"].ID != t2 {
		t.Errorf("LatestOf one id = %v, %v", one, err)
	}
}
