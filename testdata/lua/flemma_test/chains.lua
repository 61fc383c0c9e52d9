-- A tools.modules module that exports tool chains (e2e/toolchain_test.go).
return {
  chains = {
    {
      name = "calc_twice",
      description = "Compute an expression, then double the result",
      input_schema = {
        type = "object",
        properties = { expr = { type = "string" } },
        required = { "expr" },
      },
      steps = {
        { name = "first", tool = "calculator", input = { expression = "{{ input.expr }}" } },
        { name = "again", tool = "calculator", input = { expression = "({{ steps.first.output }}) * 2" } },
      },
    },
  },
}
