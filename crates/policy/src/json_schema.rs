//! Tool-argument validation with the maintained [`jsonschema`] crate, so
//! tool arguments are rejected before any effect runs.
//!
//! A tool's input schema is compiled once, when its catalog is built (once
//! per core revision, see `catalog::ResolvedCatalog::build`), into an
//! [`ArgumentSchema`]; each call only evaluates the compiled form.
//!
//! Compilation fails closed. A schema the validator cannot fully enforce is
//! an error, and the catalog lists that tool as unavailable with the reason
//! instead of accepting arguments unchecked:
//! * the schema must be valid against its meta-schema (default draft
//!   2020-12; `$schema` may pick another): `"type": "file"`,
//!   `"required": "x"`, `"minLength": -1` do not compile;
//! * every `pattern` / `patternProperties` key must compile as an ECMA-262
//!   regular expression (through `fancy-regex`, with its backtracking limit;
//!   a limit hit while validating is a validation error, not a pass);
//! * `format` is asserted, and an unknown format name does not compile;
//! * `$ref` resolves inside the schema (`#/$defs/…`, `#/definitions/…`,
//!   `$id` anchors); nothing is fetched from the network or the filesystem,
//!   so a remote reference does not compile.
//!
//! Errors name the offending field as a path from `arguments`:
//! `arguments.path: value is not of type "string"`,
//! `arguments: "content" is a required property`,
//! `arguments.items[2]: …`; keys that are not identifiers are bracketed
//! (`arguments["a b"]`). Messages never quote the argument values (they may
//! be secrets): the instance is shown as `value`. At most [`MAX_ERRORS`]
//! errors are kept.

use std::sync::Arc;

use serde_json::Value;

#[cfg(test)]
#[path = "json_schema_tests.rs"]
mod tests;

/// Errors kept per validation.
pub const MAX_ERRORS: usize = 50;

/// The root of every error path.
const ROOT: &str = "arguments";

/// A compiled tool input schema; cheap to clone.
#[derive(Clone, Debug)]
pub struct ArgumentSchema {
    validator: Arc<jsonschema::Validator>,
}

impl ArgumentSchema {
    /// Compile a schema, failing closed (see the module doc). The error
    /// names where in the schema compilation failed.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::options()
            .offline()
            .should_validate_formats(true)
            .should_ignore_unknown_formats(false)
            .build(schema)
            .map_err(|e| {
                let at = e.schema_path().as_str();
                let at = if at.is_empty() { "/" } else { at };
                format!("input schema does not compile at {at}: {e}")
            })?;
        Ok(Self {
            validator: Arc::new(validator),
        })
    }

    /// Validate tool `arguments`.
    pub fn validate(&self, value: &Value) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        let mut omitted = false;
        for error in self.validator.iter_errors(value) {
            if errors.len() == MAX_ERRORS {
                omitted = true;
                break;
            }
            let path = render_path(value, error.instance_path());
            errors.push(format!("{path}: {}", error.masked()));
        }
        if errors.is_empty() {
            return Ok(());
        }
        if omitted {
            errors.push("… further errors omitted".to_owned());
        }
        Err(errors)
    }
}

/// Compile and validate in one go (tests and one-off checks); a schema
/// that does not compile is reported as the only error.
pub fn validate(schema: &Value, value: &Value) -> Result<(), Vec<String>> {
    ArgumentSchema::compile(schema)
        .map_err(|e| vec![format!("{ROOT}: {e}")])?
        .validate(value)
}

/// `arguments.a.b[2]["x y"]`, following the instance so an all-digit object
/// key stays a key and only array positions become `[i]`.
fn render_path(root: &Value, location: &jsonschema::paths::Location) -> String {
    let mut out = ROOT.to_owned();
    let mut at = Some(root);
    for segment in location.segments() {
        let key = segment.to_string();
        match at {
            Some(Value::Array(items)) => {
                let index = key.parse::<usize>().ok();
                out.push_str(&format!("[{key}]"));
                at = index.and_then(|i| items.get(i));
            }
            other => {
                out.push_str(&key_suffix(&key));
                at = other.and_then(|v| v.get(&key));
            }
        }
    }
    out
}

fn key_suffix(key: &str) -> String {
    let identifier = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if identifier {
        format!(".{key}")
    } else {
        format!("[{}]", Value::String(key.to_owned()))
    }
}
