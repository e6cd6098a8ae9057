//! `search_files`: find files by name and/or lines by substring under a
//! workspace folder, skipping sensitive files unless asked (with approval)
//! and never following a symlink out of the workspace.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;

use super::beneath;
use super::contract::{lenient_int, Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use super::files::{path_error, read_approval, shown};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::policy::file_walls::FileWalls;
use crate::policy::workspace::{self, Access, Resolved, Sensitivity};

const DEFAULT_RESULTS: i64 = 50;
const MAX_RESULTS: i64 = 200;
/// Characters of each file scanned for content matches.
const SCAN_CHARS: usize = 200_000;
/// Bytes read per file to find [`SCAN_CHARS`] characters (4 bytes per char at most).
const SCAN_BYTES: u64 = 4 * SCAN_CHARS as u64;
/// Entries visited at most, so a huge tree cannot stall a turn.
const MAX_ENTRIES: usize = 50_000;
/// Characters of a matching line shown.
const LINE_CHARS: usize = 300;

/// Shell-style `fnmatch`: `*`, `?`, `[abc]`, `[!abc]`, `[a-z]`. Iterative,
/// backtracking only to the last `*`, so no pattern can make it exponential.
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    if p.len() > 256 {
        return false;
    }
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
            continue;
        }
        if pi < p.len() {
            let (ok, width) = glob_item(&p, pi, n[ni]);
            if ok {
                pi += width;
                ni += 1;
                continue;
            }
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Does the pattern item at `p[i]` match `c`? Returns (matched, item width).
fn glob_item(p: &[char], i: usize, c: char) -> (bool, usize) {
    match p.get(i) {
        Some('?') => (true, 1),
        Some('[') => {
            let close = p
                .iter()
                .skip(i + 2)
                .position(|x| *x == ']')
                .map(|k| k + i + 2);
            let Some(close) = close else {
                return (c == '[', 1);
            };
            let set = &p[i + 1..close];
            let (negate, set) = match set.first() {
                Some('!') => (true, &set[1..]),
                _ => (false, set),
            };
            let mut hit = false;
            let mut k = 0;
            while k < set.len() {
                if k + 2 < set.len() && set[k + 1] == '-' {
                    hit |= set[k] <= c && c <= set[k + 2];
                    k += 3;
                } else {
                    hit |= set[k] == c;
                    k += 1;
                }
            }
            (hit != negate, close + 1 - i)
        }
        Some(other) => (*other == c, 1),
        None => (false, 1),
    }
}

#[derive(Debug)]
pub struct Walk {
    files: Vec<(PathBuf, bool)>,
    saw_sensitive: bool,
}

/// Every entry under `root` in path order, without following links out of
/// `ws` (canonical) and without entering what the walls refuse (the server's
/// home outside the workspace, the database files).
fn walk(ws: &Path, root: &Path, include_sensitive: bool, walls: &FileWalls) -> Walk {
    let mut out = Walk {
        files: Vec::new(),
        saw_sensitive: false,
    };
    let mut stack = vec![root.to_path_buf()];
    let mut visited = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        let mut subdirs = Vec::new();
        for p in entries {
            visited += 1;
            if visited > MAX_ENTRIES {
                return out;
            }
            if !walls.may_enter(ws, &p) {
                continue;
            }
            let rel = p.strip_prefix(ws).unwrap_or(&p);
            if !matches!(
                workspace::is_sensitive(rel, Access::Read),
                Sensitivity::None
            ) {
                out.saw_sensitive = true;
                if !include_sensitive {
                    continue;
                }
            }
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                // Follow only links that stay inside the workspace.
                match std::fs::canonicalize(&p) {
                    Ok(target) if target.starts_with(ws) && target.is_file() => {
                        // Judge the link by what it points at, not by its name.
                        let rel = target.strip_prefix(ws).unwrap_or(&target);
                        if !matches!(
                            workspace::is_sensitive(rel, Access::Read),
                            Sensitivity::None
                        ) {
                            out.saw_sensitive = true;
                            if !include_sensitive {
                                continue;
                            }
                        }
                        out.files.push((p, false))
                    }
                    _ => {}
                }
                continue;
            }
            if meta.is_dir() {
                out.files.push((p.clone(), true));
                subdirs.push(p);
            } else if meta.is_file() {
                out.files.push((p, false));
            }
        }
        // Reverse so the stack pops in sorted order.
        stack.extend(subdirs.into_iter().rev());
    }
    out
}

/// `search_files`.
pub struct SearchFiles;

#[derive(Debug, Deserialize)]
pub struct SearchArgs {
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(default)]
    pub case_sensitive: Option<bool>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub max_results: Option<i64>,
    #[serde(default)]
    pub include_sensitive: Option<bool>,
}

