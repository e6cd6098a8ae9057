//! The operator console: one embedded page (from `web/`), no build step.

use axum::http::header;
use axum::response::IntoResponse;

const CONSOLE_HTML: &str = include_str!("../../../web/console.html");

/// The operator console page.
pub async fn console() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        CONSOLE_HTML,
    )
}
