//! Output draining: incremental UTF-8 decoding, redaction, bounded tails,
//! live chunks and private streaming artifacts.
//!
//! Per stream: bytes from the pipe → `Utf8Decoder` (lossy, a character split
//! across reads is kept whole) → [`Scrubber`] (bound secrets) → the `Tail`,
//! the artifact and `on_chunk`. Memory per stream is bounded by one read, the
//! tail (at most 2 × [`TAIL_CHARS`] characters between trims) and the
//! scrubber's hold-back.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncWriteExt, BufWriter};

use super::quota::{OutputBudget, QuotaLimit};
use super::scrub::Scrubber;

/// Characters kept per stream for the model/operator views.
pub const TAIL_CHARS: usize = 12_000;

/// Artifact write buffer.
const ARTIFACT_BUFFER: usize = 64 * 1024;

/// Which pipe a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamKind {
    Stdout,
    Stderr,
}

impl StreamKind {
    /// `"stdout"` or `"stderr"` (also the artifact file infix).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is kept of one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamSummary {
    /// The last [`TAIL_CHARS`] characters of the redacted stream (all of it if shorter).
    pub tail: String,
    /// Bytes the process wrote (as read from the pipe, before decoding/redaction).
    pub total_bytes: u64,
    /// Characters the process wrote (lossy UTF-8 decoding, before redaction).
    pub total_chars: u64,
    /// Whether `tail` omits the beginning of the (redacted) stream.
    pub truncated: bool,
}

/// Incremental lossy UTF-8 decoder: invalid sequences become U+FFFD (as
/// [`String::from_utf8_lossy`]), an incomplete trailing sequence waits for
/// the next read.
#[derive(Debug, Default)]
pub(crate) struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub(crate) fn decode(&mut self, bytes: &[u8]) -> String {
        let joined;
        let mut rest: &[u8] = if self.pending.is_empty() {
            bytes
        } else {
            let mut buf = std::mem::take(&mut self.pending);
            buf.extend_from_slice(bytes);
            joined = buf;
            &joined
        };
        let mut out = String::with_capacity(rest.len());
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    break;
                }
                Err(err) => {
                    let (valid, tail) = rest.split_at(err.valid_up_to());
                    out.push_str(&String::from_utf8_lossy(valid));
                    match err.error_len() {
                        Some(len) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = tail.get(len..).unwrap_or_default();
                        }
                        None => {
                            self.pending = tail.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    pub(crate) fn finish(&mut self) -> String {
        let pending = std::mem::take(&mut self.pending);
        String::from_utf8_lossy(&pending).into_owned()
    }
}

/// The last `limit` characters of a stream, in bounded memory.
#[derive(Debug)]
pub(crate) struct Tail {
    limit: usize,
    buf: String,
    buf_chars: usize,
    seen_chars: u64,
}

impl Tail {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            buf: String::new(),
            buf_chars: 0,
            seen_chars: 0,
        }
    }

    pub(crate) fn push(&mut self, text: &str) {
        let chars = text.chars().count();
        self.seen_chars += chars as u64;
        if chars >= self.limit {
            self.buf.clear();
            self.buf.push_str(last_chars(text, self.limit));
            self.buf_chars = self.limit;
            return;
        }
        self.buf.push_str(text);
        self.buf_chars += chars;
        if self.buf_chars > 2 * self.limit {
            let keep = last_chars(&self.buf, self.limit);
            self.buf = keep.to_owned();
            self.buf_chars = self.limit;
        }
    }

    pub(crate) fn text(&self) -> &str {
        last_chars(&self.buf, self.limit)
    }

    pub(crate) fn truncated(&self) -> bool {
        self.seen_chars > self.limit as u64
    }
}

/// The suffix of `text` holding its last `count` characters.
fn last_chars(text: &str, count: usize) -> &str {
    if count == 0 {
        return "";
    }
    match text.char_indices().rev().nth(count - 1) {
        Some((index, _)) => text.get(index..).unwrap_or(text),
        None => text,
    }
}

/// A private, streaming artifact file.
#[derive(Debug)]
pub(crate) struct ArtifactSink {
    writer: BufWriter<tokio::fs::File>,
}

impl ArtifactSink {
    /// Creates `path` (must not exist) with mode 0600.
    pub(crate) async fn create(path: &Path) -> io::Result<Self> {
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .await?;
        Ok(Self::from_file(file))
    }

    pub(crate) fn from_file(file: tokio::fs::File) -> Self {
        Self {
            writer: BufWriter::with_capacity(ARTIFACT_BUFFER, file),
        }
    }

    async fn write(&mut self, text: &str) -> io::Result<()> {
        self.writer.write_all(text.as_bytes()).await
    }

    /// Flushes and syncs the file to disk.
    async fn finish(&mut self) -> io::Result<()> {
        self.writer.flush().await?;
        self.writer.get_mut().sync_all().await
    }
}

/// An opened artifact (its path and sink), or why it could not be opened.
pub(crate) type OpenedArtifact = Result<(PathBuf, ArtifactSink), String>;

/// Creates the artifact directory (0700 when created) and both artifact
/// files, `<spawn_id>.stdout.log` and `<spawn_id>.stderr.log`.
pub(crate) async fn open_artifacts(dir: &Path, spawn_id: &str) -> [OpenedArtifact; 2] {
    let created = tokio::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .await
        .map_err(|err| format!("artifact directory: {err}"));
    let stdout = open_artifact(dir, spawn_id, StreamKind::Stdout, &created).await;
    let stderr = open_artifact(dir, spawn_id, StreamKind::Stderr, &created).await;
    [stdout, stderr]
}

