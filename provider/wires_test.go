package provider

import (
	"slices"
	"testing"
)

// The registry is what New, Wires, Names, DefaultKeySource and Signer
// read: each wire's file registers its own.
func TestWireRegistry(t *testing.T) {
	if got, want := Wires(), []string{"anthropic", "chat_completions", "gemini", "openai", "vertex"}; !slices.Equal(got, want) {
		t.Errorf("Wires() = %v, want %v", got, want)
	}
	if got, want := Names(), []string{"anthropic", "copilot", "gemini", "openai", "replay", "vertex"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if k := DefaultKeySource("responses"); len(k.Env) != 0 {
		t.Errorf("an alias has a built-in's key source: %+v", k)
	}
	k := DefaultKeySource("gemini")
	k.Env[0] = "MUTATED"
	if DefaultKeySource("gemini").Env[0] != "GEMINI_API_KEY" {
		t.Error("DefaultKeySource returned the registry's own slice")
	}
	if Signer("x", "responses") != "openai" || Signer("my-server", "chat_completions") != "myserver" {
		t.Errorf("Signer: %q %q", Signer("x", "responses"), Signer("my-server", "chat_completions"))
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a second wire of the same name was registered")
			}
		}()
		registerWire(Wire{Name: "vertex"})
	}()
	if _, err := New("nope", Config{}); err == nil || err.Error() != `unknown provider "nope" (known: anthropic, copilot, gemini, openai, replay, vertex)` {
		t.Errorf("New(nope) = %v", err)
	}
	if _, err := New("mine", Config{Wire: "carrier_pigeon"}); err == nil || err.Error() != `provider mine: unknown wire "carrier_pigeon" (known: anthropic, chat_completions, gemini, openai, vertex)` {
		t.Errorf("New(mine, carrier_pigeon) = %v", err)
	}
}