/// A search, resolved; the walk is filled in by the review.
#[derive(Debug)]
pub struct PlannedSearch {
    pub root: Resolved,
    pub target: String,
    pub query: String,
    pub pattern: String,
    pub case_sensitive: bool,
    pub include_sensitive: bool,
    pub max: usize,
    pub walked: Option<Walk>,
}

impl Tool for SearchFiles {
    type Args = SearchArgs;
    type Prepared = PlannedSearch;

    fn plan(env: &ToolEnv<'_>, args: SearchArgs) -> Plan<PlannedSearch> {
        let target = args.target.unwrap_or_else(|| "content".to_owned());
        if !["content", "name", "both"].contains(&target.as_str()) {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Invalid,
                format!("target must be content, name or both, not {target:?}"),
            ));
        }
        let query = args.query.unwrap_or_default();
        if query.is_empty() && target != "name" {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Invalid,
                "query is required for content search",
            ));
        }
        let max = match args.max_results {
            Some(n) if n > 0 => n.min(MAX_RESULTS),
            _ => DEFAULT_RESULTS,
        } as usize;
        let raw = args.path.as_deref().unwrap_or(".");
        let r = match crate::paths::resolve(env.workspace(), raw, Access::Read) {
            Ok(r) => r,
            Err(e) => return Plan::Done(path_error(e)),
        };
        let approval = match read_approval(&env.walls.files, &r) {
            Ok(a) => a,
            Err(denied) => return Plan::Done(denied),
        };
        Plan::run(
            Gate::one(approval),
            PlannedSearch {
                root: r,
                target,
                query,
                pattern: args.pattern.unwrap_or_else(|| "*".to_owned()),
                case_sensitive: args.case_sensitive.unwrap_or(true),
                include_sensitive: args.include_sensitive.unwrap_or(false),
                max,
                walked: None,
            },
        )
    }

    /// Walks the tree (read-only); a search that would include sensitive
    /// files it met asks a second approval.
    async fn review(env: &ToolEnv<'_>, mut p: PlannedSearch) -> Plan<PlannedSearch> {
        let r = &p.root;
        if !r.exists {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Failed,
                format!("path does not exist: {}", shown(r)),
            ));
        }
        let ws = env.workspace().to_path_buf();
        let root = r.abs.clone();
        let walked = if root.is_file() {
            Walk {
                files: vec![(root.clone(), false)],
                saw_sensitive: false,
            }
        } else {
            let ws2 = ws.canonicalize().unwrap_or_else(|_| ws.clone());
            let walls = env.walls.files.clone();
            let include_sensitive = p.include_sensitive;
            match tokio::task::spawn_blocking(move || walk(&ws2, &root, include_sensitive, &walls))
                .await
            {
                Ok(w) => w,
                Err(_) => {
                    return Plan::Done(ToolOutcome::error(ToolStatus::Failed, "search failed"))
                }
            }
        };
        let gate = if p.include_sensitive && walked.saw_sensitive {
            Gate::one(sensitive_approval(r))
        } else {
            Gate::none()
        };
        p.walked = Some(walked);
        Plan::run(gate, p)
    }

    async fn execute(env: &ToolEnv<'_>, p: PlannedSearch) -> ToolOutcome {
        let Some(walked) = p.walked else {
            return ToolOutcome::error(ToolStatus::Failed, "search failed");
        };
        let base = if p.root.inside {
            env.workspace().to_path_buf()
        } else {
            p.root.abs.clone()
        };
        // Contents are opened beneath this anchor: a folder swapped for a
        // link out since the walk is refused by the kernel, not followed.
        let anchor = if p.root.inside {
            let ws = env.workspace();
            ws.canonicalize().unwrap_or_else(|_| ws.to_path_buf())
        } else {
            match env.walls.files.read_root_for(&p.root.abs) {
                Some(read_root) => read_root.to_path_buf(),
                None => return ToolOutcome::error(ToolStatus::Denied, "outside every read root"),
            }
        };
        let PlannedSearch {
            target,
            query,
            pattern,
            case_sensitive,
            max,
            ..
        } = p;
        let needle = if case_sensitive {
            query.clone()
        } else {
            query.to_lowercase()
        };
        let result = tokio::task::spawn_blocking(move || {
            let mut lines = Vec::new();
            let mut matches = Vec::new();
            'files: for (path, is_dir) in walked.files {
                let rel = path
                    .strip_prefix(&base)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if !(fnmatch(&pattern, &rel) || fnmatch(&pattern, &name)) {
                    continue;
                }
                if target != "content" && (query.is_empty() || rel.contains(&query)) {
                    lines.push(rel.clone());
                    matches.push(json!({"type": "name", "path": rel, "is_dir": is_dir}));
                    if matches.len() >= max {
                        break;
                    }
                }
                if target == "name" || is_dir {
                    continue;
                }
                let Ok(bytes) = beneath::read_prefix(&anchor, &path, SCAN_BYTES) else {
                    continue;
                };
                if bytes.contains(&0) {
                    continue; // binary
                }
                let text = String::from_utf8_lossy(&bytes);
                let text: String = text.chars().take(SCAN_CHARS).collect();
                for (i, line) in text.lines().enumerate() {
                    let hay = if case_sensitive {
                        line.to_owned()
                    } else {
                        line.to_lowercase()
                    };
                    if hay.contains(&needle) {
                        let shown_line: String = line.chars().take(LINE_CHARS).collect();
                        lines.push(format!("{rel}:{}: {shown_line}", i + 1));
                        matches.push(
                            json!({"type": "content", "path": rel, "line": i + 1, "text": shown_line}),
                        );
                        if matches.len() >= max {
                            break 'files;
                        }
                    }
                }
            }
            (lines, matches)
        })
        .await;
        let Ok((lines, matches)) = result else {
            return ToolOutcome::error(ToolStatus::Failed, "search failed");
        };
        let truncated = matches.len() >= max;
        let content = if lines.is_empty() {
            "(no matches)".to_owned()
        } else {
            lines.join("\n")
        };
        ToolOutcome::ok_text(content, json!({"matches": matches, "truncated": truncated}))
    }
}

