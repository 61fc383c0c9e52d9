-- An approval module for the end-to-end tests (tools.auto_approve = "flemma_test.approval").
return {
  resolve = function(tool_name, input)
    if tool_name == "calculator" and input.expression == "6*7" then
      return "deny"
    end
    return nil
  end,
}
