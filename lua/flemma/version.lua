-- The version the Lua side expects of the host (cmd/flemma-host says the
-- same; TestVersionMatchesTheLuaSide checks it).
return "0.1.0"
