module github.com/flemma-dev/flemma

go 1.24

require (
	github.com/bmatcuk/doublestar/v4 v4.9.1 // indirect
	github.com/google/jsonschema-go v0.3.0 // indirect
	github.com/google/shlex v0.0.0-20191202100458-e7afc7fbc510 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/neovim/go-client v1.2.1 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/yuin/gopher-lua v1.1.2 // indirect
	golang.org/x/text v0.14.0 // indirect
)
