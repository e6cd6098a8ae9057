//! The manual stays true to the code: every flag of every command's
//! `--help` is in `docs/configuration.md`, every path the README's layout
//! and `lib.rs`'s `# Layout` name exists, and every link between the
//! Markdown pages (anchors included) resolves.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::helpers::BIN;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn help(words: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(words)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{words:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

/// The names under a `--help` section such as `Commands:` or `Arguments:`.
fn section<'a>(help: &'a str, title: &str) -> Vec<&'a str> {
    let Some(start) = help.find(&format!("\n{title}\n")) else {
        return Vec::new();
    };
    help[start + title.len() + 2..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   ")) // wrapped help text
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

/// Every command that runs something, as the words after `demiurge`.
fn leaf_commands(prefix: &[String], out: &mut Vec<Vec<String>>) {
    let words: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let text = help(&words);
    let subs = section(&text, "Commands:");
    if subs.is_empty() {
        out.push(prefix.to_vec());
        return;
    }
    for sub in subs.into_iter().filter(|s| *s != "help") {
        let mut next = prefix.to_vec();
        next.push(sub.to_owned());
        leaf_commands(&next, out);
    }
}

#[test]
fn every_flag_and_argument_of_every_command_is_in_the_configuration_doc() {
    let doc = read("docs/configuration.md");
    let mut commands = Vec::new();
    leaf_commands(&[], &mut commands);
    let names: Vec<String> = commands.iter().map(|c| c.join(" ")).collect();
    for expected in ["serve", "token issue", "check url", "migrate"] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    let mut checked = 0;
    for command in &commands {
        let words: Vec<&str> = command.iter().map(String::as_str).collect();
        let text = help(&words);
        assert!(
            doc.contains(&format!("`demiurge {}`", command.join(" "))),
            "docs/configuration.md has no section for `demiurge {}`",
            command.join(" ")
        );
        let flags = text
            .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == '=')
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .filter(|w| *w != "--help" && *w != "--version")
            .map(|w| w.trim_end_matches(']').to_owned());
        let arguments = section(&text, "Arguments:")
            .into_iter()
            .map(|a| {
                a.trim_start_matches('[')
                    .trim_end_matches(']')
                    .trim_end_matches("...")
            })
            .map(str::to_owned);
        for name in flags.chain(arguments) {
            assert!(
                doc.contains(&format!("`{name}`")),
                "docs/configuration.md does not name {name} of `demiurge {}`",
                command.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked > 60, "only {checked} flags seen");
}

/// The backticked paths of the README's layout table exist. Later paths in
/// a cell are relative to the first one's folder when they are not paths
/// from the root (`server/src/turn/`, `core/`, `slots/`).
#[test]
fn every_path_in_the_readme_layout_exists() {
    let readme = read("README.md");
    let start = readme
        .find("\n## Layout\n")
        .expect("README has a Layout section");
    let table = &readme[start..];
    let table = &table[..table[1..].find("\n## ").map_or(table.len(), |i| i + 1)];
    let mut seen = 0;
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let cell = row.split('|').nth(1).unwrap();
        let paths: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
        let base = Path::new(paths[0].trim_end_matches('/'))
            .parent()
            .unwrap_or(Path::new(""))
            .to_path_buf();
        for (i, p) in paths.iter().enumerate() {
            let from_root = root().join(p);
            let exists = from_root.exists() || (i > 0 && root().join(&base).join(p).exists());
            assert!(exists, "README layout names {p}, which does not exist");
            seen += 1;
        }
    }
    assert!(seen >= 10, "only {seen} paths in the layout");
}

/// The file that holds module `path` (`a::b`) of the server crate, if any.
/// A crate `lib.rs` re-exports (`pub use demiurge_policy as policy;`) is
/// looked up in its own folder, `crates/policy/src/`.
fn module_file(lib: &str, path: &[&str]) -> Option<PathBuf> {
    let (src, rest) = match reexported_crate(lib, path[0]) {
        Some(dir) => (root().join("crates").join(dir).join("src"), &path[1..]),
        None => (root().join("server/src"), path),
    };
    if rest.is_empty() {
        return Some(src.join("lib.rs")).filter(|p| p.is_file());
    }
    let rel: PathBuf = rest.iter().collect();
    [
        src.join(&rel).with_extension("rs"),
        src.join(&rel).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// The folder under `crates/` of a pure crate `lib.rs` re-exports as `name`.
fn reexported_crate(lib: &str, name: &str) -> Option<String> {
    lib.lines().find_map(|l| {
        let (krate, alias) = l.strip_prefix("pub use demiurge_")?.split_once(" as ")?;
        (alias.trim_end_matches(';') == name).then(|| krate.to_owned())
    })
}

/// `lib.rs`'s `# Layout` names only modules that exist, and every public
/// module of the crate has its line there.
#[test]
fn lib_rs_layout_names_every_module_and_only_real_ones() {
    let lib = read("server/src/lib.rs");
    let layout: String = lib
        .lines()
        .skip_while(|l| *l != "//! # Layout")
        .take_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!layout.is_empty(), "lib.rs has no # Layout");
    let mut named = BTreeSet::new();
    for item in layout.split('`').skip(1).step_by(2) {
        let segments: Vec<&str> = item.split("::").collect();
        let is_path = segments
            .iter()
            .all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        if !is_path || item.contains('.') {
            continue;
        }
        // Modules up to the first item that starts upper-case (a type).
        let modules: Vec<&str> = segments
            .iter()
            .take_while(|s| s.starts_with(|c: char| c.is_ascii_lowercase()))
            .copied()
            .collect();
        if modules.is_empty() {
            continue;
        }
        let top = modules[0];
        let is_module =
            lib.contains(&format!("\npub mod {top};")) || reexported_crate(&lib, top).is_some();
        if modules.len() == 1 && !is_module {
            continue; // a word in backticks, like `python3`
        }
        assert!(
            module_file(&lib, &modules).is_some(),
            "lib.rs # Layout names `{item}`, but its file ({}) does not exist",
            modules.join("/")
        );
        named.insert(top.to_owned());
    }
    for line in lib.lines() {
        let module = line.strip_prefix("pub mod ").or_else(|| {
            line.strip_prefix("pub use demiurge_")
                .and_then(|l| l.split_once(" as "))
                .map(|(_, alias)| alias)
        });
        if let Some(m) = module.and_then(|l| l.strip_suffix(';')) {
            assert!(
                named.contains(m) || layout.contains(&format!("[`{m}`]")),
                "lib.rs # Layout leaves out the module `{m}`"
            );
        }
    }
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut counts = std::collections::HashMap::<String, usize>::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(&line[hashes..]);
            let n = counts.entry(base.clone()).or_default();
            out.insert(if *n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            });
            *n += 1;
        }
    }
    out
}

