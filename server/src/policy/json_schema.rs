//! A small validator for the JSON-Schema subset used by tool input schemas,
//! so tool arguments are rejected before any effect runs.
//!
//! Supported keywords (`builtin_tools.json` uses `type`, `properties`,
//! `required`, `additionalProperties`, `enum`, `items`, `maxItems`, `pattern`,
//! `minimum`, `maximum`, `anyOf`, plus the ignored `default`/`description`):
//! * `type` – a name or an array of names: `null`, `boolean`, `object`,
//!   `array`, `string`, `number`, `integer`. `integer` accepts any number with
//!   a zero fractional part (`1`, `1.0`, `1e2`), as JSON Schema says, so
//!   handlers reading an integer argument must accept an integral float
//!   (`Value::as_i64` alone returns `None` for `2.0`); `number` accepts
//!   integers too;
//! * `properties`, `required`, `additionalProperties` (`false` or a schema;
//!   "additional" means not listed in `properties`);
//! * `enum`, `const` (numbers compare by value, so `1 == 1.0`);
//! * `items` (a schema, or an array of schemas = positional, older drafts),
//!   `minItems`, `maxItems`;
//! * `minLength`, `maxLength` (counted in Unicode scalar values), `pattern`;
//! * `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (number
//!   form; the draft-4 boolean form turns `minimum`/`maximum` exclusive);
//! * `anyOf`, `oneOf`, `allOf`, `not`;
//! * boolean schemas (`true` accepts anything, `false` nothing).
//!
//! Everything else is ignored: annotations (`default`, `description`,
//! `title`, `examples`, `format`, `$schema`, `$id`, `$comment`) and keywords
//! outside the subset (`$ref`/`$defs`, `patternProperties`, `multipleOf`,
//! `uniqueItems`, `minProperties`, `dependentRequired`, `if`/`then`/`else`,
//! …). Note that with `patternProperties` + `additionalProperties: false`,
//! keys matched only by a pattern are reported as unexpected.
//!
//! `pattern` is an ECMA-262 search (unanchored unless `^`/`$`) over a regex
//! subset implemented here: literals, `.`, escapes (`\d \D \w \W \s \S`,
//! `\t \n \r \f \v \0`, `\xHH`, `\uHHHH`, escaped punctuation), classes
//! `[...]`/`[^...]` with ranges, quantifiers `* + ? {n} {n,} {n,m}` (lazy
//! `?` suffix accepted), and `^`/`$` at the ends. Patterns using anything else
//! (groups, alternation, assertions, back-references, `^`/`$` in the middle)
//! are skipped, like an unknown keyword. Matching is linear in
//! `pattern pieces × string length` (no backtracking).
//!
//! A *known* keyword with a malformed value (`"required": "x"`,
//! `"type": "file"`, `"minLength": -1`, a non-object/non-boolean schema) is a
//! schema error, reported as `<path>: invalid schema: …` – a broken schema
//! fails closed instead of accepting everything. Keyword forms are checked
//! whenever their schema is evaluated, whatever the value's type; a
//! subschema is checked only when reached (a property schema when that
//! property is present, a failing `anyOf` branch inside the `anyOf` error).
//!
//! Errors name the JSON path from `arguments`: `arguments.path: expected
//! string, got number`, `arguments: missing required property "content"`,
//! `arguments: unexpected property "pth"`, `arguments.items[2]: …`; keys that
//! are not identifiers are bracketed (`arguments["a b"]`). Per schema the
//! order is: `type` (a mismatch stops there), `enum`/`const`, string, number
//! and array keywords (items in index order), `required` (schema order),
//! properties (sorted by key, independent of map ordering features), then
//! `allOf`/`anyOf`/`oneOf`/`not`. A failed `anyOf`/`oneOf` is one error that
//! lists each branch's errors.
//!
//! Robustness: never panics; schema nesting is bounded by [`MAX_DEPTH`],
//! value comparisons by [`MAX_VALUE_DEPTH`], total subschema evaluations by
//! [`MAX_STEPS`] (`schema is too complex to evaluate`); at most
//! [`MAX_ERRORS`] errors are kept (then `… further errors omitted`).

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

#[cfg(test)]
#[path = "json_schema_tests.rs"]
mod tests;

