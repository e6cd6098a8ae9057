//! Text detection: secrets found inside free text by shape (URL userinfo and
//! queries, `Authorization:`/`Bearer`, secret headers, `key=value` pairs,
//! command options, well-known token shapes, exception heuristics).

use super::*;

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;

/// Header names (lower case) whose `Name: value` value is a secret.
const SECRET_HEADER_NAMES: &[&str] = &[
    "api-key",
    "apikey",
    "cookie",
    "private-token",
    "set-cookie",
    "x-access-token",
    "x-api-key",
    "x-api-token",
    "x-auth-token",
    "x-goog-api-key",
    "x-vault-token",
];

/// Authorization schemes (lower case) that precede the credential.
pub(super) const AUTH_SCHEMES: &[&str] = &[
    "api-key",
    "apikey",
    "aws4-hmac-sha256",
    "basic",
    "bearer",
    "bot",
    "digest",
    "dpop",
    "hmac",
    "jwt",
    "key",
    "mac",
    "negotiate",
    "ntlm",
    "oauth",
    "sso-key",
    "token",
];

/// Lower-case words after which exception text may quote a secret.
const EXCEPTION_WORDS: &[&str] = &[
    "access key",
    "api key",
    "api-key",
    "api_key",
    "apikey",
    "credential",
    "passphrase",
    "passwd",
    "password",
    "secret key",
    "secret",
    "token",
];

pub(super) struct Hit {
    /// Byte span in the scanned string, or `None` for derived values
    /// (percent-decoded, Basic-decoded) that are only used globally.
    pub(super) span: Option<(usize, usize)>,
    pub(super) found: Discovered,
}

pub(super) struct Scan<'a> {
    pub(super) s: &'a str,
    pub(super) b: &'a [u8],
    pub(super) lower: String,
    pub(super) location: &'a str,
    pub(super) hits: Vec<Hit>,
    pub(super) spans: HashSet<(usize, usize)>,
}

impl<'a> Scan<'a> {
    pub(super) fn new(s: &'a str, location: &'a str) -> Scan<'a> {
        Scan {
            s,
            b: s.as_bytes(),
            lower: s.to_ascii_lowercase(),
            location,
            hits: Vec::new(),
            spans: HashSet::new(),
        }
    }

    fn push_span(&mut self, start: usize, end: usize, source: SecretSource) -> bool {
        let value = sub(self.s, start, end);
        if value.is_empty() || is_ignorable_value(value) {
            return false;
        }
        if !self.spans.insert((start, end)) {
            return true;
        }
        self.hits.push(Hit {
            span: Some((start, end)),
            found: Discovered {
                source,
                value: value.to_string(),
                location: self.location.to_string(),
            },
        });
        true
    }

    fn push_value(&mut self, value: String, source: SecretSource) {
        if value.is_empty() || is_ignorable_value(&value) {
            return;
        }
        self.hits.push(Hit {
            span: None,
            found: Discovered {
                source,
                value,
                location: self.location.to_string(),
            },
        });
    }

    fn positions(&self, needle: &str) -> Vec<usize> {
        self.lower.match_indices(needle).map(|(i, _)| i).collect()
    }
}

/// Runs every detector over `s`.
pub(super) fn detect(s: &str, location: &str, exception: bool) -> Vec<Hit> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut scan = Scan::new(s, location);
    scan_urls(&mut scan);
    scan_authorization(&mut scan);
    scan_bearer(&mut scan);
    scan_command_options(&mut scan);
    scan_assignments(&mut scan);
    scan_token_shapes(&mut scan);
    if exception {
        scan_exception(&mut scan);
    }
    scan.hits
}

