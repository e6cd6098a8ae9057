use serde_json::json;

use super::*;

fn turns(sizes: &[u64]) -> Vec<StoredTurn> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, t)| StoredTurn {
            last_id: i as i64 + 1,
            messages: vec![],
            tokens: *t,
        })
        .collect()
}

fn sent(p: &Plan, summary: u64, room: u64, ts: &[StoredTurn]) -> u64 {
    match p {
        Plan::Send { first } => summary + ts[*first..].iter().map(|t| t.tokens).sum::<u64>(),
        Plan::Compact { first, .. } => {
            summary_limit(room) + ts[*first..].iter().map(|t| t.tokens).sum::<u64>()
        }
    }
}

#[test]
fn everything_is_sent_while_it_fits() {
    assert_eq!(
        plan(1000, 0, &turns(&[100, 200, 300])),
        Plan::Send { first: 0 }
    );
    assert_eq!(
        plan(1000, 400, &turns(&[100, 200, 300])),
        Plan::Send { first: 0 }
    );
    assert_eq!(plan(1000, 0, &[]), Plan::Send { first: 0 });
}

#[test]
fn older_turns_are_compacted_keeping_the_newest_half() {
    let ts = turns(&[300, 300, 200, 200, 100]);
    // 1100 > 1000: keep the newest that fit in 500 (100 + 200 + 200), compact the rest.
    assert_eq!(plan(1000, 0, &ts), Plan::Compact { upto: 2, first: 2 });
    // The old summary counts too.
    let ts = turns(&[100, 100, 100]);
    assert_eq!(plan(400, 200, &ts), Plan::Compact { upto: 1, first: 1 });
}

#[test]
fn a_turn_too_big_to_keep_is_compacted_and_one_too_big_for_anything_is_dropped() {
    // The newest turn alone is over half the room: it is compacted too.
    let ts = turns(&[100, 900]);
    assert_eq!(plan(1000, 200, &ts), Plan::Compact { upto: 2, first: 2 });
    // Only the summary is too big: turns are dropped oldest first.
    let ts = turns(&[10, 10, 10]);
    assert_eq!(plan(100, 85, &ts), Plan::Send { first: 2 });
}

#[test]
fn no_plan_ever_exceeds_the_room() {
    // A deterministic spread of turn sizes, summaries and rooms.
    let mut seed = 7u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    for _ in 0..2000 {
        let room = 200 + next() % 5000;
        let n = (next() % 40) as usize;
        let sizes: Vec<u64> = (0..n).map(|_| 1 + next() % (room / 3)).collect();
        let summary = next() % summary_limit(room).max(1);
        let ts = turns(&sizes);
        let p = plan(room, summary, &ts);
        assert!(
            sent(&p, summary, room, &ts) <= room,
            "{p:?} room {room} summary {summary} {sizes:?}"
        );
        if let Plan::Compact { upto, first } = p {
            assert!(upto >= 1 && first >= upto && first <= ts.len());
        }
    }
}

#[test]
fn estimates_err_high_and_texts_fit() {
    assert_eq!(estimate_tokens(&json!("abcdef")), 2 + 4);
    let m = json!({"role": "user", "content": "x".repeat(300)});
    assert!(estimate_tokens(&m) >= 100);
    let long = "é".repeat(1000);
    let cut = fit_text(&long, 100);
    assert!(estimate_tokens(&json!(cut)) <= 100, "{}", cut.len());
    assert!(cut.starts_with('…'));
    assert_eq!(fit_text("short", 100), "short");
}

#[test]
fn transcript_lines_name_roles_and_calls() {
    let m = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]});
    assert_eq!(
        transcript_line(&m),
        "assistant:  [called read_file({\"path\":\"a\"})]"
    );
    let t = json!({"role": "tool", "tool_call_id": "c", "content": "y".repeat(2000)});
    assert!(transcript_line(&t).chars().count() < 820);
    let s = summary_message("facts");
    assert_eq!(s["role"], "system");
    assert!(s["content"].as_str().unwrap().ends_with("\n\nfacts"));
}