/// Deepest schema nesting followed before giving up with an error.
pub const MAX_DEPTH: usize = 64;
/// Deepest value nesting compared by `enum` / `const`.
pub const MAX_VALUE_DEPTH: usize = 128;
/// Errors kept per validation.
pub const MAX_ERRORS: usize = 50;
/// Subschema evaluations per validation (stops exponential `anyOf` nesting).
pub const MAX_STEPS: usize = 250_000;

const BUDGET_MESSAGE: &str = "schema is too complex to evaluate";
/// Longest rendering of one failed `anyOf`/`oneOf` branch in a message.
const BRANCH_MAX_CHARS: usize = 400;

/// Validate tool `arguments` against a tool input schema.
pub fn validate(schema: &Value, value: &Value) -> Result<(), Vec<String>> {
    validate_at(schema, value, "arguments")
}

/// [`validate`] with another name for the root of the error paths.
pub fn validate_at(schema: &Value, value: &Value, root: &str) -> Result<(), Vec<String>> {
    let mut v = Validator::default();
    v.check(schema, value, root, 0);
    v.finish(root)
}

// ---------------------------------------------------------------------------
// Validator

#[derive(Default)]
struct Validator {
    errors: Vec<String>,
    /// Errors were dropped after [`MAX_ERRORS`].
    truncated: bool,
    /// Subschema evaluations so far, shared with nested validators.
    steps: usize,
    /// [`MAX_STEPS`] was hit somewhere (also inside `anyOf`/`oneOf`/`not`).
    exhausted: bool,
}

impl Validator {
    fn finish(mut self, root: &str) -> Result<(), Vec<String>> {
        if self.exhausted && !self.errors.iter().any(|e| e.ends_with(BUDGET_MESSAGE)) {
            self.errors.truncate(MAX_ERRORS - 1);
            self.errors.push(format!("{root}: {BUDGET_MESSAGE}"));
        }
        if self.errors.is_empty() {
            return Ok(());
        }
        if self.truncated {
            self.errors.push("… further errors omitted".to_owned());
        }
        Err(self.errors)
    }

    fn full(&self) -> bool {
        self.errors.len() >= MAX_ERRORS
    }

    fn push(&mut self, path: &str, message: impl std::fmt::Display) {
        if self.full() {
            self.truncated = true;
        } else {
            self.errors.push(format!("{path}: {message}"));
        }
    }

    fn schema_error(&mut self, path: &str, message: impl std::fmt::Display) {
        self.push(path, format_args!("invalid schema: {message}"));
    }

    /// Run `schema` on `value` in a nested validator sharing the step budget;
    /// its errors.
    fn sub(&mut self, schema: &Value, value: &Value, path: &str, depth: usize) -> Vec<String> {
        let mut v = Validator {
            steps: self.steps,
            ..Validator::default()
        };
        v.check(schema, value, path, depth);
        self.steps = v.steps;
        self.exhausted |= v.exhausted;
        v.errors
    }

