//! JWT issue and verification. Local tokens are HS256 with the home's key;
//! an external identity provider's RS256/EdDSA public key may be configured.
//! `alg: none`, wrong keys, wrong audience, expiry and tampering all fail.
//! Time claims are checked here, not by the library: a leeway of a few
//! seconds on `exp`, `nbf` and `iat`, and a server-wide maximum lifetime.

use base64::Engine;
use jsonwebtoken::{
    decode, encode, errors::ErrorKind, Algorithm, DecodingKey, EncodingKey, Header, Validation,
};
use serde::{Deserialize, Serialize};

use super::{PrincipalScope, Role};
use crate::config::{AuthConfig, ExternalJwtKey};
use crate::ids::{PrincipalId, TenantId};

/// `iss` of tokens this server signs.
pub const LOCAL_ISSUER: &str = "demiurge";

/// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
pub const LEEWAY_SECS: u64 = 5;

/// Default for `--token-max-ttl`: 30 days.
pub const DEFAULT_MAX_TTL_SECS: u64 = 30 * 24 * 3600;

/// Longest accepted `jti`; it is stored when revoked.
pub const MAX_JTI_LEN: usize = 200;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub aud: String,
    /// The principal.
    pub sub: String,
    pub tenant: String,
    pub role: Role,
    /// Optional on the wire so a missing one is named, not a parse error.
    #[serde(default)]
    pub iat: Option<u64>,
    #[serde(default)]
    pub exp: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    /// The token's id: what `token revoke --jti` names.
    #[serde(default)]
    pub jti: String,
}

/// The time claims of a token, for [`check_times`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenTimes {
    pub iat: u64,
    pub exp: u64,
    pub nbf: Option<u64>,
}

/// Accept a token's times at `now` (Unix seconds) or say why not: expired
/// (beyond the leeway), issued or valid only in the future (beyond the
/// leeway), or living longer than `max_ttl_secs` (`exp - iat`).
pub fn check_times(
    t: TokenTimes,
    now: u64,
    leeway_secs: u64,
    max_ttl_secs: u64,
) -> Result<(), AuthError> {
    if t.iat > now.saturating_add(leeway_secs) {
        return Err(AuthError::IssuedInFuture);
    }
    if t.exp <= t.iat {
        return Err(AuthError::Malformed("exp is not after iat".into()));
    }
    if now >= t.exp.saturating_add(leeway_secs) {
        return Err(AuthError::Expired);
    }
    if t.nbf
        .is_some_and(|nbf| nbf > now.saturating_add(leeway_secs))
    {
        return Err(AuthError::NotYetValid);
    }
    if t.exp - t.iat > max_ttl_secs {
        return Err(AuthError::LifetimeTooLong {
            max_secs: max_ttl_secs,
        });
    }
    Ok(())
}

/// A verified token: the caller's scope plus what revocation checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub scope: PrincipalScope,
    pub jti: String,
    /// `iat`, Unix seconds.
    pub issued_at: u64,
    /// `exp`, Unix seconds.
    pub expires_at: u64,
}

/// A freshly signed token.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub token: String,
    pub jti: String,
    pub issued_at: u64,
    pub expires_at: u64,
}

/// Why a token was refused. Messages are safe to show the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token")]
    Missing,
    #[error("token expired")]
    Expired,
    #[error("token is not valid yet (nbf is in the future)")]
    NotYetValid,
    #[error("token was issued in the future (iat); check the issuer's clock")]
    IssuedInFuture,
    #[error("token lifetime (exp - iat) exceeds this server's maximum of {max_secs} s")]
    LifetimeTooLong { max_secs: u64 },
    #[error("token has been revoked")]
    Revoked,
    #[error("principal is disabled")]
    Disabled,
    #[error("token audience is not accepted")]
    Audience,
    #[error("token issuer is not accepted")]
    Issuer,
    #[error("token signature is invalid")]
    Signature,
    #[error("unsigned tokens (alg none) are not accepted")]
    Unsigned,
    #[error("token algorithm {0} is not accepted")]
    Algorithm(String),
    #[error("malformed token: {0}")]
    Malformed(String),
}

