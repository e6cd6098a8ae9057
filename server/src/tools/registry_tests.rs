use std::collections::BTreeSet;
use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::tools::testing::fixture;

/// A driver that records which handler it was asked to drive.
#[derive(Default)]
struct Recorder(Mutex<Vec<&'static str>>);

impl Driver for Recorder {
    fn drive<T: Tool>(&self, _: &ToolEnv<'_>) -> impl Future<Output = ToolOutcome> + Send {
        self.0
            .lock()
            .expect("recorder")
            .push(std::any::type_name::<T>());
        async { ToolOutcome::ok_json(json!({})) }
    }
}

#[test]
fn the_listing_and_the_registry_name_the_same_tools() {
    let listed: Vec<&str> = crate::catalog::builtins()
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert!(!listed.is_empty(), "builtin_tools.json parses");
    let listed_set: BTreeSet<&str> = listed.iter().copied().collect();
    let registered: BTreeSet<&str> = NAMES.iter().copied().collect();
    assert_eq!(listed_set.len(), listed.len(), "a tool listed twice");
    assert_eq!(registered.len(), NAMES.len(), "a tool registered twice");
    let unregistered: Vec<_> = listed_set.difference(&registered).collect();
    let unlisted: Vec<_> = registered.difference(&listed_set).collect();
    assert!(
        unregistered.is_empty(),
        "listed in builtin_tools.json but not dispatchable: {unregistered:?}"
    );
    assert!(
        unlisted.is_empty(),
        "dispatchable but not in builtin_tools.json: {unlisted:?}"
    );
}

#[tokio::test]
async fn every_listed_tool_reaches_its_own_handler() {
    let f = fixture(&[]);
    let args = json!({});
    let recorder = Recorder::default();
    for spec in crate::catalog::builtins() {
        let env = f.env(&spec.name, &args);
        assert!(
            run(&recorder, &env).await.is_some(),
            "{} is listed but not dispatched",
            spec.name
        );
    }
    let driven = recorder.0.lock().expect("recorder").clone();
    assert_eq!(driven.len(), NAMES.len());
    let handlers: BTreeSet<&str> = driven.iter().copied().collect();
    assert_eq!(handlers.len(), driven.len(), "two names share a handler");
}
