package journal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flemma-dev/flemma/journal"
)

// The host's side of one tool call, and of the next press after a crash.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "journal-example-")
	defer os.RemoveAll(dir)
	j, err := journal.Open(ctx, filepath.Join(dir, "flemma", "journal.db"), nil)
	if err != nil {
		fmt.Println("warning: running without the journal:", err)
		return
	}
	defer j.Close()

	buffer := journal.BufferKey(filepath.Join(dir, "notes.chat"))
	hash, _ := journal.HashInput(map[string]any{"command": "make test"})
	_ = j.Record(ctx, journal.Event{Buffer: buffer, CallID: "toolu_01", Tool: "bash", InputHash: hash,
		Decision: "approve", DecidedBy: "urn:flemma:approval:config ($default)"})

	// Never run a call twice without the user's word.
	if started, _ := j.Started(ctx, buffer, "toolu_01", hash); !started {
		id, err := j.Start(ctx, journal.Call{Buffer: buffer, CallID: "toolu_01", Tool: "bash", InputHash: hash,
			Decision: "approve", DecidedBy: "urn:flemma:approval:config ($default)"})
		if err != nil {
			fmt.Println("warning: running without the journal:", err)
		}
		// … the host dies here, before Finish(ctx, id, journal.Outcome{…}) …
		_ = id
	}

	// The next press in the buffer: the call started and never finished.
	unfinished, _ := j.Unfinished(ctx, buffer)
	for _, c := range unfinished {
		fmt.Printf("%s (%s) was interrupted\n", c.CallID, c.Tool)
		// The user chose :Flemma tool:discard.
		_ = j.Resolve(ctx, c.ID, journal.Discarded, "user")
	}
	started, _ := j.Started(ctx, buffer, "toolu_01", hash)
	fmt.Println("started before:", started)
	// Output:
	// toolu_01 (bash) was interrupted
	// started before: true
}