pub struct TokenService {
    encoding: EncodingKey,
    local: DecodingKey,
    local_validation: Validation,
    external: Option<(DecodingKey, Validation, Algorithm)>,
    audience: String,
    /// Longest accepted and issued lifetime, in seconds.
    max_ttl_secs: u64,
}

/// Why a token could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    #[error("ttl must be longer than zero")]
    ZeroTtl,
    #[error(
        "ttl {ttl_secs} s exceeds the maximum token lifetime of {max_secs} s (--token-max-ttl)"
    )]
    TtlTooLong { ttl_secs: u64, max_secs: u64 },
    #[error("sign token: {0}")]
    Sign(#[from] jsonwebtoken::errors::Error),
}

impl std::fmt::Debug for TokenService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenService")
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

fn validation(alg: Algorithm, audience: &str, issuer: Option<&str>) -> Validation {
    let mut v = Validation::new(alg);
    v.set_audience(&[audience]);
    if let Some(iss) = issuer {
        v.set_issuer(&[iss]);
    }
    v.set_required_spec_claims(&["iss", "aud", "sub"]);
    // Times are checked by `check_times`, with our own leeway and limits.
    v.validate_exp = false;
    v.validate_nbf = false;
    v.leeway = 0;
    v
}

impl TokenService {
    pub fn new(signing_key: &[u8], cfg: &AuthConfig) -> anyhow::Result<Self> {
        // Exactly one crypto backend is compiled in; should a feature change
        // leave none (or two), fail at startup rather than panic on a request.
        anyhow::ensure!(
            jsonwebtoken::crypto::CryptoProvider::try_get_default().is_some(),
            "no JWT crypto backend is compiled in"
        );
        let external = match &cfg.external_key {
            None => None,
            Some(ExternalJwtKey { pem, algorithm }) => {
                let key = match algorithm {
                    Algorithm::EdDSA => DecodingKey::from_ed_pem(pem)?,
                    _ => DecodingKey::from_rsa_pem(pem)?,
                };
                Some((
                    key,
                    validation(*algorithm, &cfg.audience, cfg.external_issuer.as_deref()),
                    *algorithm,
                ))
            }
        };
        Ok(Self {
            encoding: EncodingKey::from_secret(signing_key)?,
            local: DecodingKey::from_secret(signing_key)?,
            local_validation: validation(Algorithm::HS256, &cfg.audience, Some(LOCAL_ISSUER)),
            external,
            audience: cfg.audience.clone(),
            max_ttl_secs: cfg.max_ttl.as_secs().max(1),
        })
    }

    /// The longest lifetime this service issues or accepts.
    pub fn max_ttl_secs(&self) -> u64 {
        self.max_ttl_secs
    }

    /// Refuse a lifetime of zero or above the maximum; else its seconds (at least 1).
    pub fn check_ttl(&self, ttl: std::time::Duration) -> Result<u64, IssueError> {
        if ttl.is_zero() {
            return Err(IssueError::ZeroTtl);
        }
        let secs = ttl.as_secs().max(1);
        if secs > self.max_ttl_secs {
            return Err(IssueError::TtlTooLong {
                ttl_secs: secs,
                max_secs: self.max_ttl_secs,
            });
        }
        Ok(secs)
    }

    /// Sign a token for a principal, issued now.
    pub fn issue(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        role: Role,
        ttl: std::time::Duration,
    ) -> Result<IssuedToken, IssueError> {
        self.issue_at(tenant, principal, role, ttl, crate::time::now_secs())
    }

