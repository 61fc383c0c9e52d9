// Package tools is the core of the tool runtime: the Tool interface and its
// Spec, the Registry of Go built-ins and Lua-registered tools under one
// namespace, Typed (a built-in's input struct is the source of its JSON
// Schema), the Executor (schema validation, timeouts, cancellation, panic
// containment, error scrubbing, truncation) and Env, the per-call
// configuration of the built-ins. The built-ins themselves are in
// tools/builtin, the confinement they run under in tools/sandbox; the
// approval policy that decides whether a call runs is in package approval.
//
// Lifecycle of a tool, in order:
//
//  1. declared: a built-in with Typed (panics at start-up if misdefined), or a
//     Lua definition received from Neovim;
//  2. registered: Registry.Add checks the name and duplicates;
//  3. selected: Registry.Lookup hides tools whose requirements are missing
//     (Registry.Have, which the host sets to sandbox.HaveRequirement:
//     "exe:<name>", "feature:sandbox", "feature:bwrap", "feature:network",
//     features the host declares);
//  4. run: Executor.Run validates the input, enforces the timeout, recovers
//     panics, validates structured output against output_schema, and turns
//     every failure into a Result the model can read; after calls that
//     allocated much (a large output), the last one to end returns the
//     memory to the system (Executor.ReleaseAfter).
//
// A tool's capabilities are names in its Spec (CapSideEffects,
// CapSandboxed), the form Lua tools declare them in; docs/design.md says
// why they are not Go interfaces.
//
// Tool chains (chain.go): a ChainSpec names ordered steps, each a tool
// and an input template over the chain's input and the earlier steps'
// outputs ({{ input.x }}, {{ steps.y.output }}); CompileChain validates it
// and Chain.Run runs the steps through a caller's StepRunner (the engine's,
// which decides each step's approval and runs it with the executor),
// stopping at the first that is not ok.
//
// Output: Finish strips terminal control sequences (buffer.Sanitize) and
// replaces the values of secret variables by [redacted] (Redact) before any
// text enters the buffer; the executor calls it on every result.
package tools
