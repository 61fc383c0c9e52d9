-- luacheck configuration for the plugin's Lua (make lint).
std = "luajit"
globals = { "vim" }
max_line_length = false