    /// Sign a token whose `iat` is `issued_at` (callers pass a second after
    /// a revocation cutoff of the same second, so the new token survives it).
    pub fn issue_at(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        role: Role,
        ttl: std::time::Duration,
        issued_at: u64,
    ) -> Result<IssuedToken, IssueError> {
        let secs = self.check_ttl(ttl)?;
        let claims = Claims {
            iss: LOCAL_ISSUER.into(),
            aud: self.audience.clone(),
            sub: principal.to_string(),
            tenant: tenant.to_string(),
            role,
            iat: Some(issued_at),
            exp: Some(issued_at + secs),
            nbf: None,
            jti: uuid::Uuid::new_v4().to_string(),
        };
        let token = encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)?;
        Ok(IssuedToken {
            token,
            jti: claims.jti,
            issued_at,
            expires_at: issued_at + secs,
        })
    }

    /// Verify a token and build the caller's scope from it alone.
    pub fn verify(&self, token: &str) -> Result<VerifiedToken, AuthError> {
        self.verify_at(token, crate::time::now_secs())
    }

    /// [`Self::verify`] at a given time (Unix seconds).
    pub fn verify_at(&self, token: &str, now: u64) -> Result<VerifiedToken, AuthError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        if raw_alg(token).is_some_and(|a| a.eq_ignore_ascii_case("none")) {
            return Err(AuthError::Unsigned);
        }
        let header = jsonwebtoken::decode_header(token).map_err(map_err)?;
        let data = if header.alg == Algorithm::HS256 {
            decode::<Claims>(token, &self.local, &self.local_validation).map_err(map_err)?
        } else {
            match &self.external {
                Some((key, v, alg)) if *alg == header.alg => {
                    decode::<Claims>(token, key, v).map_err(map_err)?
                }
                _ => return Err(AuthError::Algorithm(format!("{:?}", header.alg))),
            }
        };
        let c = data.claims;
        let iat = c
            .iat
            .ok_or_else(|| AuthError::Malformed("missing claim iat".into()))?;
        let exp = c
            .exp
            .ok_or_else(|| AuthError::Malformed("missing claim exp".into()))?;
        check_times(
            TokenTimes {
                iat,
                exp,
                nbf: c.nbf,
            },
            now,
            LEEWAY_SECS,
            self.max_ttl_secs,
        )?;
        if c.jti.is_empty() {
            return Err(AuthError::Malformed("missing claim jti".into()));
        }
        if c.jti.len() > MAX_JTI_LEN {
            return Err(AuthError::Malformed(format!(
                "jti is longer than {MAX_JTI_LEN} characters"
            )));
        }
        let tenant = TenantId::parse(&c.tenant).map_err(|e| AuthError::Malformed(e.to_string()))?;
        let principal =
            PrincipalId::parse(&c.sub).map_err(|e| AuthError::Malformed(e.to_string()))?;
        Ok(VerifiedToken {
            scope: PrincipalScope::new(tenant, principal, c.role),
            jti: c.jti,
            issued_at: iat,
            expires_at: exp,
        })
    }
}

/// The header's `alg` as written, before the library rejects unknown values.
fn raw_alg(token: &str) -> Option<String> {
    let head = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head.trim_end_matches('='))
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("alg")?.as_str().map(str::to_owned)
}

