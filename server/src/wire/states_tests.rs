use super::*;

fn round_trips<T>(all: &[T])
where
    T: Copy + PartialEq + fmt::Debug + fmt::Display + std::str::FromStr<Err = UnknownValue>,
    T: Serialize,
{
    for v in all {
        let text = v.to_string();
        assert_eq!(text.parse::<T>().ok(), Some(*v), "{text}");
        let json = serde_json::to_value(v).unwrap();
        assert_eq!(json, serde_json::Value::String(text));
    }
}

#[test]
fn every_value_round_trips_through_its_one_spelling() {
    round_trips(TurnStatus::ALL);
    round_trips(ApprovalState::ALL);
    round_trips(Decision::ALL);
    round_trips(ClarificationState::ALL);
    round_trips(TaskStatus::ALL);
}

#[test]
fn unknown_stored_values_are_errors_never_defaults() {
    for unknown in ["", "RUNNING", "done", "lost", "failed ", " running"] {
        let e = unknown.parse::<TurnStatus>().unwrap_err();
        assert_eq!(e.kind, "turn status");
        assert_eq!(e.value, unknown);
    }
    for unknown in ["", "Pending", "approved", "allow_once"] {
        assert!(unknown.parse::<ApprovalState>().is_err(), "{unknown:?}");
    }
    for unknown in ["", "allow", "ALLOW_ONCE", "denied"] {
        assert!(unknown.parse::<Decision>().is_err(), "{unknown:?}");
    }
    for unknown in ["", "done", "timed_out", "completed"] {
        assert!(unknown.parse::<TaskStatus>().is_err(), "{unknown:?}");
    }
    assert!("closed".parse::<ClarificationState>().is_err());
    let e = "nope".parse::<TaskStatus>().unwrap_err();
    assert_eq!(e.to_string(), r#"invalid task status: "nope""#);
}

#[test]
fn decisions_name_their_state() {
    assert_eq!(Decision::AllowOnce.state(), ApprovalState::Allowed);
    assert_eq!(Decision::AllowSession.state(), ApprovalState::Allowed);
    assert_eq!(Decision::Deny.state(), ApprovalState::Denied);
    assert!(!TurnStatus::Running.is_terminal());
    assert!(TaskStatus::Lost.is_terminal());
}
