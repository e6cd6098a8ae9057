use super::*;

use std::path::Path;

use test_table::{Case, A, B, C, H, L, M, P};

/// Every part's table.
fn all_cases() -> impl Iterator<Item = &'static Case> {
    [
        destructive::tests::CASES,
        git::tests::CASES,
        paths::tests::CASES,
        read_only::tests::CASES,
        review::tests::CASES,
        simple_command::tests::CASES,
        wrappers::tests::CASES,
    ]
    .into_iter()
    .flatten()
}

#[test]
fn guard_table_is_large_and_unique() {
    let all: Vec<&str> = all_cases().map(|c| c.0).collect();
    assert!(all.len() >= 300, "only {} cases", all.len());
    let mut seen = std::collections::HashSet::new();
    let dupes: Vec<&&str> = all.iter().filter(|c| !seen.insert(**c)).collect();
    assert!(dupes.is_empty(), "duplicate cases: {dupes:?}");
}

// ---------------------------------------------------------------------------
// Working directory

#[test]
fn cwd_under_a_credential_directory_raises_the_risk() {
    let v = classify_in("ls", Some(Path::new("/home/u/.ssh")));
    assert_eq!(
        (v.decision, v.risk, v.rule.as_str()),
        (P, H, "sensitive_path:ssh")
    );
    let v = classify_in("cat credentials", Some(Path::new("/home/u/.aws")));
    assert_eq!(
        (v.decision, v.risk, v.rule.as_str()),
        (P, H, "sensitive_path:aws")
    );
    let v = classify_in("cp config backup", Some(Path::new("/home/u/.kube")));
    assert_eq!(
        (v.decision, v.risk, v.rule.as_str()),
        (P, C, "sensitive_path:kube")
    );
}

#[test]
fn ordinary_cwd_changes_nothing() {
    for (cmd, ..) in all_cases() {
        assert_eq!(
            classify_in(cmd, Some(Path::new("/work/project"))),
            classify(cmd),
            "{cmd:?}"
        );
    }
}

#[test]
fn relative_recursive_delete_is_judged_against_the_cwd() {
    let cases: &[(&str, &str, Decision)] = &[
        ("rm -rf .", "/", B),
        ("rm -rf *", "/", B),
        ("rm -rf ./*", "/home/alice", B),
        ("rm -rf ..", "/home/alice/project", B),
        ("rm -rf etc", "/", B),
        ("find . -delete", "/", B),
        ("chmod -R 777 .", "/usr", B),
        ("rm -rf .", "/home/alice/project", P),
        ("rm -rf build", "/home/alice/project", P),
        ("rm -rf .", "relative/dir", P),
    ];
    for (cmd, cwd, decision) in cases {
        let v = classify_in(cmd, Some(Path::new(cwd)));
        assert_eq!(v.decision, *decision, "{cmd:?} in {cwd}: {v:?}");
    }
    assert_eq!(classify("rm -rf .").decision, P);
}

// ---------------------------------------------------------------------------
// API shape

#[test]
fn verdict_serialises_to_the_check_command_json() {
    let json = serde_json::to_value(classify("ls -la")).unwrap_or_default();
    assert_eq!(json["decision"], "allow");
    assert_eq!(json["risk"], "low");
    assert_eq!(json["rule"], "read_only:ls");
    let json = serde_json::to_value(classify("rm -rf /")).unwrap_or_default();
    assert_eq!(json["decision"], "block");
    assert_eq!(json["risk"], "critical");
    assert_eq!(json["rule"], "destructive:rm_root");
    let v = Verdict {
        decision: P,
        risk: M,
        rule: "x:y".into(),
        reason: None,
    };
    let json = serde_json::to_string(&v).unwrap_or_default();
    assert_eq!(
        json,
        r#"{"decision":"prompt","risk":"medium","rule":"x:y"}"#
    );
}