    fn check(&mut self, schema: &Value, value: &Value, path: &str, depth: usize) {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            if !self.exhausted {
                self.exhausted = true;
                self.push(path, BUDGET_MESSAGE);
            }
            return;
        }
        if depth > MAX_DEPTH {
            self.push(
                path,
                format_args!("schema nesting exceeds {MAX_DEPTH} levels"),
            );
            return;
        }
        let keywords = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                self.push(path, "no value is allowed here");
                return;
            }
            Value::Object(map) => map,
            other => {
                self.schema_error(
                    path,
                    format_args!("expected an object or boolean, got {}", type_name(other)),
                );
                return;
            }
        };

        if !self.check_type(keywords, value, path) {
            return;
        }
        self.check_enum_const(keywords, value, path);
        self.check_string(keywords, value, path);
        self.check_number(keywords, value, path);
        self.check_array(keywords, value, path, depth);
        self.check_object(keywords, value, path, depth);
        self.check_combinators(keywords, value, path, depth);
    }

    /// `false` when the type does not match (the other keywords are skipped).
    fn check_type(&mut self, keywords: &Map<String, Value>, value: &Value, path: &str) -> bool {
        let Some(spec) = keywords.get("type") else {
            return true;
        };
        let names: Vec<&str> = match spec {
            Value::String(name) => vec![name.as_str()],
            Value::Array(items) if !items.is_empty() => {
                let mut names = Vec::with_capacity(items.len());
                for item in items {
                    match item.as_str() {
                        Some(name) => names.push(name),
                        None => {
                            self.schema_error(path, "\"type\" entries must be strings");
                            return false;
                        }
                    }
                }
                names
            }
            _ => {
                self.schema_error(path, "\"type\" must be a string or a non-empty array");
                return false;
            }
        };
        let mut matched = false;
        for name in &names {
            match type_matches(name, value) {
                Some(true) => matched = true,
                Some(false) => {}
                None => {
                    self.schema_error(path, format_args!("unknown type {}", quote(name)));
                    return false;
                }
            }
        }
        if !matched {
            self.push(
                path,
                format_args!("expected {}, got {}", names.join(" or "), type_name(value)),
            );
        }
        matched
    }

    fn check_enum_const(&mut self, keywords: &Map<String, Value>, value: &Value, path: &str) {
        if let Some(spec) = keywords.get("enum") {
            match spec {
                Value::Array(options) => {
                    if !options.iter().any(|o| json_eq(o, value, 0)) {
                        self.push(
                            path,
                            format_args!(
                                "expected one of {}, got {}",
                                render_list(options),
                                render(value)
                            ),
                        );
                    }
                }
                _ => self.schema_error(path, "\"enum\" must be an array"),
            }
        }
        if let Some(expected) = keywords.get("const") {
            if !json_eq(expected, value, 0) {
                self.push(
                    path,
                    format_args!("expected {}, got {}", render(expected), render(value)),
                );
            }
        }
    }

    fn check_string(&mut self, keywords: &Map<String, Value>, value: &Value, path: &str) {
        let min = self.count_keyword(keywords, "minLength", path);
        let max = self.count_keyword(keywords, "maxLength", path);
        let pattern = match keywords.get("pattern") {
            None => None,
            Some(Value::String(p)) => Some(p.as_str()),
            Some(_) => {
                self.schema_error(path, "\"pattern\" must be a string");
                None
            }
        };
        let Value::String(s) = value else {
            return;
        };
        if min.is_some() || max.is_some() {
            let len = s.chars().count();
            if let Some(min) = min.filter(|&m| len < m) {
                self.push(
                    path,
                    format_args!("expected at least {min} characters, got {len}"),
                );
            }
            if let Some(max) = max.filter(|&m| len > m) {
                self.push(
                    path,
                    format_args!("expected at most {max} characters, got {len}"),
                );
            }
        }
        if let Some(source) = pattern {
            if let Some(compiled) = Pattern::parse(source) {
                if !compiled.is_match(s) {
                    self.push(
                        path,
                        format_args!("{} does not match pattern {}", render(value), quote(source)),
                    );
                }
            }
        }
    }

    fn check_number(&mut self, keywords: &Map<String, Value>, value: &Value, path: &str) {
        let mut bounds: Vec<(&Number, Bound)> = Vec::new();
        let exclusive_flag = |name: &str| matches!(keywords.get(name), Some(Value::Bool(true)));
        for (name, kind) in [
            ("minimum", Bound::Min),
            ("maximum", Bound::Max),
            ("exclusiveMinimum", Bound::ExclusiveMin),
            ("exclusiveMaximum", Bound::ExclusiveMax),
        ] {
            match keywords.get(name) {
                None => {}
                Some(Value::Number(n)) => {
                    let kind = match kind {
                        Bound::Min if exclusive_flag("exclusiveMinimum") => Bound::ExclusiveMin,
                        Bound::Max if exclusive_flag("exclusiveMaximum") => Bound::ExclusiveMax,
                        other => other,
                    };
                    bounds.push((n, kind));
                }
                // Draft-4 boolean form, handled above.
                Some(Value::Bool(_))
                    if matches!(kind, Bound::ExclusiveMin | Bound::ExclusiveMax) => {}
                Some(_) => {
                    self.schema_error(path, format_args!("{} must be a number", quote(name)))
                }
            }
        }
        let Value::Number(n) = value else {
            return;
        };
        for (limit, kind) in bounds {
            let Some(ordering) = cmp_numbers(n, limit) else {
                continue;
            };
            let (ok, op) = match kind {
                Bound::Min => (ordering != Ordering::Less, ">="),
                Bound::Max => (ordering != Ordering::Greater, "<="),
                Bound::ExclusiveMin => (ordering == Ordering::Greater, ">"),
                Bound::ExclusiveMax => (ordering == Ordering::Less, "<"),
            };
            if !ok {
                self.push(path, format_args!("expected {op} {limit}, got {n}"));
            }
        }
    }

    fn check_array(
        &mut self,
        keywords: &Map<String, Value>,
        value: &Value,
        path: &str,
        depth: usize,
    ) {
        let min = self.count_keyword(keywords, "minItems", path);
        let max = self.count_keyword(keywords, "maxItems", path);
        let items = keywords.get("items");
        if let Some(spec) = items {
            if !matches!(spec, Value::Object(_) | Value::Bool(_) | Value::Array(_)) {
                self.schema_error(path, "\"items\" must be a schema or an array of schemas");
            }
        }
        let Value::Array(elements) = value else {
            return;
        };
        let len = elements.len();
        if let Some(min) = min.filter(|&m| len < m) {
            self.push(
                path,
                format_args!("expected at least {min} items, got {len}"),
            );
        }
        if let Some(max) = max.filter(|&m| len > m) {
            self.push(
                path,
                format_args!("expected at most {max} items, got {len}"),
            );
        }
        match items {
            Some(Value::Array(positional)) => {
                for (index, (schema, element)) in positional.iter().zip(elements).enumerate() {
                    self.check(schema, element, &index_path(path, index), depth + 1);
                }
            }
            Some(schema @ (Value::Object(_) | Value::Bool(_))) => {
                for (index, element) in elements.iter().enumerate() {
                    if self.full() || self.exhausted {
                        self.truncated |= self.full();
                        break;
                    }
                    self.check(schema, element, &index_path(path, index), depth + 1);
                }
            }
            _ => {}
        }
    }

    fn check_object(
        &mut self,
        keywords: &Map<String, Value>,
        value: &Value,
        path: &str,
        depth: usize,
    ) {
        let required: Vec<&str> = match keywords.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => {
                let strings: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
                if strings.len() != names.len() {
                    self.schema_error(path, "\"required\" must be an array of strings");
                }
                strings
            }
            Some(_) => {
                self.schema_error(path, "\"required\" must be an array of strings");
                Vec::new()
            }
        };
        let properties = match keywords.get("properties") {
            None => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => {
                self.schema_error(path, "\"properties\" must be an object");
                None
            }
        };
        let additional = match keywords.get("additionalProperties") {
            None => None,
            Some(spec @ (Value::Object(_) | Value::Bool(_))) => Some(spec),
            Some(_) => {
                self.schema_error(path, "\"additionalProperties\" must be a schema");
                None
            }
        };
        let Value::Object(object) = value else {
            return;
        };
        for name in required {
            if !object.contains_key(name) {
                self.push(
                    path,
                    format_args!("missing required property {}", quote(name)),
                );
            }
        }
        let mut keys: Vec<&String> = object.keys().collect();
        keys.sort();
        for key in keys {
            let Some(child) = object.get(key) else {
                continue;
            };
            match properties.and_then(|p| p.get(key)) {
                Some(schema) => self.check(schema, child, &key_path(path, key), depth + 1),
                None => match additional {
                    Some(Value::Bool(false)) => {
                        self.push(path, format_args!("unexpected property {}", quote(key)));
                    }
                    Some(schema) => self.check(schema, child, &key_path(path, key), depth + 1),
                    None => {}
                },
            }
        }
    }

    fn check_combinators(
        &mut self,
        keywords: &Map<String, Value>,
        value: &Value,
        path: &str,
        depth: usize,
    ) {
        if let Some(spec) = keywords.get("allOf") {
            match non_empty_array(spec) {
                Some(branches) => {
                    for branch in branches {
                        self.check(branch, value, path, depth + 1);
                    }
                }
                None => self.schema_error(path, "\"allOf\" must be a non-empty array"),
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            let Some(spec) = keywords.get(keyword) else {
                continue;
            };
            let Some(branches) = non_empty_array(spec) else {
                self.schema_error(
                    path,
                    format_args!("{} must be a non-empty array", quote(keyword)),
                );
                continue;
            };
            let mut failures: Vec<String> = Vec::new();
            let mut matches = 0usize;
            for (index, branch) in branches.iter().enumerate() {
                let errors = self.sub(branch, value, path, depth + 1);
                if errors.is_empty() {
                    matches += 1;
                    if keyword == "anyOf" {
                        break;
                    }
                } else {
                    failures.push(truncate_to(
                        format!("branch {index}: {}", errors.join("; ")),
                        BRANCH_MAX_CHARS,
                    ));
                }
            }
            if matches == 0 {
                self.push(
                    path,
                    format_args!(
                        "does not match any schema in {keyword} ({})",
                        failures.join(" | ")
                    ),
                );
            } else if keyword == "oneOf" && matches > 1 {
                self.push(
                    path,
                    format_args!("matches {matches} schemas in oneOf, expected exactly one"),
                );
            }
        }
        if let Some(spec) = keywords.get("not") {
            if !matches!(spec, Value::Object(_) | Value::Bool(_)) {
                self.schema_error(path, "\"not\" must be a schema");
            } else if self.sub(spec, value, path, depth + 1).is_empty() {
                self.push(path, "must not match the schema in \"not\"");
            }
        }
    }

    /// A non-negative integer keyword (`minLength`, `maxItems`, …).
    fn count_keyword(
        &mut self,
        keywords: &Map<String, Value>,
        name: &str,
        path: &str,
    ) -> Option<usize> {
        let spec = keywords.get(name)?;
        let count = match spec {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f.min(u64::MAX as f64) as u64)
            }),
            _ => None,
        };
        match count {
            Some(c) => Some(usize::try_from(c).unwrap_or(usize::MAX)),
            None => {
                self.schema_error(
                    path,
                    format_args!("{} must be a non-negative integer", quote(name)),
                );
                None
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Bound {
    Min,
    Max,
    ExclusiveMin,
    ExclusiveMax,
}

fn non_empty_array(spec: &Value) -> Option<&Vec<Value>> {
    match spec {
        Value::Array(items) if !items.is_empty() => Some(items),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Values

/// `Some(matches)` for a known type name, `None` for an unknown one.
fn type_matches(name: &str, value: &Value) -> Option<bool> {
    Some(match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => matches!(value, Value::Number(n) if is_integral(n)),
        _ => return None,
    })
}

fn is_integral(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn cmp_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (as_i128(a), as_i128(b)) {
        return Some(x.cmp(&y));
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}

/// JSON equality with numbers compared by value; unequal beyond
/// [`MAX_VALUE_DEPTH`].
fn json_eq(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_VALUE_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => cmp_numbers(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q, depth + 1))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| json_eq(p, q, depth + 1)))
        }
        _ => false,
    }
}

