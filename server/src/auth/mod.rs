//! Authentication and authority: signing keys, JWT issue/verify, the
//! immutable [`PrincipalScope`] built from a verified token alone, the
//! revocation cache, and per-principal / per-IP rate limits.

pub mod admin;
mod keys;
mod rate_limit;
pub mod revocation;
mod scope;
mod token;

pub use keys::{load_or_create_key, load_or_create_signing_key};
pub use rate_limit::RateLimits;
pub use revocation::Revocations;
pub use scope::{PrincipalScope, Role};
pub use token::{
    check_times, AuthError, Claims, IssueError, IssuedToken, TokenService, TokenTimes,
    VerifiedToken, DEFAULT_MAX_TTL_SECS, LEEWAY_SECS, LOCAL_ISSUER, MAX_JTI_LEN,
};
