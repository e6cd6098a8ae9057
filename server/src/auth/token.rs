//! JWT issue and verification. Local tokens are HS256 with the home's key;
//! an external identity provider's RS256/EdDSA public key may be configured.
//! `alg: none`, wrong keys, wrong audience, expiry and tampering all fail.

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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub aud: String,
    /// The principal.
    pub sub: String,
    pub tenant: String,
    pub role: Role,
    pub iat: u64,
    pub exp: u64,
    pub jti: String,
}

/// Why a token was refused. Messages are safe to show the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token")]
    Missing,
    #[error("token expired")]
    Expired,
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
    v.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
    v.leeway = 30;
    v
}

impl TokenService {
    pub fn new(signing_key: &[u8], cfg: &AuthConfig) -> anyhow::Result<Self> {
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
            encoding: EncodingKey::from_secret(signing_key),
            local: DecodingKey::from_secret(signing_key),
            local_validation: validation(Algorithm::HS256, &cfg.audience, Some(LOCAL_ISSUER)),
            external,
            audience: cfg.audience.clone(),
        })
    }

    /// Sign a token for a principal.
    pub fn issue(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        role: Role,
        ttl: std::time::Duration,
    ) -> anyhow::Result<String> {
        let now = crate::time::now_secs();
        let claims = Claims {
            iss: LOCAL_ISSUER.into(),
            aud: self.audience.clone(),
            sub: principal.to_string(),
            tenant: tenant.to_string(),
            role,
            iat: now,
            exp: now + ttl.as_secs().max(1),
            jti: uuid::Uuid::new_v4().to_string(),
        };
        Ok(encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    /// Verify a token and build the caller's scope from it alone.
    pub fn verify(&self, token: &str) -> Result<PrincipalScope, AuthError> {
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
        let tenant = TenantId::parse(&c.tenant).map_err(|e| AuthError::Malformed(e.to_string()))?;
        let principal =
            PrincipalId::parse(&c.sub).map_err(|e| AuthError::Malformed(e.to_string()))?;
        Ok(PrincipalScope::new(tenant, principal, c.role))
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
        ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => AuthError::Expired,
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
        let tok = svc
            .issue(&t, &p, Role::Operator, Duration::from_secs(60))
            .unwrap();
        let scope = svc.verify(&tok).unwrap();
        assert_eq!(scope.tenant(), &t);
        assert_eq!(scope.principal(), &p);
        assert_eq!(scope.role(), Role::Operator);
    }

    #[test]
    fn wrong_key_is_a_bad_signature() {
        let a = TokenService::new(&[1u8; 64], &cfg()).unwrap();
        let b = TokenService::new(&[2u8; 64], &cfg()).unwrap();
        let (t, p) = ids();
        let tok = a
            .issue(&t, &p, Role::Member, Duration::from_secs(60))
            .unwrap();
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
            .unwrap();
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
            &EncodingKey::from_secret(&[1u8; 64]),
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
            .unwrap();
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
            &EncodingKey::from_secret(&[1u8; 64]),
        )
        .unwrap();
        assert!(matches!(svc.verify(&tok), Err(AuthError::Malformed(_))));
    }
}
