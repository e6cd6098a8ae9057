//! What a turn knows of its core's skills ([`SkillDoc`], read once per core
//! revision) and which core it runs ([`CoreRef`]): the core's own records,
//! read by the skill tools and slot activations.

use std::path::PathBuf;

/// One skill of a core revision: its id, markdown file and text (`None`
/// when it could not be read as text within the size limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDoc {
    pub id: String,
    /// Absolute path of the markdown file in the live tree.
    pub md: PathBuf,
    pub text: Option<String>,
}

/// Largest skill file read, in bytes.
pub const MAX_SKILL_BYTES: u64 = 512 * 1024;

impl SkillDoc {
    /// Reads the skill at `md` (a regular file, never through a final link).
    pub fn read(id: &str, md: PathBuf) -> Self {
        let text = std::fs::symlink_metadata(&md)
            .ok()
            .filter(|m| m.is_file() && m.len() <= MAX_SKILL_BYTES)
            .and_then(|_| std::fs::read_to_string(&md).ok());
        Self {
            id: id.to_owned(),
            md,
            text,
        }
    }
}

/// Which core a turn runs and where its skills live.
#[derive(Debug, Clone)]
pub struct CoreRef {
    pub id: crate::ids::CoreId,
    /// The core folder in the tenant's live agents tree.
    pub dir: PathBuf,
    /// The skill root relative to `dir`, `/`-separated (empty: the core folder).
    pub skills_root: String,
}
