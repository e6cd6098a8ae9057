//! Parsed identifiers. Each has one fallible constructor, so a value of the
//! type is valid by construction and handlers never carry raw strings.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why an identifier was refused; the message names the bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}: {reason}")]
pub struct IdError {
    pub kind: &'static str,
    pub reason: String,
}

fn check_name(
    kind: &'static str,
    s: &str,
    max: usize,
    extra: &[char],
    lower_only: bool,
) -> Result<(), IdError> {
    let err = |reason: String| IdError { kind, reason };
    if s.is_empty() {
        return Err(err("must not be empty".into()));
    }
    if s.len() > max {
        return Err(err(format!("longer than {max} characters")));
    }
    let first_ok = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    if !first_ok {
        return Err(err(format!("{s:?} must start with a letter or digit")));
    }
    for c in s.chars() {
        let ok = c.is_ascii_digit()
            || (c.is_ascii_lowercase())
            || (!lower_only && c.is_ascii_uppercase())
            || extra.contains(&c);
        if !ok {
            return Err(err(format!("{s:?} contains {c:?}")));
        }
    }
    Ok(())
}

macro_rules! name_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $max:expr, $extra:expr, $lower:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn parse(s: &str) -> Result<Self, IdError> {
                check_name($kind, s, $max, $extra, $lower)?;
                Ok(Self(s.to_owned()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

name_id!(
    /// A tenant: lowercase letters, digits, `-` and `_`; it names a folder under the home.
    TenantId, "tenant", 63, &['-', '_'], true
);
name_id!(
    /// A principal inside a tenant (a user, a bot, a channel identity).
    PrincipalId, "principal", 128, &['-', '_', '.', '@'], false
);
name_id!(
    /// A workspace folder name of one principal.
    WorkspaceName, "workspace", 64, &['-', '_', '.'], false
);
name_id!(
    /// The id of an Agent Core inside a tenant's agents tree.
    CoreId, "core", 64, &['-', '_'], false
);

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(uuid::Uuid);

        impl $name {
            /// A fresh, time-ordered id (UUIDv7), so ids sort by creation.
            pub fn new() -> Self {
                Self(uuid::Uuid::now_v7())
            }
            pub fn parse(s: &str) -> Result<Self, IdError> {
                uuid::Uuid::try_parse(s).map(Self).map_err(|_| IdError {
                    kind: $kind,
                    reason: format!("{:?} is not a UUID", truncate(s)),
                })
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.as_hyphenated(), f)
            }
        }
    };
}

uuid_id!(
    /// A session.
    SessionId, "session id"
);
uuid_id!(
    /// A turn inside a session.
    TurnId, "turn id"
);

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_ids() {
        for ok in ["default", "acme", "a", "team-1", "t_2", "0abc"] {
            assert!(TenantId::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Acme",
            "-x",
            "_x",
            "a b",
            "a/b",
            "..",
            "a.b",
            "ä",
            "x\0",
            &"a".repeat(64),
        ] {
            assert!(TenantId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn principal_ids() {
        for ok in [
            "alice",
            "Alice",
            "bob@example.com",
            "u.1",
            "slack-U123",
            "x_y",
        ] {
            assert!(PrincipalId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".hidden", "a/b", "../x", "a b", "a:b", &"p".repeat(129)] {
            assert!(PrincipalId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn workspace_and_core_names() {
        assert!(WorkspaceName::parse("default").is_ok());
        assert!(WorkspaceName::parse("proj.v2").is_ok());
        assert!(WorkspaceName::parse("..").is_err());
        assert!(WorkspaceName::parse(".git").is_err());
        assert!(WorkspaceName::parse("a/b").is_err());
        assert!(CoreId::parse("assistant").is_ok());
        assert!(CoreId::parse("my_core-2").is_ok());
        assert!(CoreId::parse("a.b").is_err());
    }

    #[test]
    fn uuid_ids_round_trip_and_reject_garbage() {
        let id = SessionId::new();
        assert_eq!(SessionId::parse(&id.to_string()), Ok(id));
        assert!(SessionId::parse("nope").is_err());
        assert!(TurnId::parse("").is_err());
        assert!(TurnId::parse("' OR 1=1 --").is_err());
        let a = SessionId::new();
        let b = SessionId::new();
        assert!(a.to_string() < b.to_string() || a == b);
    }

    #[test]
    fn errors_name_the_value() {
        let e = TenantId::parse("Bad Tenant").unwrap_err();
        assert!(e.to_string().contains("Bad Tenant"), "{e}");
    }
}