#[test]
fn severity_order_and_most_severe() {
    assert!(Decision::Block > Decision::Prompt && Decision::Prompt > Decision::Allow);
    assert!(Risk::Critical > Risk::High && Risk::High > Risk::Medium && Risk::Medium > Risk::Low);
    let allow = classify("ls");
    let prompt = classify("cat /etc/hosts");
    let high = classify("cargo test");
    let blocked = classify("rm -rf /");
    let ordered = [allow, prompt, high, blocked];
    for (i, a) in ordered.iter().enumerate() {
        for (j, b) in ordered.iter().enumerate() {
            let m = most_severe(a.clone(), b.clone());
            assert_eq!(m, if j > i { b.clone() } else { a.clone() });
        }
    }
    // A global auto policy folded in with most_severe never lowers the guard.
    let policy_allow = Verdict {
        decision: A,
        risk: L,
        rule: "policy:auto".into(),
        reason: None,
    };
    assert_eq!(
        most_severe(classify("cargo test"), policy_allow).rule,
        "project_code:cargo"
    );
}

#[test]
fn classify_is_classify_in_without_cwd() {
    for cmd in ["ls -la", "rm -rf /", "cargo test", "cat .env"] {
        assert_eq!(classify(cmd), classify_in(cmd, None));
    }
}

// ---------------------------------------------------------------------------
// Property tests (deterministic generator, no extra dependencies)

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const SAFE_FRAGMENTS: &[&str] = &[
    "ls",
    "ls -la",
    "cat README.md",
    "echo hi",
    "printf x",
    "git status",
    "git log -1",
    "rg needle .",
    "head -5",
    "wc -l",
    "pwd",
    "true",
    "grep -n foo src",
    "sort",
    "uniq",
];
const GLUE: &[&str] = &[
    " ",
    " | ",
    " && ",
    " || ",
    "; ",
    " # ",
    " '",
    "'",
    " \"",
    "\"",
    "\\",
    "x",
    "-",
    "=",
    "$",
    "\\\n",
    " 2>/dev/null ",
    "{",
    "}",
    "(",
    ")",
    "＼",
    "＇",
    "\u{1b}[0m",
    "\t",
];
const ACTIVE: &[&str] = &["$(", "`", "<("];

/// Builds a random command from safe fragments and glue, then splices one of
/// `$(`, a backtick or `<(` in at a random character boundary.
fn random_command(rng: &mut XorShift) -> String {
    let mut s = String::new();
    for _ in 0..=rng.below(5) {
        s.push_str(rng.pick(SAFE_FRAGMENTS));
        s.push_str(rng.pick(GLUE));
    }
    let boundaries: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    let at = boundaries[rng.below(boundaries.len())];
    let mut payload = rng.pick(ACTIVE).to_string();
    if rng.below(2) == 0 {
        payload.push_str(rng.pick(SAFE_FRAGMENTS));
        payload.push_str(match payload.chars().next() {
            Some('`') => "`",
            _ => ")",
        });
    }
    s.insert_str(at, &payload);
    s
}

#[test]
fn property_substitution_syntax_is_never_allowed() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..5000 {
        let command = random_command(&mut rng);
        assert!(command.contains("$(") || command.contains('`') || command.contains("<("));
        let v = classify(&command);
        assert_ne!(v.decision, Decision::Allow, "{command:?} -> {v:?}");
    }
}

