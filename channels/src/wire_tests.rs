//! Fixtures follow each platform's documented examples, trimmed to the
//! fields that matter plus a few the host ignores.

use super::*;

const APPROVAL: &str = "01a23c00-08f4-7299-91e4-607295542110";

#[test]
fn telegram_private_and_group_messages() {
    let private = br#"{"update_id":10000,"message":{"date":1441645532,"chat":{"last_name":"Test Lastname","id":1111111,"first_name":"Test","username":"Test","type":"private"},"message_id":1365,"from":{"last_name":"Test Lastname","id":1111111,"first_name":"Test","username":"Test","is_bot":false},"text":"/start"}}"#;
    assert_eq!(
        telegram(private).unwrap(),
        Inbound::Message(Message {
            event_id: "10000".into(),
            user: "1111111".into(),
            conversation: Conversation {
                chat: "1111111".into(),
                thread: None,
                group: false
            },
            text: "/start".into(),
            reply_handle: None,
        })
    );
    let group = br#"{"update_id":7,"message":{"message_id":5,"message_thread_id":42,"from":{"id":99,"is_bot":false,"first_name":"A"},"chat":{"id":-100123,"title":"team","type":"supergroup"},"date":1,"text":"hello"}}"#;
    let Inbound::Message(m) = telegram(group).unwrap() else {
        panic!()
    };
    assert_eq!(
        m.conversation,
        Conversation {
            chat: "-100123".into(),
            thread: Some("42".into()),
            group: true
        }
    );
}

