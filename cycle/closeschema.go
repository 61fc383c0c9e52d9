package cycle

// Lua tools' object schemas are closed by default (issue 28 item 8; seed
// 000: "additionalProperties: false is automatic"): every object schema
// that names its properties and says nothing of others gets
// additionalProperties = false, so a call with a field the schema never
// named is a ToolValidationError the model can correct, as for the Go
// built-ins. A definition with open_schema = true keeps its schema as
// written; a schema that sets additionalProperties itself (true, or a
// schema) is never changed.

// closeSchema closes s and the object schemas inside it, in place.
func closeSchema(s map[string]any) {
	if s == nil {
		return
	}
	if _, named := s["properties"].(map[string]any); named {
		if _, said := s["additionalProperties"]; !said {
			s["additionalProperties"] = false
		}
	}
	for k, v := range s {
		switch k {
		case "properties", "patternProperties", "$defs", "definitions":
			if m, ok := v.(map[string]any); ok {
				for _, sub := range m {
					if sm, ok := sub.(map[string]any); ok {
						closeSchema(sm)
					}
				}
			}
		case "items", "additionalProperties", "not", "if", "then", "else":
			if sm, ok := v.(map[string]any); ok {
				closeSchema(sm)
			}
		case "anyOf", "oneOf", "allOf", "prefixItems":
			if list, ok := v.([]any); ok {
				for _, e := range list {
					if sm, ok := e.(map[string]any); ok {
						closeSchema(sm)
					}
				}
			}
		}
	}
}
