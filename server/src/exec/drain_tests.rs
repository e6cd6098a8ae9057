#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;

use super::*;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn decoder_keeps_split_characters_whole() {
    let text = "héllo wörld 😀 ∑ end";
    let bytes = text.as_bytes();
    for i in 0..=bytes.len() {
        for j in i..=bytes.len() {
            let mut d = Utf8Decoder::default();
            let mut out = d.decode(&bytes[..i]);
            out.push_str(&d.decode(&bytes[i..j]));
            out.push_str(&d.decode(&bytes[j..]));
            out.push_str(&d.finish());
            assert_eq!(out, text, "split {i}/{j}");
        }
    }
}

#[test]
fn decoder_matches_lossy_decoding_of_bad_bytes() {
    let bytes: &[u8] = b"ok \xff\xfe mid \xe2\x82 x \xf0\x9f\x98\x80 \xc3";
    let expected = String::from_utf8_lossy(bytes).into_owned();
    for i in 0..=bytes.len() {
        let mut d = Utf8Decoder::default();
        let mut out = d.decode(&bytes[..i]);
        out.push_str(&d.decode(&bytes[i..]));
        out.push_str(&d.finish());
        assert_eq!(out, expected, "split {i}");
    }
}

#[test]
fn tail_keeps_exactly_the_last_chars() {
    let mut tail = Tail::new(10);
    tail.push("abc");
    assert_eq!(tail.text(), "abc");
    assert!(!tail.truncated());
    tail.push("defghij");
    assert_eq!(tail.text(), "abcdefghij");
    assert!(!tail.truncated());
    tail.push("é");
    assert_eq!(tail.text(), "bcdefghijé");
    assert!(tail.truncated());
    for i in 0..100 {
        tail.push(&format!("{}ü", i % 10));
    }
    assert_eq!(tail.text(), "5ü6ü7ü8ü9ü");
    tail.push(&"x".repeat(1_000));
    assert_eq!(tail.text(), "x".repeat(10));
    assert!(tail.buf.chars().count() <= 20);
}

#[test]
fn tail_memory_stays_bounded() {
    let mut tail = Tail::new(TAIL_CHARS);
    let piece = "0123456789".repeat(37);
    for _ in 0..2_000 {
        tail.push(&piece);
        assert!(tail.buf.chars().count() <= 2 * TAIL_CHARS);
    }
    assert_eq!(tail.text().chars().count(), TAIL_CHARS);
}

#[tokio::test]
async fn artifacts_are_private_and_the_dir_is_created_0700() {
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("runtime/artifacts/root1");
    let [out, err] = open_artifacts(&art, "proc_x").await;
    let (out_path, _) = out.unwrap();
    let (err_path, _) = err.unwrap();
    assert_eq!(out_path, art.join("proc_x.stdout.log"));
    assert_eq!(err_path, art.join("proc_x.stderr.log"));
    assert_eq!(mode(&art), 0o700);
    assert_eq!(mode(&out_path), 0o600);
    assert_eq!(mode(&err_path), 0o600);
    // A second spawn with the same id never reuses (or follows) an existing file.
    let [again, _] = open_artifacts(&art, "proc_x").await;
    assert!(again.is_err());
}

#[tokio::test]
async fn artifact_dir_that_cannot_exist_is_an_error_for_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let [out, err] = open_artifacts(&file.join("sub"), "proc_y").await;
    assert!(out.unwrap_err().starts_with("artifact directory:"));
    assert!(err.is_err());
}

#[tokio::test]
async fn drain_redacts_everywhere_and_records_totals() {
    let dir = tempfile::tempdir().unwrap();
    let [out, _] = open_artifacts(dir.path(), "proc_z").await;
    let secrets = vec![("PW".to_owned(), "hunter2".to_owned())];
    let mut drain = StreamDrain::new(StreamKind::Stdout, &secrets, out);
    let mut chunks = String::new();
    let mut on_chunk = |kind: StreamKind, text: &str| {
        assert_eq!(kind, StreamKind::Stdout);
        chunks.push_str(text);
    };
    for piece in [&b"a hun"[..], b"ter2 \xc3", b"\xa9 hunter", b"2"] {
        drain.feed(piece, &mut on_chunk).await;
    }
    drain.finish(&mut on_chunk).await;
    let expected = "a <redacted:PW> é <redacted:PW>";
    assert_eq!(chunks, expected);
    let summary = drain.summary();
    assert_eq!(summary.tail, expected);
    assert_eq!(summary.total_bytes, 20);
    assert_eq!(summary.total_chars, 19);
    assert!(!summary.truncated);
    assert!(drain.artifact_error().is_none());
    let written = std::fs::read_to_string(drain.artifact().unwrap()).unwrap();
    assert_eq!(written, expected);
}

/// A write failure mid-stream (ENOSPC from /dev/full) is recorded, the
/// sink is dropped, and draining goes on.
#[tokio::test]
async fn artifact_write_failure_keeps_draining() {
    let Ok(full) = tokio::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .await
    else {
        return; // no /dev/full in this sandbox
    };
    let sink = ArtifactSink::from_file(full);
    let mut drain = StreamDrain::new(StreamKind::Stderr, &[], Ok(("/dev/full".into(), sink)));
    let mut seen = 0usize;
    let mut on_chunk = |_: StreamKind, text: &str| seen += text.len();
    let block = vec![b'x'; 100_000];
    for _ in 0..5 {
        drain.feed(&block, &mut on_chunk).await;
    }
    drain.finish(&mut on_chunk).await;
    assert_eq!(seen, 500_000);
    let summary = drain.summary();
    assert_eq!(summary.total_bytes, 500_000);
    assert_eq!(summary.tail, "x".repeat(TAIL_CHARS));
    assert!(summary.truncated);
    let error = drain.artifact_error().unwrap();
    assert!(error.starts_with("stderr: artifact:"), "{error}");
}
