-- Per-buffer settings for a refactoring session
flemma.opt.provider = "anthropic"
flemma.opt.model = "claude-sonnet-4-5"
flemma.opt.thinking = "medium"
flemma.opt.temperature = 0.3
flemma.opt.max_tokens = 8000
flemma.opt.cache_retention = "long"
flemma.opt.anthropic.thinking_budget = 20000

flemma.opt.tools:remove("bash")
flemma.opt.tools:append("calculator")
flemma.opt.tools.auto_approve = { "$default" }
flemma.opt.tools.auto_approve:remove("write")
flemma.opt.tools.autopilot = { enabled = true, max_turns = 20 }
flemma.opt.tools.max_concurrent = 4

project = "flemma"
owner = { name = "Ada", team = "core" }
goals = { "split the parser", "keep the tests green" }
summary = string.format("%s: %d goals", project, #goals)
