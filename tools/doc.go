// Package tools holds the tool runtime: the registry of Go built-ins and
// Lua-registered tools under one namespace, the typed declaration of built-ins
// (the input struct is the source of the JSON Schema), the executor (schema
// validation, timeouts, cancellation, panic containment, error scrubbing) and
// the built-in tools themselves.
//
// Lifecycle of a tool, in order:
//
//  1. declared: a built-in with Typed (panics at start-up if misdefined), or a
//     Lua definition received from Neovim;
//  2. registered: Registry.Add checks the name and duplicates;
//  3. selected: Registry.Lookup hides tools whose requirements are missing;
//  4. run: Executor.Run validates the input, enforces the timeout, recovers
//     panics, and turns every failure into a Result the model can read.
//
// It is the only package (with provider) that touches the filesystem or starts
// processes.
package tools