fn scan_urls(sc: &mut Scan<'_>) {
    let b = sc.b;
    let s = sc.s;
    let mut resume = 0;
    for i in
        sc.s.match_indices("://")
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    {
        if i < resume {
            continue;
        }
        let mut start = i;
        while start > 0 && i - start < 32 {
            let c = at(b, start - 1);
            if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.') {
                start -= 1;
            } else {
                break;
            }
        }
        while start < i && !at(b, start).is_ascii_alphabetic() {
            start += 1;
        }
        if start == i {
            continue;
        }
        let authority_start = i + 3;
        let mut end = run_until(
            b,
            authority_start,
            &|c| c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\'),
            MAX_URL_BYTES,
        );
        end = floor_boundary(s, end);
        while end > authority_start
            && matches!(
                at(b, end - 1),
                b')' | b']' | b'}' | b',' | b'.' | b';' | b':' | b'!' | b'?'
            )
        {
            end -= 1;
        }
        resume = end;
        let authority_end = (authority_start..end)
            .find(|&j| matches!(at(b, j), b'/' | b'?' | b'#'))
            .unwrap_or(end);
        if let Some(at_sign) = (authority_start..authority_end)
            .rev()
            .find(|&j| at(b, j) == b'@')
        {
            match (authority_start..at_sign).find(|&j| at(b, j) == b':') {
                Some(colon) => {
                    if colon + 1 < at_sign {
                        let raw = sub(s, colon + 1, at_sign).to_string();
                        sc.push_span(colon + 1, at_sign, SecretSource::UrlUserinfo);
                        let decoded = percent_decode(&raw);
                        if decoded != raw {
                            sc.push_value(decoded, SecretSource::UrlUserinfo);
                        }
                    }
                }
                None => {
                    let user = sub(s, authority_start, at_sign);
                    if username_is_token(user) {
                        sc.push_span(authority_start, at_sign, SecretSource::UrlUserinfo);
                    }
                }
            }
        }
        let query = (authority_end..end).find(|&j| at(b, j) == b'?');
        let hash = (authority_end..end).find(|&j| at(b, j) == b'#');
        if let Some(q) = query {
            let q_end = hash.filter(|&h| h > q).unwrap_or(end);
            scan_pairs(sc, q + 1, q_end);
        }
        if let Some(h) = hash {
            scan_pairs(sc, h + 1, end);
        }
    }
}

fn username_is_token(user: &str) -> bool {
    (user.chars().count() >= 16
        && user.bytes().all(is_token_char)
        && user.bytes().any(|c| c.is_ascii_digit()))
        || token_shape_kind(user).is_some()
}

fn scan_pairs(sc: &mut Scan<'_>, start: usize, end: usize) {
    let b = sc.b;
    let mut seg_start = start;
    let mut j = start;
    while j <= end {
        if j == end || at(b, j) == b'&' {
            let segment = sub(sc.s, seg_start, j);
            if let Some(eq) = segment.find('=') {
                let value_start = seg_start + eq + 1;
                if value_start < j {
                    let (name, value) = url::form_urlencoded::parse(segment.as_bytes())
                        .next()
                        .map(|(n, v)| (n.into_owned(), v.into_owned()))
                        .unwrap_or_default();
                    let normalized = normalize_plain(&name);
                    if is_sensitive_query_name(&normalized) {
                        let raw = sub(sc.s, value_start, j).to_string();
                        sc.push_span(value_start, j, SecretSource::UrlQuery(normalized.clone()));
                        if value != raw {
                            sc.push_value(value, SecretSource::UrlQuery(normalized));
                        }
                    }
                }
            }
            seg_start = j + 1;
        }
        j += 1;
    }
}

