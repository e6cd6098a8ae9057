use super::*;

const TOKEN: &str = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

fn run(chunks: &[(&'static str, &str)], seed: SecretRedactor) -> BTreeMap<&'static str, String> {
    let mut r = LineRedactor::new(seed, View::Operator);
    let mut out: BTreeMap<&'static str, String> = BTreeMap::new();
    for (stream, chunk) in chunks {
        let piece = r.push(stream, chunk);
        out.entry(stream).or_default().push_str(&piece);
    }
    for stream in r.open_streams() {
        let piece = r.finish(stream);
        out.entry(stream).or_default().push_str(&piece);
    }
    out
}

fn stdout(chunks: &[&str]) -> String {
    let chunks: Vec<(&'static str, &str)> = chunks.iter().map(|c| ("stdout", *c)).collect();
    run(&chunks, SecretRedactor::new())
        .remove("stdout")
        .unwrap_or_default()
}

/// No 8-character window of `secret` survives in `out`.
fn assert_no_fragment(out: &str, secret: &str) {
    let chars: Vec<char> = secret.chars().collect();
    for w in chars.windows(8) {
        let frag: String = w.iter().collect();
        assert!(!out.contains(&frag), "fragment {frag:?} leaked in {out:?}");
    }
}

#[test]
fn ordinary_lines_pass_through_unchanged() {
    let text = "hello world\nsecond line\n\nlast without newline";
    assert_eq!(stdout(&[text]), text);
    assert_eq!(stdout(&["hel", "lo\nwor", "ld\n"]), "hello\nworld\n");
}

#[test]
fn a_carriage_return_ends_a_line_too() {
    let mut r = LineRedactor::new(SecretRedactor::new(), View::Operator);
    assert_eq!(r.push("stdout", "10%\r20"), "10%\r");
    assert_eq!(r.push("stdout", "%\r"), "20%\r");
}

#[test]
fn a_partial_line_is_held_until_its_newline() {
    let mut r = LineRedactor::new(SecretRedactor::new(), View::Operator);
    assert_eq!(r.push("stdout", "abc"), "");
    assert_eq!(r.push("stdout", "def\nghi"), "abcdef\n");
    assert_eq!(r.finish("stdout"), "ghi");
    assert_eq!(r.finish("stdout"), "");
}

#[test]
fn a_token_split_at_any_point_never_leaks() {
    let line = format!("token: {TOKEN} end\n");
    for cut in 1..line.len() {
        let out = stdout(&[&line[..cut], &line[cut..]]);
        assert!(!out.contains(TOKEN), "cut {cut}: {out}");
        assert_no_fragment(&out, &TOKEN[4..]);
        assert!(out.contains("<redacted:"), "cut {cut}: {out}");
        assert!(out.ends_with(" end\n"), "cut {cut}: {out}");
    }
}

#[test]
fn a_token_fed_one_character_at_a_time_never_leaks() {
    let text = format!("a {TOKEN}\nb sk-proj-Ab12Cd34Ef56Gh78Ij90Kl\n");
    let singles: Vec<String> = text.chars().map(String::from).collect();
    let refs: Vec<&str> = singles.iter().map(String::as_str).collect();
    let out = stdout(&refs);
    assert_no_fragment(&out, &TOKEN[4..]);
    assert_no_fragment(&out, "Ab12Cd34Ef56Gh78Ij90Kl");
    assert!(
        out.starts_with("a <redacted:") && out.contains("\nb <redacted:"),
        "{out}"
    );
}

#[test]
fn a_secret_named_once_is_replaced_in_later_lines_too() {
    let out = stdout(&[
        "password=hunter2hunter2\n",
        "noise\n",
        "bare hunter2hunter2 here\n",
    ]);
    assert_no_fragment(&out, "hunter2hunter2");
    assert!(out.contains("noise\n"), "{out}");
    assert!(out.contains("bare <redacted:"), "{out}");
}

#[test]
fn seeded_secrets_are_replaced_everywhere() {
    let mut seed = SecretRedactor::new();
    seed.discover_text("mysql --password=s3cr3tvalue9");
    let out = run(
        &[
            ("stdout", "connected with s3cr3t"),
            ("stdout", "value9 ok\n"),
        ],
        seed,
    );
    let out = &out["stdout"];
    assert_no_fragment(out, "s3cr3tvalue9");
    assert!(out.ends_with(" ok\n"), "{out}");
}

#[test]
fn streams_are_held_separately() {
    let (a, b) = TOKEN.split_at(17);
    let out = run(
        &[
            ("stdout", "first "),
            ("stderr", "warn: "),
            ("stdout", a),
            ("stderr", "disk almost full\n"),
            ("stdout", b),
            ("stdout", "\n"),
        ],
        SecretRedactor::new(),
    );
    assert_eq!(out["stderr"], "warn: disk almost full\n");
    assert_no_fragment(&out["stdout"], &TOKEN[4..]);
    assert!(
        out["stdout"].starts_with("first <redacted:"),
        "{}",
        out["stdout"]
    );
}

fn pem(body_lines: usize) -> (String, Vec<String>) {
    let body: Vec<String> = (0..body_lines)
        .map(|i| format!("MIIEpAIBAAKCAQEA{i:04}qwertyuiopasdfghjklzxcvbnm0123456789ABCDEFGHIJ"))
        .collect();
    let text = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n",
        body.join("\n")
    );
    (text, body)
}

#[test]
fn a_private_key_streamed_in_small_pieces_is_redacted_whole() {
    let (key, body) = pem(25);
    let text = format!("before\n{key}after\n");
    for size in [1usize, 7, 64, 4096] {
        let pieces: Vec<String> = text
            .as_bytes()
            .chunks(size)
            .map(|c| String::from_utf8(c.to_vec()).unwrap())
            .collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let out = stdout(&refs);
        for line in &body {
            assert!(!out.contains(line.as_str()), "size {size}: {out}");
        }
        assert!(!out.contains("MIIEpAIBAAKCAQEA"), "size {size}: {out}");
        assert!(out.starts_with("before\n"), "size {size}: {out}");
        assert!(out.ends_with("after\n"), "size {size}: {out}");
    }
}

#[test]
fn a_private_key_too_long_to_hold_is_dropped_up_to_its_end() {
    let lines = KEY_HOLD_BYTES / 60 + 50;
    let (key, body) = pem(lines);
    let text = format!("{key}after the key\n");
    let pieces: Vec<String> = text
        .as_bytes()
        .chunks(1000)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let out = stdout(&refs);
    assert!(
        !out.contains("MIIEpAIBAAKCAQEA"),
        "{}",
        &out[..out.len().min(400)]
    );
    assert!(out.contains(KEY_DROPPED.trim_end()), "{out}");
    assert!(out.ends_with("after the key\n"), "{out}");
    assert!(!body.is_empty());
}

#[test]
fn an_unfinished_private_key_at_the_end_is_dropped() {
    let out = stdout(&["ok\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"]);
    assert!(out.starts_with("ok\n"), "{out}");
    assert!(!out.contains("b3BlbnNzaC1rZXktdjEAAAAA"), "{out}");
}

#[test]
fn a_certificate_is_not_held() {
    let mut r = LineRedactor::new(SecretRedactor::new(), View::Operator);
    let out = r.push("stdout", "-----BEGIN CERTIFICATE-----\nMIIB\n");
    assert_eq!(out, "-----BEGIN CERTIFICATE-----\nMIIB\n");
}

#[test]
fn a_long_line_without_newline_is_emitted_in_bounded_pieces() {
    let mut r = LineRedactor::new(SecretRedactor::new(), View::Operator);
    let word = "abcdefghi ";
    let mut emitted = 0;
    let mut fed = 0;
    for _ in 0..(3 * HOLD_BYTES / word.len()) {
        emitted += r.push("stdout", word).len();
        fed += word.len();
        assert!(
            fed - emitted <= HOLD_BYTES + word.len(),
            "held {}",
            fed - emitted
        );
    }
    assert!(emitted > 0);
    emitted += r.finish("stdout").len();
    assert_eq!(emitted, fed);
}

#[test]
fn multibyte_text_is_cut_on_character_boundaries() {
    let mut r = LineRedactor::new(SecretRedactor::new(), View::Operator);
    let mut all = String::new();
    for _ in 0..(2 * HOLD_BYTES / 3 + 5) {
        all.push_str(&r.push("stdout", "é€"));
    }
    all.push_str(&r.finish("stdout"));
    assert_eq!(all.chars().count(), 2 * (2 * HOLD_BYTES / 3 + 5));
}

#[test]
fn known_secrets_grow_with_the_text() {
    let mut r = LineRedactor::new(SecretRedactor::new(), View::Operator);
    assert!(r.known().is_empty());
    r.push("stdout", &format!("{TOKEN}\n"));
    assert!(!r.known().is_empty());
    let known = r.into_known();
    assert!(!known.redact_str_for(TOKEN, View::Durable).contains(TOKEN));
}
