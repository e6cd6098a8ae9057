//! Secret-ish names: the field, query, environment and binding names that
//! always hold a secret, and their normalisation (`apiKey`, `API-KEY`, `api_key`).

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;

/// Normalised field names that always hold a secret.
const SENSITIVE_FIELD_NAMES: &[&str] = &[
    "access_key",
    "access_token",
    "api_key",
    "api_token",
    "apikey",
    "auth",
    "auth_token",
    "authorization",
    "bearer",
    "bearer_token",
    "client_secret",
    "cookie",
    "credential",
    "credentials",
    "encryption_key",
    "id_token",
    "key_material",
    "master_key",
    "passphrase",
    "passwd",
    "password",
    "private_key",
    "proxy_authorization",
    "refresh_token",
    "secret",
    "secret_access_key",
    "secret_input",
    "secret_key",
    "secret_value",
    "session_token",
    "set_cookie",
    "signing_key",
    "token",
    "x_access_token",
    "x_api_key",
    "x_api_token",
    "x_auth_token",
    "x_goog_api_key",
];

/// Normalised suffixes (after `_`) that mark a secret field.
const SENSITIVE_SUFFIXES: &[&str] = &[
    "_access_key",
    "_access_token",
    "_api_key",
    "_api_token",
    "_apikey",
    "_auth_token",
    "_client_secret",
    "_credential",
    "_credentials",
    "_private_key",
    "_refresh_token",
    "_secret",
    "_secret_key",
    "_session_token",
    "_token",
];

/// Endings that mark a secret even without a separator (`PGPASSWORD`).
const SENSITIVE_ENDINGS: &[&str] = &["password", "passwd", "passphrase"];

/// Extra URL query/fragment parameter names treated as secret.
const EXTRA_QUERY_NAMES: &[&str] = &[
    "code",
    "jwt",
    "key",
    "pass",
    "pwd",
    "session",
    "session_id",
    "sessionid",
    "sig",
    "signature",
    "x_amz_credential",
    "x_amz_security_token",
    "x_amz_signature",
];

/// Normalised object keys whose string values are treated as exception text.
pub(crate) const EXCEPTION_KEYS: &[&str] = &[
    "cause",
    "detail",
    "err",
    "error",
    "error_message",
    "errors",
    "exception",
    "stack",
    "stack_trace",
    "stacktrace",
    "stderr",
    "traceback",
];

/// Normalised keys whose object value is an environment overlay (preview
/// shows keys only).
pub(crate) const ENV_KEYS: &[&str] = &["env", "environment", "env_overlay", "env_vars"];

/// Keys of a `secret_bindings` entry that are safe to show in a preview.
pub(crate) const BINDING_METADATA_KEYS: &[&str] = &[
    "capability",
    "expires_at",
    "expires_in_seconds",
    "source",
    "target",
];

/// Normalises a field name: camelCase split, lower case, runs of
/// non-alphanumerics collapsed to `_`, trimmed (`X-Api-Key` -> `x_api_key`,
/// `accessToken` -> `access_token`, `APIKey` -> `api_key`).
pub fn normalize_name(raw: &str) -> String {
    let chars: Vec<char> = raw.trim().chars().collect();
    let mut out = String::with_capacity(chars.len() + 4);
    let mut pending_sep = false;
    for (index, &ch) in chars.iter().enumerate() {
        if ch.is_ascii_alphanumeric() {
            if ch.is_ascii_uppercase() && index > 0 {
                let prev = index.checked_sub(1).and_then(|i| chars.get(i)).copied();
                let next = chars.get(index + 1).copied();
                let boundary = match prev {
                    Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                    Some(p) if p.is_ascii_uppercase() => {
                        next.is_some_and(|n| n.is_ascii_lowercase())
                    }
                    _ => false,
                };
                if boundary {
                    pending_sep = true;
                }
            }
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(ch.to_ascii_lowercase());
        } else {
            pending_sep = true;
        }
    }
    out
}

/// Like [`normalize_name`] without camelCase splitting (command options and
/// URL parameters are not camelCase).
pub(super) fn normalize_plain(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut pending_sep = false;
    for ch in raw.trim().chars() {
        if ch.is_ascii_alphanumeric() {
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(ch.to_ascii_lowercase());
        } else {
            pending_sep = true;
        }
    }
    out
}

pub(crate) fn is_sensitive_normalized(normalized: &str) -> bool {
    if normalized.is_empty() || normalized.starts_with("no_") {
        return false;
    }
    SENSITIVE_FIELD_NAMES.contains(&normalized)
        || SENSITIVE_SUFFIXES
            .iter()
            .any(|suffix| normalized.ends_with(suffix))
        || SENSITIVE_ENDINGS
            .iter()
            .any(|ending| normalized.ends_with(ending))
}

/// True when a field/key name denotes a secret (`password`, `apiKey`,
/// `X-Api-Key`, `GITHUB_TOKEN`, `PGPASSWORD`, ...). `token_count`,
/// `max_tokens`, `author` and `password_file` are not secret names.
pub fn is_sensitive_name(raw: &str) -> bool {
    is_sensitive_normalized(&normalize_name(raw))
}

pub(super) fn is_sensitive_query_name(normalized: &str) -> bool {
    is_sensitive_normalized(normalized) || EXTRA_QUERY_NAMES.contains(&normalized)
}

pub(super) fn is_password_ish(normalized: &str) -> bool {
    ["password", "passwd", "passphrase", "secret"]
        .iter()
        .any(|word| normalized.contains(word))
}
