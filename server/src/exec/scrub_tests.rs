#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn secrets(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(t, v)| ((*t).to_owned(), (*v).to_owned()))
        .collect()
}

/// Feeds `pieces` one by one; checks the hold-back bound after every push.
fn stream(scrubber: &mut Scrubber, pieces: &[&str], max_len: usize) -> String {
    let mut out = String::new();
    for piece in pieces {
        out.push_str(&scrubber.push(piece));
        assert!(scrubber.pending_len() < max_len.max(1));
    }
    out.push_str(&scrubber.finish());
    out
}

/// Reference: at each character, the longest value that starts there.
fn naive(text: &str, pairs: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = pairs.iter().filter(|(_, v)| !v.is_empty()).collect();
    sorted.sort_by_key(|p| std::cmp::Reverse(p.1.len()));
    let mut out = String::new();
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if let Some((target, value)) = sorted.iter().find(|(_, v)| rest.starts_with(v.as_str())) {
            out.push_str(&format!("<redacted:{target}>"));
            rest = &rest[value.len()..];
        } else {
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
    }
    out
}

#[test]
fn replaces_every_occurrence() {
    let s = Scrubber::new(&secrets(&[("DB_PASSWORD", "hunter2"), ("TOKEN", "tok")]));
    assert_eq!(
        s.redact_all("a hunter2 b hunter2hunter2 tok."),
        "a <redacted:DB_PASSWORD> b <redacted:DB_PASSWORD><redacted:DB_PASSWORD> <redacted:TOKEN>."
    );
}

#[test]
fn no_secrets_passes_through_without_holding_back() {
    let mut s = Scrubber::new(&secrets(&[("EMPTY", "")]));
    assert!(s.is_empty());
    assert_eq!(s.push("abc"), "abc");
    assert_eq!(s.pending_len(), 0);
    assert_eq!(s.finish(), "");
}

#[test]
fn a_secret_split_at_every_position_is_replaced() {
    let pairs = secrets(&[("PW", "hunter2"), ("UNI", "pässwörd😀")]);
    let text = "x hunter2 y pässwörd😀 z hunter2";
    let expected = "x <redacted:PW> y <redacted:UNI> z <redacted:PW>";
    let max_len = "pässwörd😀".len();
    let bounds: Vec<usize> = (0..=text.len())
        .filter(|i| text.is_char_boundary(*i))
        .collect();
    for &i in &bounds {
        for &j in bounds.iter().filter(|j| **j >= i) {
            let mut s = Scrubber::new(&pairs);
            let out = stream(&mut s, &[&text[..i], &text[i..j], &text[j..]], max_len);
            assert_eq!(out, expected, "split at {i}/{j}");
        }
    }
}

#[test]
fn only_a_possible_secret_prefix_is_held_back() {
    let mut s = Scrubber::new(&secrets(&[("PW", "hunter2")]));
    assert_eq!(s.push("hello "), "hello ");
    assert_eq!(s.pending_len(), 0);
    assert_eq!(s.push("hun"), "");
    assert_eq!(s.pending_len(), 3);
    assert_eq!(s.push("gry hu"), "hungry ");
    assert_eq!(s.pending_len(), 2);
    assert_eq!(s.push("nhunt"), "hun");
    assert_eq!(s.push("er2 ok"), "<redacted:PW> ok");
    assert_eq!(s.finish(), "");
}

#[test]
fn char_by_char_feeding() {
    let pairs = secrets(&[("PW", "hunter2")]);
    let text = "hunhunter2hunter hunter2!";
    let pieces: Vec<String> = text.chars().map(String::from).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let mut s = Scrubber::new(&pairs);
    assert_eq!(
        stream(&mut s, &refs, 7),
        "hun<redacted:PW>hunter <redacted:PW>!"
    );
}

#[test]
fn leftmost_then_longest() {
    let pairs = secrets(&[("A", "abc"), ("B", "abcdef"), ("C", "cde")]);
    let s = Scrubber::new(&pairs);
    assert_eq!(s.redact_all("xabcdefy"), "x<redacted:B>y");
    assert_eq!(s.redact_all("xabcdex"), "x<redacted:A>dex");
    assert_eq!(s.redact_all("xbcdex"), "xb<redacted:C>x");
}

#[test]
fn a_repeated_value_keeps_its_first_target() {
    let s = Scrubber::new(&secrets(&[("FIRST", "same"), ("SECOND", "same")]));
    assert_eq!(s.redact_all("same"), "<redacted:FIRST>");
}

/// Random texts over a small alphabet, random chunking: streaming equals one
/// pass, and one pass equals the naive reference.
#[test]
fn random_streams_match_the_reference() {
    let pairs = secrets(&[
        ("AB", "ab"),
        ("ABC", "abc"),
        ("BCA", "bca"),
        ("CC", "cc"),
        ("E", "é€a"),
    ]);
    let alphabet: Vec<char> = "abcé€".chars().collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |bound: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % bound as u64) as usize
    };
    for _ in 0..2_000 {
        let len = next(40);
        let text: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
        let whole = Scrubber::new(&pairs).redact_all(&text);
        assert_eq!(whole, naive(&text, &pairs), "{text}");
        let mut pieces = Vec::new();
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let mut cut = next(rest.len() + 1);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            pieces.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        let mut s = Scrubber::new(&pairs);
        assert_eq!(stream(&mut s, &pieces, "é€a".len()), whole, "{pieces:?}");
    }
}