fn map_err(e: jsonwebtoken::errors::Error) -> AuthError {
    match e.kind() {
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        ErrorKind::InvalidAudience => AuthError::Audience,
        ErrorKind::InvalidIssuer => AuthError::Issuer,
        ErrorKind::InvalidSignature => AuthError::Signature,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            AuthError::Algorithm("of this token".into())
        }
        ErrorKind::MissingRequiredClaim(c) => AuthError::Malformed(format!("missing claim {c}")),
        ErrorKind::Json(_) => AuthError::Malformed("claims are not valid".into()),
        _ => AuthError::Malformed("not a JWT".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cfg() -> AuthConfig {
        AuthConfig {
            audience: "demiurge".into(),
            external_issuer: None,
            external_key: None,
            max_ttl: Duration::from_secs(DEFAULT_MAX_TTL_SECS),
        }
    }

    fn ids() -> (TenantId, PrincipalId) {
        (
            TenantId::parse("acme").unwrap(),
            PrincipalId::parse("alice").unwrap(),
        )
    }

    fn b64(v: &serde_json::Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    }

    #[test]
    fn round_trip_builds_the_scope() {
        let svc = TokenService::new(&[7u8; 64], &cfg()).unwrap();
        let (t, p) = ids();
        let issued = svc
            .issue(&t, &p, Role::Operator, Duration::from_secs(60))
            .unwrap();
        let v = svc.verify(&issued.token).unwrap();
        assert_eq!(v.scope.tenant(), &t);
        assert_eq!(v.scope.principal(), &p);
        assert_eq!(v.scope.role(), Role::Operator);
        assert_eq!(v.jti, issued.jti);
        assert_eq!(uuid::Uuid::parse_str(&v.jti).unwrap().get_version_num(), 4);
        assert_eq!(v.expires_at - v.issued_at, 60);
        assert_eq!(
            (v.issued_at, v.expires_at),
            (issued.issued_at, issued.expires_at)
        );
    }

    #[test]
    fn wrong_key_is_a_bad_signature() {
        let a = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let b = TokenService::new(&[2u8; 64], &cfg()).unwrap();
        let (t, p) = ids();
        let tok = a
            .issue(&t, &p, Role::Member, Duration::from_secs(60))
            .unwrap()
            .token;
        assert_eq!(b.verify(&tok), Err(AuthError::Signature));
    }

    #[test]
    fn wrong_audience_is_refused() {
        let a = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let mut other = cfg();
        other.audience = "elsewhere".into();
        let b = TokenService::new(&[1u8; 64], &other).unwrap();
        let (t, p) = ids();
        let tok = b
            .issue(&t, &p, Role::Member, Duration::from_secs(60))
            .unwrap()
            .token;
        assert_eq!(a.verify(&tok), Err(AuthError::Audience));
    }

    #[test]
    fn expired_is_refused() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let now = crate::time::now_secs();
        let claims = serde_json::json!({"iss":"demiurge","aud":"demiurge","sub":"alice","tenant":"acme",
            "role":"member","iat": now - 7200, "exp": now - 3600, "jti":"x"});
        let tok = encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(&[1u8; 64]).unwrap(),
        )
        .unwrap();
        assert_eq!(svc.verify(&tok), Err(AuthError::Expired));
    }

    #[test]
    fn alg_none_is_refused() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let now = crate::time::now_secs();
        for alg in ["none", "None", "NONE"] {
            let tok = format!(
                "{}.{}.",
                b64(&serde_json::json!({"alg": alg, "typ": "JWT"})),
                b64(
                    &serde_json::json!({"iss":"demiurge","aud":"demiurge","sub":"alice","tenant":"acme",
                    "role":"admin","iat": now, "exp": now + 60, "jti":"x"})
                )
            );
            assert_eq!(svc.verify(&tok), Err(AuthError::Unsigned), "{alg}");
        }
    }

    #[test]
    fn tampered_payload_is_refused() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let (t, p) = ids();
        let tok = svc
            .issue(&t, &p, Role::Member, Duration::from_secs(60))
            .unwrap()
            .token;
        let parts: Vec<&str> = tok.split('.').collect();
        let now = crate::time::now_secs();
        let forged = b64(
            &serde_json::json!({"iss":"demiurge","aud":"demiurge","sub":"alice","tenant":"acme",
            "role":"admin","iat": now, "exp": now + 60, "jti":"x"}),
        );
        let tampered = format!("{}.{}.{}", parts[0], forged, parts[2]);
        assert_eq!(svc.verify(&tampered), Err(AuthError::Signature));
    }

    #[test]
    fn garbage_is_malformed() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        for g in ["x", "a.b.c", "....", "Bearer", "eyJhbGciOiJIUzI1NiJ9.e30."] {
            assert!(
                matches!(
                    svc.verify(g),
                    Err(AuthError::Malformed(_) | AuthError::Signature)
                ),
                "{g}"
            );
        }
        assert_eq!(svc.verify(""), Err(AuthError::Missing));
    }

    #[test]
    fn rs256_without_configured_key_is_refused() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let tok = format!(
            "{}.{}.sig",
            b64(&serde_json::json!({"alg": "RS256", "typ": "JWT"})),
            b64(&serde_json::json!({"sub":"alice"}))
        );
        assert!(matches!(svc.verify(&tok), Err(AuthError::Algorithm(_))));
    }

    #[test]
    fn bad_tenant_claim_is_malformed() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let now = crate::time::now_secs();
        let claims = serde_json::json!({"iss":"demiurge","aud":"demiurge","sub":"alice","tenant":"../etc",
            "role":"member","iat": now, "exp": now + 60, "jti":"x"});
        let tok = encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(&[1u8; 64]).unwrap(),
        )
        .unwrap();
        assert!(matches!(svc.verify(&tok), Err(AuthError::Malformed(_))));
    }

    const DAY: u64 = 24 * 3600;

    #[test]
    fn check_times_table() {
        let now = 1_700_000_000u64;
        let max = 30 * DAY;
        let t = |iat: u64, exp: u64, nbf: Option<u64>| TokenTimes { iat, exp, nbf };
        let long = AuthError::LifetimeTooLong { max_secs: max };
        let cases: Vec<(&str, TokenTimes, Result<(), AuthError>)> = vec![
            ("fresh one hour", t(now, now + 3600, None), Ok(())),
            ("one second, just issued", t(now, now + 1, None), Ok(())),
            (
                "exp just passed, within leeway",
                t(now - 10, now - 4, None),
                Ok(()),
            ),
            (
                "exp passed by exactly the leeway",
                t(now - 10, now - 5, None),
                Err(AuthError::Expired),
            ),
            (
                "exp passed by more than the leeway",
                t(now - 100, now - 6, None),
                Err(AuthError::Expired),
            ),
            (
                "one-second token thirty seconds later",
                t(now - 30, now - 29, None),
                Err(AuthError::Expired),
            ),
            (
                "long expired",
                t(now - 2 * DAY, now - DAY, None),
                Err(AuthError::Expired),
            ),
            (
                "iat slightly ahead (clock skew)",
                t(now + 3, now + 3600, None),
                Ok(()),
            ),
            (
                "iat ahead by exactly the leeway",
                t(now + 5, now + 3600, None),
                Ok(()),
            ),
            (
                "iat ahead beyond the leeway",
                t(now + 6, now + 3600, None),
                Err(AuthError::IssuedInFuture),
            ),
            (
                "iat a day ahead",
                t(now + DAY, now + 2 * DAY, None),
                Err(AuthError::IssuedInFuture),
            ),
            (
                "nbf in the past",
                t(now - 60, now + 60, Some(now - 30)),
                Ok(()),
            ),
            ("nbf now", t(now, now + 60, Some(now)), Ok(())),
            (
                "nbf within the leeway",
                t(now, now + 60, Some(now + 5)),
                Ok(()),
            ),
            (
                "nbf beyond the leeway",
                t(now, now + 60, Some(now + 6)),
                Err(AuthError::NotYetValid),
            ),
            (
                "nbf far ahead",
                t(now, now + 2 * DAY, Some(now + DAY)),
                Err(AuthError::NotYetValid),
            ),
            (
                "exactly the maximum lifetime",
                t(now, now + max, None),
                Ok(()),
            ),
            (
                "one second over the maximum",
                t(now, now + max + 1, None),
                Err(long.clone()),
            ),
            ("a year", t(now, now + 365 * DAY, None), Err(long.clone())),
            (
                "old iat stretches past the maximum",
                t(now - max, now + 10, None),
                Err(long.clone()),
            ),
            (
                "exp equal to iat",
                t(now, now, None),
                Err(AuthError::Malformed("exp is not after iat".into())),
            ),
            (
                "exp before iat",
                t(now, now - 1, None),
                Err(AuthError::Malformed("exp is not after iat".into())),
            ),
            (
                "iat a day ahead, exp before it",
                t(now + DAY, now + 60, None),
                Err(AuthError::IssuedInFuture),
            ),
            (
                "huge exp does not overflow",
                t(now, u64::MAX, None),
                Err(long.clone()),
            ),
            (
                "huge nbf does not overflow",
                t(now, now + 60, Some(u64::MAX)),
                Err(AuthError::NotYetValid),
            ),
        ];
        for (name, times, want) in cases {
            assert_eq!(check_times(times, now, LEEWAY_SECS, max), want, "{name}");
        }
    }

    #[test]
    fn check_times_with_zero_leeway_and_small_maximum() {
        let now = 500u64;
        let t = |iat, exp| TokenTimes {
            iat,
            exp,
            nbf: None,
        };
        assert_eq!(check_times(t(now, now + 1), now, 0, 60), Ok(()));
        assert_eq!(
            check_times(t(now - 1, now), now, 0, 60),
            Err(AuthError::Expired)
        );
        assert_eq!(
            check_times(t(now + 1, now + 2), now, 0, 60),
            Err(AuthError::IssuedInFuture)
        );
        assert_eq!(
            check_times(t(now, now + 61), now, 0, 60),
            Err(AuthError::LifetimeTooLong { max_secs: 60 })
        );
    }

    fn signed(claims: &serde_json::Value, key: &[u8]) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            claims,
            &EncodingKey::from_secret(key).unwrap(),
        )
        .unwrap()
    }

    fn claims_at(iat: u64, exp: u64) -> serde_json::Value {
        serde_json::json!({"iss":"demiurge","aud":"demiurge","sub":"alice","tenant":"acme",
            "role":"member","iat": iat, "exp": exp, "jti":"j-1"})
    }

    #[test]
    fn a_one_second_token_dies_within_the_leeway() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let (t, p) = ids();
        let issued = svc
            .issue(&t, &p, Role::Member, Duration::from_secs(1))
            .unwrap();
        let at = issued.issued_at;
        assert!(svc.verify_at(&issued.token, at).is_ok());
        assert!(svc.verify_at(&issued.token, at + 5).is_ok());
        assert_eq!(
            svc.verify_at(&issued.token, at + 6),
            Err(AuthError::Expired)
        );
        assert_eq!(
            svc.verify_at(&issued.token, at + 30),
            Err(AuthError::Expired)
        );
    }

    #[test]
    fn verify_applies_the_time_rules() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let now = crate::time::now_secs();
        let mut future_iat = claims_at(now + 3600, now + 7200);
        assert_eq!(
            svc.verify(&signed(&future_iat, &[1u8; 64])),
            Err(AuthError::IssuedInFuture)
        );
        future_iat["iat"] = serde_json::json!(now + 2);
        assert!(svc.verify(&signed(&future_iat, &[1u8; 64])).is_ok());
        let mut nbf = claims_at(now, now + 3600);
        nbf["nbf"] = serde_json::json!(now + 600);
        assert_eq!(
            svc.verify(&signed(&nbf, &[1u8; 64])),
            Err(AuthError::NotYetValid)
        );
        let long = claims_at(now, now + DEFAULT_MAX_TTL_SECS + 1);
        assert_eq!(
            svc.verify(&signed(&long, &[1u8; 64])),
            Err(AuthError::LifetimeTooLong {
                max_secs: DEFAULT_MAX_TTL_SECS
            })
        );
        let mut no_iat = claims_at(now, now + 60);
        no_iat.as_object_mut().unwrap().remove("iat");
        assert_eq!(
            svc.verify(&signed(&no_iat, &[1u8; 64])),
            Err(AuthError::Malformed("missing claim iat".into()))
        );
        let mut no_jti = claims_at(now, now + 60);
        no_jti.as_object_mut().unwrap().remove("jti");
        assert_eq!(
            svc.verify(&signed(&no_jti, &[1u8; 64])),
            Err(AuthError::Malformed("missing claim jti".into()))
        );
        let mut huge_jti = claims_at(now, now + 60);
        huge_jti["jti"] = serde_json::json!("x".repeat(MAX_JTI_LEN + 1));
        assert!(matches!(
            svc.verify(&signed(&huge_jti, &[1u8; 64])),
            Err(AuthError::Malformed(_))
        ));
        let mut no_exp = claims_at(now, now + 60);
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(
            svc.verify(&signed(&no_exp, &[1u8; 64])),
            Err(AuthError::Malformed("missing claim exp".into()))
        );
    }

    #[test]
    fn the_maximum_lifetime_is_configurable_for_issue_and_verify() {
        let mut c = cfg();
        c.max_ttl = Duration::from_secs(3600);
        let svc = TokenService::new(&[1u8; 64], &c).unwrap();
        let (t, p) = ids();
        assert!(svc
            .issue(&t, &p, Role::Member, Duration::from_secs(3600))
            .is_ok());
        let e = svc
            .issue(&t, &p, Role::Member, Duration::from_secs(3601))
            .unwrap_err();
        assert!(
            matches!(
                e,
                IssueError::TtlTooLong {
                    ttl_secs: 3601,
                    max_secs: 3600
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("--token-max-ttl"), "{e}");
        assert!(matches!(
            svc.issue(&t, &p, Role::Member, Duration::ZERO),
            Err(IssueError::ZeroTtl)
        ));
        // A token another service signed with a longer life is refused here.
        let lenient = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let tok = lenient
            .issue(&t, &p, Role::Member, Duration::from_secs(7200))
            .unwrap();
        assert_eq!(
            svc.verify(&tok.token),
            Err(AuthError::LifetimeTooLong { max_secs: 3600 })
        );
    }

    #[test]
    fn issue_at_sets_iat_and_exp() {
        let svc = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let (t, p) = ids();
        let now = crate::time::now_secs();
        let tok = svc
            .issue_at(&t, &p, Role::Admin, Duration::from_secs(90), now + 1)
            .unwrap();
        let v = svc.verify(&tok.token).unwrap();
        assert_eq!((v.issued_at, v.expires_at), (now + 1, now + 91));
        assert_eq!(v.scope.role(), Role::Admin);
    }

    const ED_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHWajsujkG8AWbNonmnngrlxVnlW5Du5ZOMOkmeQC/Qi\n-----END PRIVATE KEY-----\n";
    const ED_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAYktC/jsfI7IQmuCLIBGAnbzC6JygAIIMSzXgCiLYeOw=\n-----END PUBLIC KEY-----\n";

    #[test]
    fn external_tokens_follow_the_same_time_rules() {
        let mut c = cfg();
        c.external_issuer = Some("https://idp.example".into());
        c.external_key = Some(ExternalJwtKey {
            pem: ED_PUBLIC.as_bytes().to_vec(),
            algorithm: Algorithm::EdDSA,
        });
        let svc = TokenService::new(&[1u8; 64], &c).unwrap();
        let key = EncodingKey::from_ed_pem(ED_PRIVATE.as_bytes()).unwrap();
        let now = crate::time::now_secs();
        let sign = |iat: u64, exp: u64, nbf: Option<u64>| {
            let mut v = serde_json::json!({"iss":"https://idp.example","aud":"demiurge","sub":"carol",
                "tenant":"acme","role":"member","iat": iat, "exp": exp, "jti": "idp-1"});
            if let Some(n) = nbf {
                v["nbf"] = serde_json::json!(n);
            }
            encode(&Header::new(Algorithm::EdDSA), &v, &key).unwrap()
        };
        let ok = svc.verify(&sign(now, now + 600, None)).unwrap();
        assert_eq!(ok.jti, "idp-1");
        assert_eq!(
            svc.verify(&sign(now - 120, now - 60, None)),
            Err(AuthError::Expired)
        );
        assert_eq!(
            svc.verify(&sign(now + 600, now + 1200, None)),
            Err(AuthError::IssuedInFuture)
        );
        assert_eq!(
            svc.verify(&sign(now, now + 600, Some(now + 300))),
            Err(AuthError::NotYetValid)
        );
        assert_eq!(
            svc.verify(&sign(now, now + DEFAULT_MAX_TTL_SECS + 60, None)),
            Err(AuthError::LifetimeTooLong {
                max_secs: DEFAULT_MAX_TTL_SECS
            })
        );
    }
}