const RENDER_MAX_CHARS: usize = 80;
const RENDER_MAX_OPTIONS: usize = 20;

/// A short rendering of a value for messages (scalars as JSON, containers by
/// type; never recursive).
fn render(value: &Value) -> String {
    let text = match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(map) => format!("an object with {} properties", map.len()),
    };
    truncate(text)
}

fn render_list(options: &[Value]) -> String {
    let mut shown: Vec<String> = options
        .iter()
        .take(RENDER_MAX_OPTIONS)
        .map(render)
        .collect();
    if options.len() > RENDER_MAX_OPTIONS {
        shown.push(format!("… ({} more)", options.len() - RENDER_MAX_OPTIONS));
    }
    shown.join(", ")
}

fn truncate(text: String) -> String {
    truncate_to(text, RENDER_MAX_CHARS)
}

fn truncate_to(text: String, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text;
    }
    let mut short: String = text.chars().take(limit).collect();
    short.push('…');
    short
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

fn key_path(path: &str, key: &str) -> String {
    let mut chars = key.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ident {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", quote(key))
    }
}

fn index_path(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

// ---------------------------------------------------------------------------
// Pattern subset

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClassItem {
    Range(char, char),
    Digit(bool),
    Word(bool),
    Space(bool),
}

impl ClassItem {
    fn matches(self, c: char) -> bool {
        match self {
            ClassItem::Range(lo, hi) => lo <= c && c <= hi,
            ClassItem::Digit(negated) => c.is_ascii_digit() != negated,
            ClassItem::Word(negated) => (c.is_ascii_alphanumeric() || c == '_') != negated,
            ClassItem::Space(negated) => is_ecma_space(c) != negated,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    /// `.`: anything but a line terminator.
    Any,
    Char(char),
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
}

impl Atom {
    fn matches(&self, c: char) -> bool {
        match self {
            Atom::Any => !matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}'),
            Atom::Char(x) => *x == c,
            Atom::Class { negated, items } => items.iter().any(|i| i.matches(c)) != *negated,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece {
    atom: Atom,
    min: usize,
    max: Option<usize>,
}

/// A compiled pattern of the supported subset.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    anchored_start: bool,
    anchored_end: bool,
    pieces: Vec<Piece>,
}

/// Upper bound for `{n,m}` counts.
const MAX_REPEAT: usize = 100_000;

fn is_ecma_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

impl Pattern {
    /// `None` when the pattern uses syntax outside the subset (or is invalid).
    fn parse(source: &str) -> Option<Pattern> {
        let chars: Vec<char> = source.chars().collect();
        let mut i = 0;
        let mut anchored_start = false;
        let mut anchored_end = false;
        if chars.first() == Some(&'^') {
            anchored_start = true;
            i = 1;
        }
        let mut pieces = Vec::new();
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            let atom = match c {
                '$' if i == chars.len() => {
                    anchored_end = true;
                    break;
                }
                '^' | '$' | '(' | ')' | '|' | '*' | '+' | '?' | '{' => return None,
                '.' => Atom::Any,
                '[' => parse_class(&chars, &mut i)?,
                '\\' => match parse_escape(&chars, &mut i, false)? {
                    Escaped::Char(x) => Atom::Char(x),
                    Escaped::Set(item) => Atom::Class {
                        negated: false,
                        items: vec![item],
                    },
                },
                other => Atom::Char(other),
            };
            let (min, max) = parse_quantifier(&chars, &mut i)?;
            pieces.push(Piece { atom, min, max });
        }
        Some(Pattern {
            anchored_start,
            anchored_end,
            pieces,
        })
    }

    /// ECMA-262 `RegExp.prototype.test` semantics for the subset.
    fn is_match(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let n = chars.len();
        // reachable[p]: the pieces so far can end at position p.
        let mut reachable = vec![!self.anchored_start; n + 1];
        reachable[0] = true;
        for piece in &self.pieces {
            // prefix[k] = number of reachable positions < k.
            let mut prefix = vec![0usize; n + 2];
            for p in 0..=n {
                prefix[p + 1] = prefix[p] + usize::from(reachable[p]);
            }
            let mut next = vec![false; n + 1];
            // First start position of the current run of matching characters.
            let mut run_start = 0usize;
            for (q, slot) in next.iter_mut().enumerate() {
                if q > 0 && !piece.atom.matches(chars[q - 1]) {
                    run_start = q;
                }
                // Need a reachable p with run_start <= p, q - max <= p <= q - min.
                let Some(hi) = q.checked_sub(piece.min) else {
                    continue;
                };
                let lo = match piece.max {
                    Some(max) => run_start.max(q.saturating_sub(max)),
                    None => run_start,
                };
                if lo <= hi && prefix[hi + 1] > prefix[lo] {
                    *slot = true;
                }
            }
            reachable = next;
        }
        if self.anchored_end {
            reachable[n]
        } else {
            reachable.iter().any(|&r| r)
        }
    }
}

enum Escaped {
    Char(char),
    Set(ClassItem),
}

/// After a `\`; `in_class` makes `\b` a backspace.
fn parse_escape(chars: &[char], i: &mut usize, in_class: bool) -> Option<Escaped> {
    let c = *chars.get(*i)?;
    *i += 1;
    let escaped = match c {
        'd' => Escaped::Set(ClassItem::Digit(false)),
        'D' => Escaped::Set(ClassItem::Digit(true)),
        'w' => Escaped::Set(ClassItem::Word(false)),
        'W' => Escaped::Set(ClassItem::Word(true)),
        's' => Escaped::Set(ClassItem::Space(false)),
        'S' => Escaped::Set(ClassItem::Space(true)),
        't' => Escaped::Char('\t'),
        'n' => Escaped::Char('\n'),
        'r' => Escaped::Char('\r'),
        'f' => Escaped::Char('\u{0C}'),
        'v' => Escaped::Char('\u{0B}'),
        'b' if in_class => Escaped::Char('\u{08}'),
        '0' if !chars.get(*i).is_some_and(char::is_ascii_digit) => Escaped::Char('\0'),
        'x' => Escaped::Char(parse_hex(chars, i, 2)?),
        'u' => Escaped::Char(parse_hex(chars, i, 4)?),
        '-' if in_class => Escaped::Char('-'),
        // Assertions, back-references, control/property escapes, and identity
        // escapes of letters or digits are outside the subset.
        other if other.is_ascii_alphanumeric() => return None,
        other => Escaped::Char(other),
    };
    Some(escaped)
}

fn parse_hex(chars: &[char], i: &mut usize, digits: usize) -> Option<char> {
    let end = i.checked_add(digits)?;
    let digits_slice = chars.get(*i..end)?;
    if !digits_slice.iter().all(char::is_ascii_hexdigit) {
        return None;
    }
    let hex: String = digits_slice.iter().collect();
    let code = u32::from_str_radix(&hex, 16).ok()?;
    *i = end;
    char::from_u32(code)
}

/// After a `[`.
fn parse_class(chars: &[char], i: &mut usize) -> Option<Atom> {
    let mut negated = false;
    if chars.get(*i) == Some(&'^') {
        negated = true;
        *i += 1;
    }
    let mut items = Vec::new();
    loop {
        let c = *chars.get(*i)?;
        *i += 1;
        if c == ']' {
            return Some(Atom::Class { negated, items });
        }
        let first = class_atom(chars, i, c)?;
        let is_range = chars.get(*i) == Some(&'-') && chars.get(*i + 1).is_some_and(|&n| n != ']');
        if is_range {
            *i += 1;
            let c2 = *chars.get(*i)?;
            *i += 1;
            let second = class_atom(chars, i, c2)?;
            match (first, second) {
                (Escaped::Char(lo), Escaped::Char(hi)) if lo <= hi => {
                    items.push(ClassItem::Range(lo, hi));
                }
                _ => return None,
            }
        } else {
            items.push(match first {
                Escaped::Char(x) => ClassItem::Range(x, x),
                Escaped::Set(set) => set,
            });
        }
    }
}

fn class_atom(chars: &[char], i: &mut usize, c: char) -> Option<Escaped> {
    match c {
        '\\' => parse_escape(chars, i, true),
        '[' => None,
        other => Some(Escaped::Char(other)),
    }
}

/// An optional quantifier after an atom: `(min, max)`.
fn parse_quantifier(chars: &[char], i: &mut usize) -> Option<(usize, Option<usize>)> {
    let bounds = match chars.get(*i) {
        Some('*') => {
            *i += 1;
            (0, None)
        }
        Some('+') => {
            *i += 1;
            (1, None)
        }
        Some('?') => {
            *i += 1;
            (0, Some(1))
        }
        Some('{') => {
            let close = chars[*i..].iter().position(|&c| c == '}')? + *i;
            let body: String = chars[*i + 1..close].iter().collect();
            let (min, max) = match body.split_once(',') {
                None => {
                    let n = parse_count(&body)?;
                    (n, Some(n))
                }
                Some((lo, "")) => (parse_count(lo)?, None),
                Some((lo, hi)) => (parse_count(lo)?, Some(parse_count(hi)?)),
            };
            if max.is_some_and(|m| m < min) {
                return None;
            }
            *i = close + 1;
            (min, max)
        }
        _ => return Some((1, Some(1))),
    };
    // Lazy suffix: irrelevant for a yes/no match.
    if chars.get(*i) == Some(&'?') {
        *i += 1;
    }
    Some(bounds)
}

fn parse_count(digits: &str) -> Option<usize> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse::<usize>().ok().filter(|&n| n <= MAX_REPEAT)
}