/// The second approval of a search that meets sensitive files.
fn sensitive_approval(r: &Resolved) -> Approval {
    Approval {
        baseline: ApprovalPolicy::Prompt,
        risk: Risk::High,
        action: "search_sensitive".into(),
        target: shown(r),
        reason: "search includes sensitive files".into(),
        preview: json!({"path": shown(r), "include_sensitive": true}),
        session_cacheable: true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{fnmatch, SearchFiles};
    use crate::policy::approval_policy::Risk;
    use crate::tools::contract::{Gate, Plan, Tool, ToolStatus};
    use crate::tools::testing::{fixture, plan};

    #[tokio::test]
    async fn sensitive_files_met_on_the_walk_ask_a_second_approval() {
        let f = fixture(&[]);
        std::fs::write(f.workspace().join(".env"), "K=v").unwrap();
        std::fs::write(f.workspace().join("a.txt"), "K").unwrap();
        let o = plan::<SearchFiles>(&f, "search_files", json!({"target": "x"})).unwrap_err();
        assert_eq!(o.status, ToolStatus::Invalid);
        let o = plan::<SearchFiles>(&f, "search_files", json!({})).unwrap_err();
        assert_eq!(
            o.status,
            ToolStatus::Invalid,
            "content search needs a query"
        );
        for (include, asks) in [(false, false), (true, true)] {
            let args = json!({"query": "K", "include_sensitive": include});
            let (gate, p) = plan::<SearchFiles>(&f, "search_files", args.clone()).unwrap();
            let Gate::Ask(first) = gate else {
                panic!("{gate:?}")
            };
            assert_eq!(first[0].action, "read");
            let env = f.env("search_files", &args);
            let Plan::Run { gate, prepared } = SearchFiles::review(&env, p).await else {
                panic!("the review ended the call")
            };
            assert!(prepared.walked.as_ref().unwrap().saw_sensitive);
            match gate {
                Gate::Ask(list) if asks => {
                    assert_eq!(list.len(), 1);
                    assert_eq!(
                        (list[0].action.as_str(), list[0].risk),
                        ("search_sensitive", Risk::High)
                    );
                }
                Gate::Ask(list) => assert!(list.is_empty()),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn fnmatch_cases() {
        for (p, n, want) in [
            ("*", "anything", true),
            ("*", "", true),
            ("*.rs", "main.rs", true),
            ("*.rs", "main.rs.bak", false),
            ("src/*.rs", "src/a.rs", true),
            ("?.txt", "a.txt", true),
            ("?.txt", "ab.txt", false),
            ("[abc].md", "b.md", true),
            ("[!abc].md", "b.md", false),
            ("[a-c]x", "bx", true),
            ("[a-c]x", "dx", false),
            ("test_*", "test_x.py", true),
            ("[", "[", true),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            (
                "********************x",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                false,
            ),
            (
                "*a*a*a*a*a*a*a*a*b",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                false,
            ),
            ("**", "", true),
            ("*.[ch]", "x.c", true),
            ("a?c*", "abcdef", true),
        ] {
            assert_eq!(fnmatch(p, n), want, "{p} ~ {n}");
        }
    }
}