/// Lines outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// Link targets `[text](target)` of prose, inline code left out.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn links_between_the_docs_resolve() {
    let root = root();
    let mut pages: Vec<PathBuf> = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in links(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let shown = page.strip_prefix(&root).unwrap().display().to_string();
            assert!(dest.exists(), "{shown}: the link ({target}) leads nowhere");
            if let Some(anchor) = anchor {
                let body = std::fs::read_to_string(&dest).unwrap();
                assert!(
                    anchors(&body).contains(anchor),
                    "{shown}: the link ({target}) names no heading of {}",
                    dest.strip_prefix(&root).unwrap_or(&dest).display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} links");
}

#[test]
fn the_link_checker_reads_markdown_as_github_does() {
    assert_eq!(slug("Flags of `demiurge serve`"), "flags-of-demiurge-serve");
    assert_eq!(slug("A real model"), "a-real-model");
    assert_eq!(
        slug("PostgreSQL and several instances"),
        "postgresql-and-several-instances"
    );
    let text = "# T\n## Same\n## Same\n```\n## Not a heading [x](nowhere.md)\n```\nsee [a](b.md#c) and `[no](code.md)`\n";
    assert_eq!(
        anchors(text).into_iter().collect::<Vec<_>>(),
        ["same", "same-1", "t"]
    );
    assert_eq!(links(text), ["b.md#c"]);
}

/// Every package `name` reaches in `Cargo.lock` (dev-dependencies and every
/// enabled feature included, so this over-approximates `cargo tree`).
fn lock_closure(lock: &str, name: &str) -> BTreeSet<String> {
    let mut deps = std::collections::HashMap::<String, Vec<String>>::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
                .map(|v| v.trim_end_matches('"').to_owned())
        };
        let Some(pkg) = field("name") else { continue };
        let list: Vec<String> = block
            .split_once("dependencies = [")
            .map(|(_, rest)| rest.split(']').next().unwrap_or(""))
            .unwrap_or("")
            .lines()
            .filter_map(|l| l.trim().trim_end_matches(',').strip_prefix('"'))
            .filter_map(|l| l.trim_end_matches('"').split(' ').next())
            .map(str::to_owned)
            .collect();
        deps.entry(pkg).or_default().extend(list);
    }
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_owned()];
    while let Some(p) = todo.pop() {
        if seen.insert(p.clone()) {
            todo.extend(deps.get(&p).cloned().unwrap_or_default());
        }
    }
    seen
}

/// The pure floor stays pure: no runtime, database, HTTP or MCP crate, and
/// not the server, anywhere below `demiurge-policy` or `demiurge-redact`.
#[test]
fn the_pure_crates_reach_no_runtime_database_or_network_crate() {
    let lock = read("Cargo.lock");
    for krate in ["demiurge-policy", "demiurge-redact"] {
        let closure = lock_closure(&lock, krate);
        assert!(
            closure.len() > 5,
            "{krate} not found in Cargo.lock: {closure:?}"
        );
        for bad in closure.iter().filter(|p| {
            [
                "tokio", "sqlx", "axum", "reqwest", "rmcp", "hyper", "mio", "demiurge",
            ]
            .iter()
            .any(|b| p.as_str() == *b || p.starts_with(&format!("{b}-")))
        }) {
            assert_eq!(bad, krate, "{krate} reaches {bad}");
        }
    }
    // The checker itself sees the server's runtime.
    assert!(lock_closure(&lock, "demiurge").contains("tokio"));
}
