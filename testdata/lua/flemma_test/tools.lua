-- A tool module for the end-to-end tests (tools.modules = { "flemma_test.tools" }).
return {
  definitions = {
    {
      name = "shout",
      description = "Upper-case a word",
      input_schema = {
        type = "object",
        properties = { word = { type = "string", description = "the word" } },
        required = { "word" },
        additionalProperties = false,
      },
      execute = function(input)
        return { success = true, output = input.word:upper() }
      end,
    },
  },
}
