//! Turn scripts for the fake provider: `{"content": "text"}` or
//! `{"tool_calls": [{"name": "...", "arguments": {...}}]}` per model step.

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptStep {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptCall>,
}

/// Most steps a script may carry.
pub const MAX_STEPS: usize = 256;

/// What starts a script written in the user text itself (CONTRACT.md).
pub use crate::wire::SCRIPT_INPUT_PREFIX as INPUT_PREFIX;

/// A script written in the user text: `script:` followed by a JSON array of
/// steps. `None` when the text is not one; `Some(Err)` names what is wrong.
pub fn from_input(input: &str) -> Option<Result<Vec<ScriptStep>, String>> {
    let rest = input.trim_start().strip_prefix(INPUT_PREFIX)?;
    Some(
        serde_json::from_str::<Value>(rest.trim())
            .map_err(|e| format!("the text after `script:` is not JSON: {e}"))
            .and_then(|v| parse(&v)),
    )
}

/// Parse a script from the request body, naming the bad step.
pub fn parse(v: &Value) -> Result<Vec<ScriptStep>, String> {
    let arr = v.as_array().ok_or("script must be an array of steps")?;
    if arr.len() > MAX_STEPS {
        return Err(format!(
            "script has {} steps; at most {MAX_STEPS}",
            arr.len()
        ));
    }
    let mut out = Vec::with_capacity(arr.len());
    for (i, step) in arr.iter().enumerate() {
        let s: ScriptStep =
            serde_json::from_value(step.clone()).map_err(|e| format!("script step {i}: {e}"))?;
        if s.content.is_none() && s.tool_calls.is_empty() {
            return Err(format!("script step {i}: needs `content` or `tool_calls`"));
        }
        for (j, c) in s.tool_calls.iter().enumerate() {
            if c.name.trim().is_empty() {
                return Err(format!("script step {i} call {j}: empty tool name"));
            }
            if !c.arguments.is_object() {
                return Err(format!(
                    "script step {i} call {j}: arguments must be an object"
                ));
            }
        }
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_content_and_tool_calls() {
        let s = parse(&json!([{"tool_calls":[{"name":"read_file","arguments":{"path":"a"}}]},{"content":"done"}])).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].tool_calls[0].name, "read_file");
        assert_eq!(s[1].content.as_deref(), Some("done"));
    }

    #[test]
    fn arguments_default_to_empty_object() {
        let s = parse(&json!([{"tool_calls":[{"name":"tools_list"}]}])).unwrap();
        assert_eq!(s[0].tool_calls[0].arguments, json!({}));
    }

    #[test]
    fn rejects_bad_shapes_with_the_step_named() {
        for (bad, needle) in [
            (json!({"content":"x"}), "array"),
            (json!([{}]), "step 0"),
            (json!([{"content":"a"},{"bogus":1}]), "step 1"),
            (json!([{"tool_calls":[{"name":""}]}]), "empty tool name"),
            (
                json!([{"tool_calls":[{"name":"x","arguments":[1]}]}]),
                "object",
            ),
            (json!([{"tool_calls":"x"}]), "step 0"),
        ] {
            let e = parse(&bad).unwrap_err();
            assert!(e.contains(needle), "{bad} -> {e}");
        }
        let long = Value::Array(vec![json!({"content":"x"}); MAX_STEPS + 1]);
        assert!(parse(&long).is_err());
    }

    #[test]
    fn reads_a_script_written_in_the_user_text() {
        let s = from_input(r#"script:[{"content":"a"},{"tool_calls":[{"name":"x"}]}]"#)
            .unwrap()
            .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].content.as_deref(), Some("a"));
        assert_eq!(s[1].tool_calls[0].name, "x");
        // Leading space and whitespace around the JSON are fine.
        let s = from_input(" script:\n [ {\"content\":\"b\"} ]\n")
            .unwrap()
            .unwrap();
        assert_eq!(s[0].content.as_deref(), Some("b"));
    }

    #[test]
    fn plain_text_is_not_a_script() {
        for text in [
            "hello",
            "",
            "Script:[]",
            "a script:[{\"content\":\"x\"}]",
            "scripts:[]",
        ] {
            assert!(from_input(text).is_none(), "{text}");
        }
    }

    #[test]
    fn a_bad_script_in_the_text_names_the_problem() {
        for (text, needle) in [
            ("script:", "not JSON"),
            ("script:[{", "not JSON"),
            ("script:{\"content\":\"x\"}", "array"),
            ("script:[{}]", "step 0"),
            (
                "script:[{\"tool_calls\":[{\"name\":\"\"}]}]",
                "empty tool name",
            ),
        ] {
            let e = from_input(text).unwrap().unwrap_err();
            assert!(e.contains(needle), "{text} -> {e}");
        }
    }
}