#[test]
fn telegram_ignores_bots_edits_and_media() {
    let cases: [&[u8]; 4] = [
        br#"{"update_id":1,"message":{"message_id":1,"from":{"id":5,"is_bot":true,"first_name":"b"},"chat":{"id":5,"type":"private"},"date":1,"text":"x"}}"#,
        br#"{"update_id":2,"edited_message":{"message_id":1,"chat":{"id":5,"type":"private"},"date":1,"text":"x"}}"#,
        br#"{"update_id":3,"message":{"message_id":1,"from":{"id":5,"is_bot":false,"first_name":"a"},"chat":{"id":5,"type":"private"},"date":1,"photo":[]}}"#,
        br#"{"update_id":4,"callback_query":{"id":"c","from":{"id":5,"is_bot":false,"first_name":"a"},"data":"something-else"}}"#,
    ];
    for body in cases {
        assert!(matches!(telegram(body).unwrap(), Inbound::Ignored(_)));
    }
    assert!(telegram(b"not json").is_err());
    assert!(telegram(br#"{"message":{}}"#).is_err());
}

#[test]
fn telegram_button_press() {
    let body = format!(
        r#"{{"update_id":11,"callback_query":{{"id":"4382bfdwdsb323b2d9","from":{{"id":1111111,"is_bot":false,"first_name":"Test"}},"message":{{"message_id":77,"chat":{{"id":1111111,"type":"private"}},"date":1,"text":"Approve?"}},"chat_instance":"x","data":"apr:s:{APPROVAL}"}}}}"#
    );
    assert_eq!(
        telegram(body.as_bytes()).unwrap(),
        Inbound::Button {
            event_id: "11".into(),
            user: "1111111".into(),
            conversation: Conversation {
                chat: "1111111".into(),
                thread: None,
                group: false
            },
            approval_id: APPROVAL.into(),
            decision: Decision::AllowSession,
            reply_handle: Some("4382bfdwdsb323b2d9:1111111:77".into()),
        }
    );
}

#[test]
fn slack_url_verification_and_messages() {
    let challenge = br#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    assert_eq!(
        slack_event(challenge).unwrap(),
        Inbound::Challenge("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into())
    );
    let msg = br#"{"token":"z","team_id":"T061EG9R6","api_app_id":"A0PNCHHK2","event":{"type":"message","channel":"C024BE91L","user":"U2147483697","text":"Live long and prospect.","ts":"1355517523.000005","event_ts":"1355517523.000005","channel_type":"channel"},"type":"event_callback","authed_teams":["T061EG9R6"],"event_id":"Ev0PV52K21","event_time":1355517523}"#;
    assert_eq!(
        slack_event(msg).unwrap(),
        Inbound::Message(Message {
            event_id: "Ev0PV52K21".into(),
            user: "U2147483697".into(),
            conversation: Conversation {
                chat: "C024BE91L".into(),
                thread: Some("1355517523.000005".into()),
                group: true
            },
            text: "Live long and prospect.".into(),
            reply_handle: None,
        })
    );
    let dm_in_thread = br#"{"type":"event_callback","event_id":"Ev2","event":{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hi","ts":"2.0","thread_ts":"1.0"}}"#;
    let Inbound::Message(m) = slack_event(dm_in_thread).unwrap() else {
        panic!()
    };
    assert_eq!(
        m.conversation,
        Conversation {
            chat: "D1".into(),
            thread: Some("1.0".into()),
            group: false
        }
    );
    let dm = br#"{"type":"event_callback","event_id":"Ev6","event":{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hi","ts":"3.0"}}"#;
    let Inbound::Message(m) = slack_event(dm).unwrap() else {
        panic!()
    };
    assert_eq!(
        m.conversation.thread, None,
        "a direct chat is one conversation"
    );
    for ignored in [
        &br#"{"type":"event_callback","event_id":"Ev3","event":{"type":"message","subtype":"message_changed","channel":"C1"}}"#[..],
        br#"{"type":"event_callback","event_id":"Ev4","event":{"type":"message","bot_id":"B1","user":"U1","text":"x","channel":"C1","ts":"1"}}"#,
        br#"{"type":"event_callback","event_id":"Ev5","event":{"type":"reaction_added","user":"U1"}}"#,
        br#"{"type":"app_rate_limited"}"#,
    ] {
        assert!(matches!(slack_event(ignored).unwrap(), Inbound::Ignored(_)));
    }
    assert!(slack_event(br#"{"type":"url_verification"}"#).is_err());
    assert!(slack_event(br#"{"type":"event_callback","event":{}}"#).is_err());
}

#[test]
fn slack_block_action_button() {
    let payload = format!(
        r#"{{"type":"block_actions","user":{{"id":"U0CA5","username":"Amy McGee"}},"api_app_id":"A0CA5","token":"x","container":{{"type":"message"}},"trigger_id":"12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3","channel":{{"id":"CBR2V3XEX","name":"review-updates"}},"message":{{"ts":"1548261231.000200","text":"Approve?"}},"response_url":"https://hooks.slack.com/actions/AABA1ABCD/1232321423432/D09sSasdasdAS9091209","actions":[{{"action_id":"approve","block_id":"b","value":"apr:o:{APPROVAL}","type":"button","action_ts":"1548426417.840180"}}]}}"#
    );
    let body: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload)
        .finish();
    assert_eq!(
        slack_interaction(body.as_bytes()).unwrap(),
        Inbound::Button {
            event_id: "12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3:1548426417.840180"
                .into(),
            user: "U0CA5".into(),
            conversation: Conversation {
                chat: "CBR2V3XEX".into(),
                thread: Some("1548261231.000200".into()),
                group: true
            },
            approval_id: APPROVAL.into(),
            decision: Decision::AllowOnce,
            reply_handle: Some(
                "https://hooks.slack.com/actions/AABA1ABCD/1232321423432/D09sSasdasdAS9091209"
                    .into()
            ),
        }
    );
    assert!(slack_interaction(b"nothing=here").is_err());
    assert!(slack_interaction(b"payload=%7Bbroken").is_err());
    let view = form_urlencoded::Serializer::new(String::new())
        .append_pair(
            "payload",
            r#"{"type":"view_submission","user":{"id":"U1"}}"#,
        )
        .finish();
    assert!(matches!(
        slack_interaction(view.as_bytes()).unwrap(),
        Inbound::Ignored(_)
    ));
}

#[test]
fn discord_ping_command_and_component() {
    assert_eq!(
        discord(br#"{"id":"1","application_id":"2","type":1,"token":"t","version":1}"#).unwrap(),
        Inbound::Ping
    );
    let command = br#"{"id":"786008729715212338","application_id":"775799577604522054","type":2,"guild_id":"290926798626357999","channel_id":"645027906669510667","member":{"user":{"id":"53908232506183680","username":"Mason"},"roles":[]},"token":"A_UNIQUE_TOKEN","version":1,"data":{"id":"771825006014889984","name":"ask","type":1,"options":[{"type":3,"name":"text","value":"what is new?"}]}}"#;
    assert_eq!(
        discord(command).unwrap(),
        Inbound::Message(Message {
            event_id: "786008729715212338".into(),
            user: "53908232506183680".into(),
            conversation: Conversation {
                chat: "645027906669510667".into(),
                thread: None,
                group: true
            },
            text: "what is new?".into(),
            reply_handle: Some("A_UNIQUE_TOKEN".into()),
        })
    );
    let component = format!(
        r#"{{"id":"9","application_id":"2","type":3,"channel_id":"55","user":{{"id":"77"}},"token":"tok","version":1,"message":{{"id":"m"}},"data":{{"custom_id":"apr:d:{APPROVAL}","component_type":2}}}}"#
    );
    assert_eq!(
        discord(component.as_bytes()).unwrap(),
        Inbound::Button {
            event_id: "9".into(),
            user: "77".into(),
            conversation: Conversation {
                chat: "55".into(),
                thread: None,
                group: false
            },
            approval_id: APPROVAL.into(),
            decision: Decision::Deny,
            reply_handle: Some("tok".into()),
        }
    );
    for ignored in [
        &br#"{"id":"1","type":2,"channel_id":"5","user":{"id":"7"},"data":{"name":"ask","options":[]}}"#[..],
        br#"{"id":"1","type":3,"channel_id":"5","user":{"id":"7"},"data":{"custom_id":"other"}}"#,
        br#"{"id":"1","type":5,"channel_id":"5","user":{"id":"7"}}"#,
        br#"{"id":"1","type":2,"channel_id":"5","data":{"name":"ask"}}"#,
        br#"{"id":"1","type":2,"channel_id":"5","user":{"id":"7"},"data":{"name":"other","options":[{"value":"x"}]}}"#,
    ] {
        assert!(matches!(discord(ignored).unwrap(), Inbound::Ignored(_)));
    }
    assert!(discord(b"[]").is_err());
}

#[test]
fn webhook_messages_and_dedup_keys() {
    let body = br#"{"user":"u1","conversation":"c1","text":"hello"}"#;
    let Inbound::Message(m) = webhook(body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (
            m.user.as_str(),
            m.conversation.chat.as_str(),
            m.text.as_str()
        ),
        ("u1", "c1", "hello")
    );
    assert_eq!(m.event_id.len(), 64, "the body's hash when no id is given");
    let Inbound::Message(again) = webhook(body).unwrap() else {
        panic!()
    };
    assert_eq!(
        m.event_id, again.event_id,
        "a retried delivery has the same key"
    );
    let Inbound::Message(with_id) =
        webhook(br#"{"id":"evt-1","user":"u1","conversation":"c1","text":"x"}"#).unwrap()
    else {
        panic!()
    };
    assert_eq!(with_id.event_id, "evt-1");
    for bad in [
        &br#"{"user":"","conversation":"c","text":"x"}"#[..],
        br#"{"user":"u","text":"x"}"#,
        br#"{"user":"u","conversation":"c","text":"x","admin":true}"#,
        b"text",
    ] {
        assert!(webhook(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}