fn scan_authorization(sc: &mut Scan<'_>) {
    let b = sc.b;
    let mut resume = 0;
    for i in sc.positions("authorization") {
        if i < resume || (i > 0 && at(b, i - 1).is_ascii_alphanumeric()) {
            continue;
        }
        let mut p = i + "authorization".len();
        for _ in 0..2 {
            if matches!(at(b, p), b'"' | b'\'' | b'\\') {
                p += 1;
            }
        }
        p = skip_inline_space(b, p);
        let sep = at(b, p);
        if sep != b':' && sep != b'=' {
            continue;
        }
        p = skip_inline_space(b, p + 1);
        let mut quoted = false;
        if at(b, p) == b'\\' && matches!(at(b, p + 1), b'"' | b'\'') {
            p += 2;
            quoted = true;
        } else if matches!(at(b, p), b'"' | b'\'') {
            p += 1;
            quoted = true;
        }
        let stop = |c: u8| {
            c.is_ascii_whitespace()
                || matches!(c, b'"' | b'\'' | b'\\' | b',')
                || (sep == b'=' && c == b'&')
        };
        let w1_end = floor_boundary(sc.s, run_until(b, p, &stop, MAX_BARE_VALUE_BYTES));
        if w1_end == p {
            continue;
        }
        let w1 = sub(sc.s, p, w1_end).to_string();
        let after = skip_inline_space(b, w1_end);
        let scheme = w1.to_ascii_lowercase();
        if AUTH_SCHEMES.contains(&scheme.as_str()) && after > w1_end {
            let w2_end = floor_boundary(sc.s, run_until(b, after, &stop, MAX_BARE_VALUE_BYTES));
            if w2_end > after {
                let credential = sub(sc.s, after, w2_end).to_string();
                sc.push_span(after, w2_end, SecretSource::AuthorizationHeader);
                if scheme == "basic" {
                    for part in basic_parts(&credential) {
                        sc.push_value(part, SecretSource::AuthorizationHeader);
                    }
                }
                resume = w2_end;
                continue;
            }
        }
        if quoted || token_like(&w1) {
            sc.push_span(p, w1_end, SecretSource::AuthorizationHeader);
        }
        resume = w1_end;
    }
}

fn scan_bearer(sc: &mut Scan<'_>) {
    let b = sc.b;
    for i in sc.positions("bearer") {
        if i > 0 && at(b, i - 1).is_ascii_alphanumeric() {
            continue;
        }
        let p = i + "bearer".len();
        if !matches!(at(b, p), b' ' | b'\t') {
            continue;
        }
        let start = skip_inline_space(b, p);
        let end = run_until(b, start, &|c| !is_token_char(c), MAX_BARE_VALUE_BYTES);
        let word = sub(sc.s, start, end);
        if token_like(word) {
            sc.push_span(start, end, SecretSource::AuthorizationHeader);
        }
    }
}

fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

fn scan_assignments(sc: &mut Scan<'_>) {
    let b = sc.b;
    let mut i = 0;
    while i < b.len() {
        let sep = at(b, i);
        if sep != b'=' && sep != b':' {
            i += 1;
            continue;
        }
        if sep == b':' && (at(b, i + 1) == b':' || (at(b, i + 1) == b'/' && at(b, i + 2) == b'/')) {
            i += 1;
            continue;
        }
        if sep == b'='
            && (at(b, i + 1) == b'='
                || (i > 0 && matches!(at(b, i - 1), b'=' | b'!' | b'<' | b'>')))
        {
            i += 1;
            continue;
        }
        let mut key_end = i;
        let mut spaces = 0;
        while key_end > 0 && spaces < 3 && matches!(at(b, key_end - 1), b' ' | b'\t') {
            key_end -= 1;
            spaces += 1;
        }
        if key_end > 0 && matches!(at(b, key_end - 1), b'"' | b'\'') {
            key_end -= 1;
            if key_end > 0 && at(b, key_end - 1) == b'\\' {
                key_end -= 1;
            }
        }
        let mut key_start = key_end;
        while key_start > 0
            && key_end - key_start <= MAX_KEY_BYTES
            && is_key_byte(at(b, key_start - 1))
        {
            key_start -= 1;
        }
        if key_start == key_end || key_end - key_start > MAX_KEY_BYTES {
            i += 1;
            continue;
        }
        let key = sub(sc.s, key_start, key_end);
        if key.starts_with('-') {
            i += 1;
            continue;
        }
        let normalized = normalize_name(key);
        let lower_key = key.to_ascii_lowercase();
        let header = sep == b':' && SECRET_HEADER_NAMES.contains(&lower_key.as_str());
        if normalized.contains("authorization") || !(header || is_sensitive_normalized(&normalized))
        {
            i += 1;
            continue;
        }
        let p = skip_inline_space(b, i + 1);
        if header && (lower_key == "cookie" || lower_key == "set-cookie") {
            let end = floor_boundary(
                sc.s,
                run_until(
                    b,
                    p,
                    &|c| matches!(c, b'\n' | b'\r' | b'"' | b'\''),
                    MAX_BARE_VALUE_BYTES,
                ),
            );
            let end = {
                let mut e = end;
                while e > p && matches!(at(b, e - 1), b' ' | b'\t') {
                    e -= 1;
                }
                e
            };
            if end > p {
                sc.push_span(p, end, SecretSource::Header(normalized));
            }
            i = end.max(i + 1);
            continue;
        }
        let stop: &dyn Fn(u8) -> bool = if sep == b'=' {
            &|c| c == b'&'
        } else {
            &|c| matches!(c, b',' | b'}' | b']' | b';' | b'&')
        };
        let Some((value_start, value_end, quoted)) = read_value(sc.s, p, stop) else {
            i += 1;
            continue;
        };
        let value = sub(sc.s, value_start, value_end);
        if sep == b':'
            && !quoted
            && !header
            && !is_password_ish(&normalized)
            && !looks_valued(value)
        {
            i += 1;
            continue;
        }
        let source = if header {
            SecretSource::Header(normalized)
        } else {
            SecretSource::Assignment(normalized)
        };
        sc.push_span(value_start, value_end, source);
        i = value_end.max(i + 1);
    }
}

