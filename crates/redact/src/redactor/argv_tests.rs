#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use crate::redactor::test_support::*;
use serde_json::json;

#[test]
fn argv_array_mysql_short_password() {
    let v = views_of(json!({"argv": ["mysql", "-u", "root", "-pabc", "db"]}));
    assert_eq!(
        v.model["argv"],
        json!(["mysql", "-u", "root", "-p<redacted>", "db"])
    );
}

#[test]
fn argv_array_option_then_value() {
    let v = views_of(json!(["cli", "--token", "argv tok 77", "--x"]));
    assert_eq!(v.model, json!(["cli", "--token", "<redacted>", "--x"]));
    assert_no_secret(&v, &["argv tok 77"]);
}