async fn open_artifact(
    dir: &Path,
    spawn_id: &str,
    kind: StreamKind,
    created: &Result<(), String>,
) -> OpenedArtifact {
    created.clone()?;
    let path = dir.join(format!("{spawn_id}.{kind}.log"));
    match ArtifactSink::create(&path).await {
        Ok(sink) => Ok((path, sink)),
        Err(err) => Err(format!("artifact: {err}")),
    }
}

/// One stream's drain state.
#[derive(Debug)]
pub(crate) struct StreamDrain {
    kind: StreamKind,
    decoder: Utf8Decoder,
    scrubber: Scrubber,
    tail: Tail,
    total_bytes: u64,
    total_chars: u64,
    sink: Option<ArtifactSink>,
    artifact: Option<PathBuf>,
    error: Option<String>,
    /// Bytes the artifact may still take (shared with the other stream).
    budget: OutputBudget,
    /// Set once the budget cut the artifact short; nothing more is written.
    quota: Option<QuotaLimit>,
    pub(crate) eof: bool,
}

impl StreamDrain {
    /// A failed `artifact` is recorded as this stream's artifact error.
    pub(crate) fn new(
        kind: StreamKind,
        secrets: &[(String, String)],
        artifact: OpenedArtifact,
    ) -> Self {
        let (path, sink, error) = match artifact {
            Ok((path, sink)) => (Some(path), Some(sink), None),
            Err(err) => (None, None, Some(err)),
        };
        Self {
            kind,
            decoder: Utf8Decoder::default(),
            scrubber: Scrubber::new(secrets),
            tail: Tail::new(TAIL_CHARS),
            total_bytes: 0,
            total_chars: 0,
            sink,
            artifact: path,
            error,
            budget: OutputBudget::unlimited(),
            quota: None,
            eof: false,
        }
    }

    /// Limits the artifact to what `budget` grants.
    pub(crate) fn with_budget(mut self, budget: OutputBudget) -> Self {
        self.budget = budget;
        self
    }

    /// The limit that cut the artifact short, if one did.
    pub(crate) fn quota(&self) -> Option<QuotaLimit> {
        self.quota
    }

    /// Processes one read.
    pub(crate) async fn feed(&mut self, bytes: &[u8], on_chunk: &mut impl FnMut(StreamKind, &str)) {
        self.total_bytes += bytes.len() as u64;
        let text = self.decoder.decode(bytes);
        self.total_chars += text.chars().count() as u64;
        let visible = self.scrubber.push(&text);
        self.emit(&visible, on_chunk).await;
    }

    /// Ends the stream: flushes the decoder and scrubber, syncs the artifact.
    pub(crate) async fn finish(&mut self, on_chunk: &mut impl FnMut(StreamKind, &str)) {
        self.eof = true;
        let text = self.decoder.finish();
        self.total_chars += text.chars().count() as u64;
        let mut visible = self.scrubber.push(&text);
        visible.push_str(&self.scrubber.finish());
        self.emit(&visible, on_chunk).await;
        if let Some(mut sink) = self.sink.take() {
            if let Err(err) = sink.finish().await {
                self.fail(&err);
            }
        }
    }

    async fn emit(&mut self, text: &str, on_chunk: &mut impl FnMut(StreamKind, &str)) {
        if text.is_empty() {
            return;
        }
        self.tail.push(text);
        if let Some(mut sink) = self.sink.take() {
            let (kept, limit) = self.budget.fit(text);
            let mut written = if kept.is_empty() {
                Ok(())
            } else {
                sink.write(kept).await
            };
            if let Some(limit) = limit {
                // Over the cap: keep what fits, close the file, write no more.
                tracing::warn!(stream = %self.kind, %limit, "terminal artifact stopped at its quota");
                self.quota = Some(limit);
                if written.is_ok() {
                    written = sink.finish().await;
                }
                if let Err(err) = written {
                    self.fail(&err);
                }
            } else {
                match written {
                    Ok(()) => self.sink = Some(sink),
                    Err(err) => self.fail(&err),
                }
            }
        }
        on_chunk(self.kind, text);
    }

    fn fail(&mut self, err: &io::Error) {
        tracing::warn!(stream = %self.kind, %err, "terminal artifact write failed; draining on");
        if self.error.is_none() {
            self.error = Some(format!("artifact: {err}"));
        }
    }

    pub(crate) fn summary(&self) -> StreamSummary {
        StreamSummary {
            tail: self.tail.text().to_owned(),
            total_bytes: self.total_bytes,
            total_chars: self.total_chars,
            truncated: self.tail.truncated(),
        }
    }

    /// The artifact path, if the file was created (complete only without an error).
    pub(crate) fn artifact(&self) -> Option<PathBuf> {
        self.artifact.clone()
    }

    /// Why the artifact is missing or incomplete, prefixed with the stream.
    pub(crate) fn artifact_error(&self) -> Option<String> {
        self.error
            .as_ref()
            .map(|err| format!("{}: {err}", self.kind))
    }
}

#[cfg(test)]
#[path = "drain_tests.rs"]
mod tests;