fn is_option_boundary(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'(' | b'[' | b',')
}

/// The value of a command option whose name ends at `name_end`:
/// `--opt=value` or `--opt value` (a following `-x` is not a value).
fn option_value(s: &str, name_end: usize) -> Option<(usize, usize, bool)> {
    let b = s.as_bytes();
    match at(b, name_end) {
        b'=' => read_value(s, name_end + 1, &|_| false),
        b' ' | b'\t' => {
            let p = skip_inline_space(b, name_end);
            if p >= b.len() || at(b, p) == b'-' {
                None
            } else {
                read_value(s, p, &|_| false)
            }
        }
        _ => None,
    }
}

pub(super) fn scan_command_options(sc: &mut Scan<'_>) {
    let b = sc.b;
    let s = sc.s;
    let has_mysql = sc.lower.contains("mysql") || sc.lower.contains("mariadb");
    let has_sshpass = sc.lower.contains("sshpass");
    let has_curl = sc.lower.contains("curl");
    let mut i = 0;
    while i < b.len() {
        if at(b, i) != b'-' || (i > 0 && !is_option_boundary(at(b, i - 1))) {
            i += 1;
            continue;
        }
        let dashes = if at(b, i + 1) == b'-' { 2 } else { 1 };
        let name_start = i + dashes;
        let name_end = run_until(
            b,
            name_start,
            &|c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'-'),
            MAX_KEY_BYTES,
        );
        if name_end == name_start {
            i = name_start.max(i + 1);
            continue;
        }
        let name = sub(s, name_start, name_end);
        let option = sub(s, i, name_end).to_string();
        let normalized = normalize_plain(name);
        let mut next = name_end;

        // mysql-family `-pSECRET` / sshpass `-pSECRET` (attached form).
        if dashes == 1 && at(b, name_start) == b'p' && (has_mysql || has_sshpass) {
            let value_start = name_start + 1;
            let c = at(b, value_start);
            if value_start < b.len() && !c.is_ascii_whitespace() && c != b'=' {
                if let Some((vs, ve, _)) = read_value(s, value_start, &|_| false) {
                    sc.push_span(vs, ve, SecretSource::CommandOption("-p".to_string()));
                    // `-password x` is ambiguous (mysql: password "assword";
                    // other tools: option `password`): redact both readings.
                    let long_form = matches!(
                        normalized.as_str(),
                        "password" | "passwd" | "passphrase" | "pass" | "passin" | "passout"
                    );
                    if !long_form {
                        i = ve.max(i + 1);
                        continue;
                    }
                }
            }
            if has_sshpass && name == "p" {
                if let Some((vs, ve, _)) = option_value(s, name_end) {
                    sc.push_span(vs, ve, SecretSource::CommandOption("-p".to_string()));
                    i = ve.max(i + 1);
                    continue;
                }
            }
        }

        let curl_user = has_curl
            && ((dashes == 1 && (name == "u" || name == "U"))
                || (dashes == 2 && (name == "user" || name == "proxy-user")));
        if curl_user {
            if let Some((vs, ve, _)) = option_value(s, name_end) {
                if let Some(colon) = sub(s, vs, ve).find(':') {
                    sc.push_span(
                        vs + colon + 1,
                        ve,
                        SecretSource::CommandOption(option.clone()),
                    );
                }
                next = ve;
            }
        } else if matches!(normalized.as_str(), "pass" | "passin" | "passout") {
            if let Some((vs, ve, _)) = option_value(s, name_end) {
                if sub(s, vs, ve).starts_with("pass:") {
                    sc.push_span(vs + 5, ve, SecretSource::CommandOption(option.clone()));
                }
                next = ve;
            }
        } else if name.len() >= 2 && is_sensitive_normalized(&normalized) {
            if let Some((vs, ve, _)) = option_value(s, name_end) {
                sc.push_span(vs, ve, SecretSource::CommandOption(option.clone()));
                next = ve;
            }
        }
        i = next.max(i + 1);
    }
}

