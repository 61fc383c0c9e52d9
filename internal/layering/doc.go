// Package layering holds only a test: it checks that dependencies point one
// way (STYLE.md), from one table of every package and the packages of ours
// it may import — the pure packages import no I/O, no processes, no
// networking and no Neovim client; only rpc talks to Neovim, only provider
// talks HTTP (and mcp, through the MCP SDK's streamable HTTP client).
package layering
