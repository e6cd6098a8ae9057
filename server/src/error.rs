//! The host's error type. Every layer returns it; `api::error` maps it to
//! HTTP in one place, so a status code is decided exactly once.

/// What went wrong, in terms a client or operator can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The client sent something we refuse; the message says what.
    #[error("{0}")]
    Invalid(String),
    /// Missing, or owned by someone else: the two are indistinguishable on purpose.
    #[error("not found")]
    NotFound,
    /// The request conflicts with current state (e.g. a turn already running).
    #[error("{0}")]
    Conflict(String),
    /// No valid credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// Valid credentials, but the role does not allow this.
    #[error("{0}")]
    Forbidden(String),
    /// Too many requests; retry after the given seconds.
    #[error("rate limit exceeded")]
    RateLimited { retry_after_secs: u64 },
    /// A dependency (database, shutdown in progress) is not available.
    #[error("{0}")]
    Unavailable(String),
    #[error("database error")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<crate::ids::IdError> for Error {
    fn from(e: crate::ids::IdError) -> Self {
        Error::Invalid(e.to_string())
    }
}
