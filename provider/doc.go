// Package provider holds the LLM HTTP clients of the send phase (Anthropic
// Messages, OpenAI Responses, Vertex/Gemini) and the scripted replay provider.
// It is the only package that talks HTTP.
package provider
