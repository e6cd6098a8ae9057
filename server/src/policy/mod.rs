//! Pure decision code: values in, verdicts out, no I/O. The effectful edges
//! live outside: filesystem resolution of tool paths in [`crate::paths`], DNS
//! for the URL policy in [`crate::net`].

pub mod approval_authority;
pub mod approval_policy;
pub mod capabilities;
pub mod command_guard;
pub mod file_walls;
pub mod json_schema;
pub(crate) mod shell;
pub mod url_policy;
pub mod workspace;
