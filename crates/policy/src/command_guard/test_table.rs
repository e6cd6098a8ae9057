//! The shape of the guard's table tests: each part lists its cases beside its
//! code, and [`assert_table`] runs one list.

use super::{classify, Decision, Risk};

pub(super) const A: Decision = Decision::Allow;
pub(super) const P: Decision = Decision::Prompt;
pub(super) const B: Decision = Decision::Block;
pub(super) const L: Risk = Risk::Low;
pub(super) const M: Risk = Risk::Medium;
pub(super) const H: Risk = Risk::High;
pub(super) const C: Risk = Risk::Critical;

/// (command, decision, risk, rule)
pub(super) type Case = (&'static str, Decision, Risk, &'static str);

/// Classifies every case and fails with the whole list of mismatches. Blocked
/// cases must also be critical, allowed ones auto-approvable and prompted ones
/// not.
pub(super) fn assert_table(table: &[Case]) {
    let mut failures = Vec::new();
    for (cmd, decision, risk, rule) in table {
        let v = classify(cmd);
        if v.decision != *decision || v.risk != *risk || v.rule != *rule {
            failures.push(format!(
                "{cmd:?}: expected {decision:?}/{risk:?}/{rule}, got {:?}/{:?}/{}",
                v.decision, v.risk, v.rule
            ));
        }
        let shape_ok = match decision {
            Decision::Block => v.risk == Risk::Critical,
            Decision::Allow => v.is_auto_approvable(),
            Decision::Prompt => !v.is_auto_approvable(),
        };
        if !shape_ok {
            failures.push(format!(
                "{cmd:?}: {v:?} has the wrong shape for {decision:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
