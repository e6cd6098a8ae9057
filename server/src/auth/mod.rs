//! Authentication and authority: signing keys, JWT issue/verify, the
//! immutable [`PrincipalScope`] built from a verified token alone, and
//! per-principal / per-IP rate limits.

mod keys;
mod rate_limit;
mod scope;
mod token;

pub use keys::load_or_create_signing_key;
pub use rate_limit::RateLimits;
pub use scope::{PrincipalScope, Role};
pub use token::{AuthError, Claims, TokenService, LOCAL_ISSUER};
