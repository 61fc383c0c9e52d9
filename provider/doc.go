// Package provider holds the LLM HTTP clients of the send phase (Anthropic
// Messages, OpenAI Responses, Vertex/Gemini) and the scripted replay provider.
// It is the only package that talks HTTP. Everything here is plain Go: no
// Neovim.
//
// # A send, start to end
//
//  1. FromDocument turns a parsed buffer into the provider-neutral
//     conversation (system prompt and messages). It refuses, with a
//     *BlockError per block naming its line, while any tool use lacks a
//     completed result.
//  2. New("anthropic" | "openai" | "vertex" | "replay", Config) gives a
//     Provider; Stream(ctx, Request, emit) posts the request and calls emit
//     for each Event as the SSE stream is parsed: text deltas at once,
//     thinking deltas (progress), complete tool calls (arguments are
//     accumulated and validated, never streamed piecemeal), thinking
//     signatures, usage, and done.
//  3. A Writer turns those events into the buffer lines of the response
//     (send.md §4): "@Assistant:", the text, Tool Use blocks, thinking blocks
//     with their signatures at the end, then the "@You:" prompt.
//
// # Applying the Writer to the buffer (for the cycle package)
//
// At send start, record R = the buffer's line count and call
// NewWriter(last line(s) of the buffer). Show w.Lines() at once (the
// "@Assistant:" placeholder, with a blank line before it when the last line
// is not blank). While streaming, coalesce events and flush at most every
// 16 ms (and after a tool_use event): the region [R, end) of the buffer is
// always exactly the last Lines() written. Lines only grow, and only their
// last line can change, so a flush may replace just [R+len(prev)-1, end)
// with Lines()[len(prev)-1:]. When Stream returns, replace the whole region
// [R, end) with:
//
//   - nil error: w.Finish(false) — thinking, then "", "@You:", "";
//   - context.Canceled (the user's <C-c>): w.Finish(true) — adds
//     "<!-- flemma:aborted: Response interrupted by the user. -->" and the
//     prompt when something was written;
//   - another error: w.FinishError(err) — same, with the error in the
//     marker — and show err (an *Error) as the notification.
//
// Any of them returns no lines when nothing was written: the placeholder
// goes and the buffer is as before the send. The buffer should stay
// non-modifiable while streaming so R stays valid.
//
// # Errors
//
// Stream returns context.Canceled unchanged on cancel; everything else is an
// *Error whose Error() reads "anthropic: 401 invalid x-api-key": the HTTP
// status, then the provider's message extracted from JSON error bodies, the
// title or first text of HTML pages, or plain text; in-stream error events,
// blocked responses, timeouts (errors.Is context.DeadlineExceeded) and
// connection failures read the same way. Retryable and RetryAfter tell
// whether trying again later may help. The credential is never in a message.
//
// # Wire details
//
// Request bodies have sorted keys with the big parts last (Anthropic
// system, tools, messages; OpenAI tools, input; Vertex tools, contents) so
// consecutive requests share a byte prefix for prompt caching, and no HTML
// escaping. Tool names with ':' travel as "__" and are decoded back; tool
// ids that are not [A-Za-z0-9_-]{1,64} are made so for Anthropic and
// OpenAI, with a hash so that two ids never become one. Thinking
// signatures round-trip only to the provider that made them (OpenAI's is
// the base64 of its reasoning item, encrypted content included;
// Anthropic's thinking is written byte for byte, or carried inside the
// signature when the buffer cannot hold it as it is); other providers'
// thinking is sent as "<thinking>…</thinking>" text, Anthropic's thinking
// is left off for a tool loop another provider started, and Gemini 3 gets
// the documented placeholder signature on calls it did not make. An empty
// tool result is sent as "(no output)" or "(error without message)". Tool
// inputs are written on one line in the .chat style ({"path": ".",
// "label": "listing"}) whatever the provider sent.
//
// # Models
//
// Each body is built for its model (models.go): the thinking form, the
// effort words, max_tokens within the output limit and a budget below it,
// temperature only where the model takes it. LookupModel finds the
// catalogue entry (with setup's models = {…} on top; Request.ModelInfo
// carries the result); an unknown model gets max_tokens 8,192 and no
// thinking parameter.
//
// The replay provider and its script format are described in replay.go.
package provider