/// Single-quotes `s` for a shell.
fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Double-quotes `s` for a shell.
fn dq(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Wrappers that take a complete command string.
const STRING_WRAPPERS: &[fn(&str) -> String] = &[
    |p| format!("sh -c {}", sq(p)),
    |p| format!("bash -lc {}", dq(p)),
    |p| format!("eval {}", sq(p)),
    |p| format!("su -c {} root", sq(p)),
    |p| format!("echo $({p})"),
    |p| format!("echo \"$({p})\""),
    |p| format!("echo `{}`", p.replace('\\', "\\\\").replace('`', "\\`")),
    |p| format!("cat <({p})"),
    |p| format!("ls && {p}"),
    |p| format!("ls || {p}"),
    |p| format!("ls; {p}"),
    |p| format!("ls | {p}"),
    |p| format!("({p})"),
    |p| format!("{{ {p}; }}"),
    |p| format!("if true; then {p}; fi"),
    |p| format!("echo {} | sh", sq(p)),
    |p| format!("\u{1b}[1m{p}"),
];

/// Wrappers that prefix a simple command.
const PREFIX_WRAPPERS: &[fn(&str) -> String] = &[
    |p| format!("sudo {p}"),
    |p| format!("sudo -u root -- {p}"),
    |p| format!("env A=1 {p}"),
    |p| format!("nohup {p}"),
    |p| format!("nice -n 5 {p}"),
    |p| format!("timeout 3 {p}"),
    |p| format!("command {p}"),
    |p| format!("exec {p}"),
];

#[test]
fn property_wrapping_a_blocked_payload_keeps_it_blocked() {
    let payloads = [
        "rm -rf /",
        "shutdown now",
        "mkfs.ext4 /dev/sda",
        "dd if=/dev/zero of=/dev/sda",
        "kill -9 -1",
        "kill -1",
        "pkill -9 .",
        "killall -u alice",
        "chmod -R 777 /",
        "rm -rf ~",
        "rm -rf \"$HOME\"",
    ];
    let mut rng = XorShift(42);
    for payload in payloads {
        assert_eq!(classify(payload).decision, B, "{payload}");
        for _ in 0..60 {
            // Up to three layers: prefixes only directly around a simple
            // command, string wrappers anywhere.
            let mut cmd = payload.to_string();
            let mut simple = true;
            for _ in 0..=rng.below(3) {
                if simple && rng.below(2) == 0 {
                    cmd = PREFIX_WRAPPERS[rng.below(PREFIX_WRAPPERS.len())](&cmd);
                } else {
                    cmd = STRING_WRAPPERS[rng.below(STRING_WRAPPERS.len())](&cmd);
                    simple = false;
                }
            }
            if rng.below(4) == 0 {
                // A heredoc ends at a line of its own, so only outermost.
                cmd = format!("bash <<'EOF'\n{cmd}\nEOF\n");
            }
            let v = classify(&cmd);
            assert_eq!(v.decision, B, "{cmd:?} -> {v:?}");
        }
    }
}

#[test]
fn property_random_input_never_panics_and_is_deterministic() {
    let alphabet: Vec<char> =
        " \t\n;&|<>()$`'\"\\{}[]*?~#=!-abcrmsh/0123456789.,:＄（）＼\u{1b}\u{200b}é"
            .chars()
            .collect();
    let mut rng = XorShift(7);
    for _ in 0..5000 {
        let len = rng.below(48);
        let s: String = (0..len)
            .map(|_| alphabet[rng.below(alphabet.len())])
            .collect();
        let v = classify(&s);
        assert_eq!(v, classify(&s));
        if v.decision == Decision::Allow {
            assert_eq!(v.risk, Risk::Low, "{s:?}");
            assert!(v.rule.starts_with("read_only:"), "{s:?} -> {v:?}");
        }
    }
}

#[test]
fn property_appending_to_an_allowed_command_never_lowers_it() {
    let mut rng = XorShift(99);
    let tails = [
        "; rm -rf /",
        " && cargo test",
        " > out.txt",
        " $(x)",
        " &",
        " | sh",
        " *.rs",
    ];
    for _ in 0..500 {
        let base = rng.pick(SAFE_FRAGMENTS);
        let tail = rng.pick(&tails);
        let v = classify(&format!("{base}{tail}"));
        assert!(
            v.severity() > classify(base).severity(),
            "{base}{tail} -> {v:?}"
        );
    }
}
