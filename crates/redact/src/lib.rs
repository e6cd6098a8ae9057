//! Secret redaction: one [`redactor::SecretRedactor`] discovers secrets and
//! renders the five result views (model, operator, event, durable, debug);
//! [`lines`] redacts live output line by line; [`preview`] builds the
//! bounded, redacted argument preview an approver sees.
//!
//! A crate of its own, like `demiurge-policy`: pure text in, text out, so
//! the compiler keeps it free of the server, and the fuzz targets build on
//! it alone.

pub mod lines;
pub mod preview;
pub mod redactor;
