use super::*;

fn small(max: usize) -> Limit {
    Limit {
        max,
        unit: Unit::Chars,
    }
}

#[test]
fn short_text_is_one_part_and_empty_text_none() {
    assert_eq!(split("hello", TELEGRAM), vec!["hello"]);
    assert!(split("", TELEGRAM).is_empty());
    let exact = "a".repeat(4096);
    assert_eq!(split(&exact, TELEGRAM), vec![exact.clone()]);
}

#[test]
fn parts_keep_order_and_concatenate_back() {
    let text: String = (0..400)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    for limit in [TELEGRAM, DISCORD, SLACK_SECTION, small(100), small(64)] {
        let parts = split(&text, limit);
        assert!(parts.len() > 1 || length(&text, limit.unit) <= limit.max);
        for p in &parts {
            assert!(
                length(p, limit.unit) <= limit.max,
                "{} > {}",
                length(p, limit.unit),
                limit.max
            );
        }
        assert_eq!(parts.concat(), text, "limit {}", limit.max);
    }
}

#[test]
fn cuts_prefer_blank_lines_then_lines_then_spaces() {
    let text = format!("{}\n\n{}", "a".repeat(60), "b".repeat(60));
    assert_eq!(
        split(&text, small(100))[0],
        format!("{}\n\n", "a".repeat(60))
    );
    let text = format!("{}\n{}", "a".repeat(60), "b".repeat(60));
    assert_eq!(split(&text, small(100))[0], format!("{}\n", "a".repeat(60)));
    let text = format!("{} {}", "a".repeat(60), "b".repeat(60));
    assert_eq!(split(&text, small(100))[0], format!("{} ", "a".repeat(60)));
    // No boundary at all: a hard cut, still within the limit.
    let text = "x".repeat(250);
    let parts = split(&text, small(100));
    assert!(parts.iter().all(|p| p.len() <= 100));
    assert_eq!(parts.concat(), text);
}

#[test]
fn utf16_counting_never_splits_a_character() {
    let text = "😀".repeat(3000); // 2 UTF-16 units each: 6000 units
    let parts = split(&text, TELEGRAM);
    assert!(parts.len() >= 2);
    for p in &parts {
        assert!(p.encode_utf16().count() <= 4096);
    }
    assert_eq!(parts.concat(), text);
    let mixed = "é漢😀a".repeat(1500);
    for limit in [TELEGRAM, DISCORD, small(50)] {
        let parts = split(&mixed, limit);
        assert_eq!(parts.concat(), mixed);
        assert!(parts.iter().all(|p| length(p, limit.unit) <= limit.max));
    }
}

#[test]
fn a_code_block_cut_in_two_is_closed_and_reopened() {
    let code: String = (0..80).map(|i| format!("let x{i} = {i};\n")).collect();
    let text = format!("Here:\n```\n{code}```\nDone.");
    let parts = split(&text, small(300));
    assert!(parts.len() > 2);
    for (i, p) in parts.iter().enumerate() {
        assert!(p.len() <= 300, "part {i} is {} long", p.len());
        assert_eq!(
            p.matches("```").count() % 2,
            0,
            "part {i} has an unbalanced fence:\n{p}"
        );
    }
    // Without the added fences the text is unchanged.
    let joined = parts.concat().replace("\n``````\n", "");
    assert_eq!(joined, text);
}

#[test]
fn pseudo_random_texts_respect_every_limit() {
    // A small deterministic generator: no extra dependency, repeatable.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet = ['a', 'b', ' ', '\n', 'é', '😀', '`', '漢'];
    for round in 0..300 {
        let len = (next() % 3000) as usize;
        let text: String = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let limit = Limit {
            max: 24 + (next() % 500) as usize,
            unit: if round % 2 == 0 {
                Unit::Chars
            } else {
                Unit::Utf16
            },
        };
        let parts = split(&text, limit);
        for p in &parts {
            assert!(length(p, limit.unit) <= limit.max, "round {round}");
            assert!(!p.is_empty(), "round {round}");
        }
        if !text.contains("```") {
            assert_eq!(parts.concat(), text, "round {round}");
        }
    }
}