pub(super) struct Shape {
    pub(super) prefix: &'static str,
    pub(super) kind: &'static str,
    pub(super) body: fn(u8) -> bool,
    pub(super) min_body: usize,
    pub(super) exact_body: bool,
    pub(super) need_digit: bool,
}

/// `(prefix, kind, body charset, min body length, exact length, needs a digit)`.
pub(super) const fn shape(
    prefix: &'static str,
    kind: &'static str,
    body: fn(u8) -> bool,
    min_body: usize,
    exact_body: bool,
    need_digit: bool,
) -> Shape {
    Shape {
        prefix,
        kind,
        body,
        min_body,
        exact_body,
        need_digit,
    }
}

fn body_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

fn body_alnum_dash_underscore(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

fn body_alnum_underscore(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn body_alnum_dash(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

fn body_upper_digit(c: u8) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit()
}

fn body_jwt(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

const SHAPES: &[Shape] = &[
    shape(
        "sk-",
        "api_key",
        body_alnum_dash_underscore,
        20,
        false,
        true,
    ),
    shape(
        "github_pat_",
        "github_token",
        body_alnum_underscore,
        22,
        false,
        false,
    ),
    shape("ghp_", "github_token", body_alnum, 30, false, false),
    shape("gho_", "github_token", body_alnum, 30, false, false),
    shape("ghu_", "github_token", body_alnum, 30, false, false),
    shape("ghs_", "github_token", body_alnum, 30, false, false),
    shape("ghr_", "github_token", body_alnum, 30, false, false),
    shape(
        "glpat-",
        "gitlab_token",
        body_alnum_dash_underscore,
        20,
        false,
        false,
    ),
    shape("xoxb-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxp-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxa-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxr-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxs-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxe-", "slack_token", body_alnum_dash, 10, false, true),
    shape(
        "AKIA",
        "aws_access_key_id",
        body_upper_digit,
        16,
        true,
        false,
    ),
    shape(
        "ASIA",
        "aws_access_key_id",
        body_upper_digit,
        16,
        true,
        false,
    ),
    shape(
        "AIza",
        "google_api_key",
        body_alnum_dash_underscore,
        30,
        false,
        false,
    ),
    shape("eyJ", "jwt", body_jwt, 20, false, false),
];

/// Kind of a whole-string token shape, if `s` is exactly one.
fn token_shape_kind(s: &str) -> Option<&'static str> {
    SHAPES.iter().find_map(|shape| {
        let body = s.strip_prefix(shape.prefix)?;
        shape_body_ok(shape, body).then_some(shape.kind)
    })
}

fn shape_body_ok(shape: &Shape, body: &str) -> bool {
    let len = body.len();
    if len < shape.min_body || (shape.exact_body && len != shape.min_body) {
        return false;
    }
    if !body.bytes().all(shape.body) {
        return false;
    }
    if shape.need_digit && !body.bytes().any(|c| c.is_ascii_digit()) {
        return false;
    }
    if shape.kind == "jwt" {
        let segments: Vec<&str> = body.split('.').collect();
        return segments.len() >= 3
            && segments.first().is_some_and(|seg| seg.len() >= 5)
            && segments.get(1).is_some_and(|seg| seg.len() >= 8);
    }
    true
}

fn scan_token_shapes(sc: &mut Scan<'_>) {
    let b = sc.b;
    let s = sc.s;
    for shape in SHAPES {
        let mut resume = 0;
        for (start, _) in s.match_indices(shape.prefix).collect::<Vec<_>>() {
            if start < resume || (start > 0 && body_alnum_dash_underscore(at(b, start - 1))) {
                continue;
            }
            let body_start = start + shape.prefix.len();
            let mut body_end =
                run_until(b, body_start, &|c| !(shape.body)(c), MAX_BARE_VALUE_BYTES);
            resume = body_end;
            if shape.kind == "jwt" {
                while body_end > body_start && at(b, body_end - 1) == b'.' {
                    body_end -= 1;
                }
            }
            if shape_body_ok(shape, sub(s, body_start, body_end)) {
                sc.push_span(
                    start,
                    body_end,
                    SecretSource::TokenShape(shape.kind.to_string()),
                );
            }
        }
    }
    // PEM private key blocks.
    let mut resume = 0;
    for start in
        sc.s.match_indices("-----BEGIN ")
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    {
        if start < resume {
            continue;
        }
        let header_start = start + "-----BEGIN ".len();
        let Some(header_len) = s.get(header_start..).and_then(|rest| rest.find("-----")) else {
            continue;
        };
        if header_len > 64
            || !sub(s, header_start, header_start + header_len).contains("PRIVATE KEY")
        {
            continue;
        }
        let body_start = header_start + header_len + 5;
        let end = s
            .get(body_start..)
            .and_then(|rest| rest.find("-----END "))
            .and_then(|rel| {
                let end_marker = body_start + rel + "-----END ".len();
                s.get(end_marker..)
                    .and_then(|rest| rest.find("-----"))
                    .map(|close| end_marker + close + 5)
            })
            .unwrap_or(s.len());
        resume = end;
        sc.push_span(
            start,
            end,
            SecretSource::TokenShape("private_key".to_string()),
        );
    }
}

fn scan_exception(sc: &mut Scan<'_>) {
    let b = sc.b;
    for word in EXCEPTION_WORDS {
        let mut resume = 0;
        for i in sc.positions(word) {
            if i < resume || (i > 0 && at(b, i - 1).is_ascii_alphanumeric()) {
                continue;
            }
            let mut p = i + word.len();
            if at(b, p) == b's' {
                p += 1;
            }
            if at(b, p).is_ascii_alphanumeric() || at(b, p) == b'_' {
                continue;
            }
            let rest = sc.lower.get(p..).unwrap_or("");
            for filler in [" provided", " is", " was", " value", " used"] {
                if rest.starts_with(filler) && !at(b, p + filler.len()).is_ascii_alphanumeric() {
                    p += filler.len();
                    break;
                }
            }
            p = skip_inline_space(b, p);
            let mut separated = false;
            if matches!(at(b, p), b':' | b'=') {
                separated = true;
                p = skip_inline_space(b, p + 1);
            }
            let c = at(b, p);
            if matches!(c, b'"' | b'\'' | b'`') {
                let start = p + 1;
                let end = run_until(b, start, &|x| x == c || x == b'\n', 512);
                resume = end;
                if at(b, end) == c && end > start {
                    sc.push_span(
                        start,
                        floor_boundary(sc.s, end),
                        SecretSource::ExceptionText,
                    );
                }
                continue;
            }
            let end = floor_boundary(
                sc.s,
                run_until(
                    b,
                    p,
                    &|x| x.is_ascii_whitespace() || matches!(x, b'"' | b'\'' | b',' | b';' | b')'),
                    MAX_BARE_VALUE_BYTES,
                ),
            );
            resume = end;
            let mut value_end = end;
            while value_end > p && matches!(at(b, value_end - 1), b'.' | b':') {
                value_end -= 1;
            }
            let value = sub(sc.s, p, value_end);
            let accept = if separated {
                token_like(value)
            } else {
                token_like(value) && value.chars().count() >= 12
            };
            if accept {
                sc.push_span(p, value_end, SecretSource::ExceptionText);
            }
        }
    }
}
