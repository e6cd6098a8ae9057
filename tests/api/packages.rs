//! Packages from a trusted repository in the Python project's format (a
//! local copy the test writes, no network): listed with their validity,
//! installed into a core as one revision, a second provider of the same
//! tool refused, removed again, admins only, per tenant.

use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::*;

fn write(root: &Path, rel: &str, body: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

/// A web search provider package of the original's shape: a tool at
/// `agent/tools/web_search` and its library under `agent/lib/<provider>`
/// with a `config.yaml` the recipe renders.
fn provider(root: &Path, id: &str, secret_env: &str) {
    write(
        root,
        &format!("packages/{id}.yaml"),
        &format!(
            "schema_version: 1\nid: {id}\nname: {id}\nsummary: Search the web ({id}).\ntags: [web, search]\noptions:\n- id: api_key\n  type: secret\n  prompt: API key\n  required: false\n  default: null\n- id: count\n  type: string\n  default: '5'\ncapabilities: [network.fetch]\ncomponents:\n- id: web_search_tool\n  kind: tool\n  source: {id}\n  target: agent/tools/web_search\n- id: web_search_lib\n  kind: lib\n  source: {id}\n  target: agent/lib/{id}\n  config:\n    api_key: ${{options.api_key}}\n    default_count: ${{options.count}}\n"
        ),
    );
    write(
        root,
        &format!("tool/{id}/tool.yaml"),
        "description: Search the web.\nentrypoint: module:execute\nrisk: medium\napproval_policy: auto\ncapability: network.fetch\ninput_schema:\n  type: object\n  properties:\n    query: {type: string}\n  required: [query]\n  additionalProperties: false\n",
    );
    write(
        root,
        &format!("tool/{id}/module.py"),
        &format!("from .{id}.search import search\n\nasync def execute(ctx, args):\n    return search(args)\n"),
    );
    write(root, &format!("lib/{id}/__init__.py"), "");
    write(
        root,
        &format!("lib/{id}/search.py"),
        &format!("import os\n\ndef search(args):\n    return {{'success': True, 'provider': '{id}', 'query': args.get('query'), 'keyed': bool(os.environ.get('{secret_env}'))}}\n"),
    );
    write(
        root,
        &format!("lib/{id}/config.yaml"),
        &format!("provider: {id}\napi_key: null\napi_key_env: {secret_env}\ndefault_count: 5\n"),
    );
}

/// The repository: two providers, a broken recipe, one this server does
/// not install (a package-owned core), one that would break the core, and
/// one that needs another.
fn repository(root: &Path) {
    write(
        root,
        "repository.yaml",
        "schema_version: 1\nid: builtin\nname: Test packages\nsummary: A local copy.\n",
    );
    provider(root, "web_search_brave", "DEMIURGE_BRAVE_SEARCH_API_KEY");
    provider(root, "web_search_tavily", "DEMIURGE_TAVILY_API_KEY");
    write(
        root,
        "packages/broken.yaml",
        "schema_version: 1\nid: broken\ncomponents:\n- {id: x, kind: widget, source: s}\n",
    );
    write(
        root,
        "packages/tts_core.yaml",
        "schema_version: 1\nid: tts_core\ncomponents:\n- {id: core, kind: core, source: tts_core, target_core_id: tts}\n",
    );
    write(
        root,
        "core/tts_core/agent.yaml",
        "schema_version: 1\nagent: {id: tts}\n",
    );
    write(
        root,
        "packages/shadow.yaml",
        "schema_version: 1\nid: shadow\ncomponents:\n- {id: t, kind: tool, source: shadow, target: agent/tools/read_file}\n",
    );
    write(
        root,
        "tool/shadow/tool.yaml",
        "description: x\nentrypoint: module:execute\ninput_schema: {type: object}\n",
    );
    write(
        root,
        "tool/shadow/module.py",
        "async def execute(ctx, args):\n    return 'x'\n",
    );
    write(
        root,
        "packages/search_notes.yaml",
        "schema_version: 1\nid: search_notes\nrequires: [web_search_brave]\ncomponents:\n- {id: skill, kind: skill, source: search_notes}\n",
    );
    write(
        root,
        "skill/search_notes/SKILL.md",
        "---\nname: search_notes\ndescription: How to search well.\n---\nSearch twice.\n",
    );
}

fn tool_names(listing: &Value) -> Vec<String> {
    let mut names: Vec<String> = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

async fn delete(app: &TestApp, tok: &str, path: &str) -> (u16, Value) {
    let r = app
        .client
        .delete(app.url(path))
        .bearer_auth(tok)
        .send()
        .await
        .unwrap();
    let st = r.status().as_u16();
    (st, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn packages_install_into_a_core_as_one_revision_and_come_out_again() {
    let repo = tempfile::tempdir().unwrap();
    repository(repo.path());
    for backend in backends() {
        let app = spawn_with(
            backend,
            Opts::default().env(
                "DEMIURGE_PACKAGE_REPOSITORIES",
                &format!("builtin={}", repo.path().display()),
            ),
        )
        .await;
        let admin = app.token_with("default", "boss", "admin", "1h");
        let member = app.token("default", "alice");
        let sid = app.create_session(&member).await;
        let (_, before) = app.get(&member, &format!("/v1/sessions/{sid}/tools")).await;
        assert!(!tool_names(&before).contains(&"web_search".to_owned()));

        // Listed: valid ones, the broken one with why, the unsupported one with why.
        let (st, cat) = app.get(&member, "/v1/packages?core=assistant").await;
        assert_eq!(st, 200, "{cat}");
        assert_eq!(cat["repositories"][0]["alias"], "builtin");
        assert_eq!(cat["repositories"][0]["ready"], true, "{cat}");
        let pkg = |id: &str| -> Value {
            cat["packages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["id"] == id)
                .cloned()
                .unwrap()
        };
        assert_eq!(pkg("web_search_brave")["valid"], true);
        assert_eq!(pkg("broken")["valid"], false);
        assert!(pkg("broken")["error"]
            .as_str()
            .unwrap()
            .contains("invalid kind"));
        assert!(pkg("tts_core")["unsupported"]
            .as_str()
            .unwrap()
            .contains("kind: core"));
        assert_eq!(cat["installed"], json!([]));

        // A member may not install.
        let install = |pkg: &str| json!({"repository": "builtin", "package": pkg});
        let (st, b) = app
            .post(
                &member,
                "/v1/cores/assistant/packages",
                install("web_search_brave"),
            )
            .await;
        assert_eq!(st, 403, "{b}");

        // The admin installs: one revision, the tool is in the catalog.
        let (st, done) = app
            .post(
                &admin,
                "/v1/cores/assistant/packages",
                install("web_search_brave"),
            )
            .await;
        assert_eq!(st, 201, "{done}");
        assert_eq!(done["action"], "install");
        let revision = done["revision"].as_str().unwrap().to_owned();
        let (_, after) = app.get(&member, &format!("/v1/sessions/{sid}/tools")).await;
        assert!(
            tool_names(&after).contains(&"web_search".to_owned()),
            "{after}"
        );
        let (_, versions) = app.get(&admin, "/v1/cores/assistant/versions").await;
        assert_eq!(
            versions["versions"][0]["revision"],
            revision.as_str(),
            "{versions}"
        );
        // The registry, in the original's format; the secret is not in the core.
        let core = app.home.join("tenants/default/agents/assistant");
        let registry: Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(core.join("packages.yaml")).unwrap())
                .unwrap();
        assert_eq!(registry["installed"][0]["package_id"], "web_search_brave");
        assert_eq!(registry["installed"][0]["repository_alias"], "builtin");
        let config =
            std::fs::read_to_string(core.join("agent/lib/web_search_brave/config.yaml")).unwrap();
        assert!(
            config.contains("default_count: '5'") || config.contains("default_count: \"5\""),
            "{config}"
        );
        assert!(config.contains("api_key: null"), "{config}");

        // A second provider of web_search is refused, naming the first.
        let (st, b) = app
            .post(
                &admin,
                "/v1/cores/assistant/packages",
                install("web_search_tavily"),
            )
            .await;
        assert_eq!(st, 409, "{b}");
        assert!(
            b["error"]["message"]
                .as_str()
                .unwrap()
                .contains("web_search_brave"),
            "{b}"
        );
        // Installing it twice is refused; an upgrade is one more revision.
        let (st, _) = app
            .post(
                &admin,
                "/v1/cores/assistant/packages",
                install("web_search_brave"),
            )
            .await;
        assert_eq!(st, 409);
        let (st, up) = app
            .post(&admin, "/v1/cores/assistant/packages", json!({"repository": "builtin", "package": "web_search_brave", "upgrade": true, "options": {"count": "7"}}))
            .await;
        assert_eq!((st, up["action"].as_str()), (201, Some("upgrade")), "{up}");
        let config =
            std::fs::read_to_string(core.join("agent/lib/web_search_brave/config.yaml")).unwrap();
        assert!(config.contains('7'), "{config}");
        // A secret is never an option answer.
        let (st, b) = app
            .post(&admin, "/v1/cores/assistant/packages", json!({"repository": "builtin", "package": "web_search_tavily", "options": {"api_key": "tvly-secret"}}))
            .await;
        assert_eq!(st, 400, "{b}");

        // Requirements: search_notes needs web_search_brave, which now stays until it goes.
        let (st, b) = app
            .post(
                &admin,
                "/v1/cores/assistant/packages",
                install("search_notes"),
            )
            .await;
        assert_eq!(st, 201, "{b}");
        let (st, b) = delete(
            &app,
            &admin,
            "/v1/cores/assistant/packages/web_search_brave",
        )
        .await;
        assert_eq!(st, 409, "{b}");
        assert!(
            b["error"]["message"]
                .as_str()
                .unwrap()
                .contains("search_notes"),
            "{b}"
        );
        let (st, b) = delete(&app, &admin, "/v1/cores/assistant/packages/search_notes").await;
        assert_eq!(st, 200, "{b}");

        // Invalid, unsupported, and core-breaking packages change nothing.
        let (st, b) = app
            .post(&admin, "/v1/cores/assistant/packages", install("broken"))
            .await;
        assert_eq!(st, 422, "{b}");
        let (st, b) = app
            .post(&admin, "/v1/cores/assistant/packages", install("tts_core"))
            .await;
        assert_eq!(st, 422, "{b}");
        let (st, b) = app
            .post(&admin, "/v1/cores/assistant/packages", install("shadow"))
            .await;
        assert_eq!(st, 422, "{b}");
        assert!(
            b["error"]["message"]
                .as_str()
                .unwrap()
                .contains("read_file"),
            "{b}"
        );
        assert!(!core.join("agent/tools/read_file").exists());

        // A file of the package changed by hand: uninstall refuses unless forced.
        std::fs::write(
            core.join("agent/lib/web_search_brave/search.py"),
            "# edited\n",
        )
        .unwrap();
        let (st, b) = delete(
            &app,
            &admin,
            "/v1/cores/assistant/packages/web_search_brave",
        )
        .await;
        assert_eq!(st, 409, "{b}");
        let (st, b) = delete(
            &app,
            &admin,
            "/v1/cores/assistant/packages/web_search_brave?force=true",
        )
        .await;
        assert_eq!(st, 200, "{b}");
        assert!(!core.join("agent/tools/web_search").exists());
        assert!(!core.join("agent/lib/web_search_brave").exists());
        assert!(!core.join("packages.yaml").exists());
        let (_, restored) = app.get(&member, &format!("/v1/sessions/{sid}/tools")).await;
        assert_eq!(tool_names(&restored), tool_names(&before));

        // Now the other provider fits.
        let (st, b) = app
            .post(
                &admin,
                "/v1/cores/assistant/packages",
                install("web_search_tavily"),
            )
            .await;
        assert_eq!(st, 201, "{b}");

        // Another tenant sees none of it.
        let other_admin = app.token_with("other", "root", "admin", "1h");
        let (st, _) = app.get(&other_admin, "/v1/packages?core=assistant").await;
        assert_eq!(st, 404);
        let (st, b) = app
            .post(
                &other_admin,
                "/v1/cores/assistant/packages",
                install("web_search_brave"),
            )
            .await;
        assert_eq!(st, 404, "{b}");

        // The audit log names each change.
        let (_, audit) = app.get(&admin, "/v1/audit?action=package.").await;
        let actions: Vec<&str> = audit["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["action"].as_str().unwrap())
            .collect();
        for want in [
            "package.installed",
            "package.upgraded",
            "package.uninstalled",
        ] {
            assert!(actions.contains(&want), "{actions:?}");
        }
    }
}

#[tokio::test]
async fn a_git_repository_is_synced_at_its_pinned_commit() {
    let repo = tempfile::tempdir().unwrap();
    repository(repo.path());
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(repo.path())
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "packages"]);
    let commit = git(&["rev-parse", "HEAD"]).trim().to_owned();
    // A later commit the pin does not name.
    write(
        repo.path(),
        "packages/later.yaml",
        "schema_version: 1\nid: later\ncomponents: []\n",
    );
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "later"]);
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env(
            "DEMIURGE_PACKAGE_REPOSITORIES",
            &format!("community={}@{commit}", repo.path().display()),
        ),
    )
    .await;
    let admin = app.token_with("default", "boss", "admin", "1h");
    let (_, cat) = app.get(&admin, "/v1/packages").await;
    assert_eq!(cat["repositories"][0]["ready"], false, "{cat}");
    assert!(
        cat["repositories"][0]["error"]
            .as_str()
            .unwrap()
            .contains("not synced"),
        "{cat}"
    );
    let member = app.token("default", "alice");
    let (st, _) = app
        .post(
            &member,
            "/v1/packages/repositories/community/sync",
            json!({}),
        )
        .await;
    assert_eq!(st, 403);
    let (st, view) = app
        .post(
            &admin,
            "/v1/packages/repositories/community/sync",
            json!({}),
        )
        .await;
    assert_eq!(st, 200, "{view}");
    assert_eq!(view["ready"], true, "{view}");
    assert_eq!(view["commit"], commit.as_str());
    let (_, cat) = app.get(&admin, "/v1/packages").await;
    let ids: Vec<&str> = cat["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"web_search_brave"), "{ids:?}");
    assert!(
        !ids.contains(&"later"),
        "the pin names the first commit: {ids:?}"
    );
    let (st, b) = app
        .post(
            &admin,
            "/v1/cores/assistant/packages",
            json!({"repository": "community", "package": "web_search_brave"}),
        )
        .await;
    assert_eq!(st, 201, "{b}");
    assert_eq!(b["record"]["repository_commit"], commit.as_str());
}
