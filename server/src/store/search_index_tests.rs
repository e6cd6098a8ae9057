use serde_json::json;

use super::*;

#[test]
fn query_words_are_letters_and_digits_case_folded() {
    assert_eq!(
        terms("Deploy the *API*, deploy!"),
        vec!["deploy", "the", "api"]
    );
    assert_eq!(terms("\"role\": \"user\""), vec!["role", "user"]);
    assert_eq!(terms("部署 Über"), vec!["部署", "über"]);
    assert_eq!(terms("!!! ... \" ' ( ) * : ^"), Vec::<String>::new());
    let many: String = (0..40).map(|i| format!("w{i} ")).collect();
    assert_eq!(terms(&many).len(), MAX_TERMS);
}

#[test]
fn fts5_expressions_cannot_be_injected() {
    assert_eq!(fts5_match("oabc", "  "), None);
    assert_eq!(
        fts5_match("oabc", "\" OR reach : \"x"),
        Some("reach : \"oabc\" AND text : \"or\" AND text : \"reach\" AND text : \"x\"".into())
    );
    assert_eq!(
        fts5_match("s01", "NEAR(a b)"),
        Some("reach : \"s01\" AND text : \"near\" AND text : \"a\" AND text : \"b\"".into())
    );
    assert_eq!(pg_reach_query("oabc"), "oabc:A");
}

#[test]
fn message_text_is_the_content_not_the_json() {
    assert_eq!(
        message_text(&json!({"role": "user", "content": "hello"})),
        ("user".into(), "hello".into())
    );
    assert_eq!(
        message_text(&json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c"}]})),
        ("assistant".into(), String::new())
    );
    assert_eq!(
        message_text(&json!({"role": "user", "content": [
            {"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}, "b"]})),
        ("user".into(), "a\nb".into())
    );
    assert_eq!(message_text(&json!(7)), (String::new(), String::new()));
}

#[test]
fn clips_on_characters() {
    assert_eq!(clip("héllo", 10), "héllo");
    assert_eq!(clip("héllo", 2), "hé…");
    assert_eq!(clip("", 0), "");
}
