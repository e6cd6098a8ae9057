//! The operator console: a few hand-written files from `web/`, embedded in
//! the binary (no build step, no network at run time).

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

const CONSOLE_HTML: &str = include_str!("../../../web/console.html");

/// The console's scripts and styles: `(file name, content type, body)`.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/console/app.js"),
    ),
    (
        "render.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/console/render.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/console/api.js"),
    ),
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("../../../web/console/console.css"),
    ),
];

/// Only our own files: no inline script, no other origin, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

fn page(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
        .into_response()
}

/// The operator console page.
pub async fn console() -> Response {
    page("text/html; charset=utf-8", CONSOLE_HTML)
}

/// One of the console's embedded scripts or styles.
pub async fn console_asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => page(content_type, body),
        None => ApiError::not_found().into_response(),
    }
}
