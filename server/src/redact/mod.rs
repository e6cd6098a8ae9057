//! Secret redaction: one [`redactor::SecretRedactor`] discovers secrets and
//! renders the five result views (model, operator, event, durable, debug).

pub mod lines;
pub mod redactor;
