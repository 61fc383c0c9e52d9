-- The version the Lua side expects of the host; `make build` keeps them equal.
return "0.1.0"
