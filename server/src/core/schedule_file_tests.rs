use chrono::{TimeZone, Utc};

use super::*;

fn ms(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .unwrap()
        .timestamp_millis()
}

const UPSTREAM: &str = "enabled: true\nschedule: \"0 9 * * *\"\nprompt: \"Summarize the current project state and list one next action.\"\nmodules:\n  input:\n    - base_input\n  output:\n    - base_output\ndelivery:\n  mode: local\n";

#[test]
fn upstreams_example_reads_and_a_rendered_file_reads_back_the_same() {
    let f = parse(UPSTREAM).unwrap();
    assert!(f.enabled);
    assert_eq!(f.schedule, "0 9 * * *");
    assert_eq!(f.modules, Modules::default());
    assert_eq!(f.delivery.mode, "local");
    let text = render(&f);
    assert_eq!(parse(&text).unwrap(), f);
    // Upstream's key order.
    let keys: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('-'))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        keys,
        ["enabled", "schedule", "prompt", "modules", "delivery"]
    );
    assert!(
        !text.contains("chat_id") && !text.contains("target"),
        "{text}"
    );
}

#[test]
fn defaults_fill_in_and_channel_targets_are_kept() {
    let f = parse("schedule: every 15m\nprompt: '  hi  '\n").unwrap();
    assert!(f.enabled);
    assert_eq!(f.prompt, "hi");
    assert_eq!(f.modules.input, ["base_input"]);
    assert_eq!(f.modules.output, ["base_output"]);
    let t =
        parse("schedule: '@daily'\nprompt: p\ndelivery:\n  mode: telegram\n  chat_id: 123456789\n")
            .unwrap();
    assert_eq!(t.delivery.mode, "telegram");
    assert_eq!(parse(&render(&t)).unwrap(), t);
}

#[test]
fn bad_files_are_refused_with_the_reason() {
    for (text, want) in [
        (
            "schedule: '0 9 * * *'\nprompt: p\nowner: bob\n",
            "unknown field",
        ),
        ("schedule: '0 9 * * *'\n", "prompt"),
        (
            "schedule: '0 9 * * *'\nprompt: '   '\n",
            "prompt must not be empty",
        ),
        ("schedule: 'not cron'\nprompt: p\n", "invalid schedule"),
        (
            "schedule: '0 9 * * *'\nprompt: p\nmodules:\n  input: ['../x']\n",
            "module id",
        ),
        (
            "schedule: '0 9 * * *'\nprompt: p\ndelivery:\n  mode: local\n  x: 1\n",
            "unknown field",
        ),
        ("- a\n- b\n", "invalid schedule yaml"),
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
    }
    let long = format!(
        "schedule: '0 9 * * *'\nprompt: '{}'\n",
        "p".repeat(MAX_PROMPT_CHARS + 1)
    );
    assert_eq!(parse(&long).unwrap_err(), ScheduleFileError::LongPrompt);
    let huge = "#".repeat(MAX_FILE_BYTES + 1);
    assert_eq!(parse(&huge).unwrap_err(), ScheduleFileError::TooLarge);
}

#[test]
fn file_names_are_schedule_ids() {
    assert_eq!(id_of("daily.yaml"), Some("daily"));
    assert_eq!(id_of("Daily-2_x.yml"), Some("Daily-2_x"));
    for other in [
        "daily.json",
        ".daily.yaml.tmp",
        "-a.yaml",
        "a b.yaml",
        "README.md",
        ".yaml",
    ] {
        assert_eq!(id_of(other), None, "{other}");
    }
    assert_eq!(
        file_path("agent/schedules/", "daily").unwrap(),
        "agent/schedules/daily.yaml"
    );
    assert_eq!(
        file_path("agent/schedules", "../x"),
        Err(ScheduleFileError::Id)
    );
}

#[test]
fn a_folder_parses_each_file_and_refuses_a_duplicate_id() {
    let good = "schedule: '0 9 * * *'\nprompt: p\n";
    let parsed = parse_folder([
        ("a.yaml", good),
        ("a.yml", good),
        ("b.yaml", "schedule: nope\nprompt: p\n"),
        ("c.yaml", good),
        ("notes.txt", "x"),
    ]);
    assert_eq!(parsed.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert!(parsed["a"]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("duplicate"));
    assert!(parsed["b"].is_err());
    assert!(parsed["c"].is_ok());
}

#[test]
fn every_runs_on_a_utc_grid_whoever_computes_it() {
    let spec = schedule_spec::parse("every 15m").unwrap();
    let t = ms(2030, 1, 1, 9, 7);
    assert_eq!(next_due(&spec, t), Some(ms(2030, 1, 1, 9, 15)));
    // On a grid point, the next one.
    assert_eq!(
        next_due(&spec, ms(2030, 1, 1, 9, 15)),
        Some(ms(2030, 1, 1, 9, 30))
    );
    assert_eq!(due_run(&spec, ms(2030, 1, 1, 9, 0), t), None);
    assert_eq!(
        due_run(&spec, ms(2030, 1, 1, 8, 59), t),
        Some(ms(2030, 1, 1, 9, 0))
    );
}

#[test]
fn missed_runs_coalesce_into_the_latest_one() {
    let cron = schedule_spec::parse("0 * * * *").unwrap();
    // Down from 03:30 to 09:10: the 04:00..09:00 runs give one, at 09:00.
    let since = ms(2030, 1, 1, 3, 30);
    let now = ms(2030, 1, 1, 9, 10);
    assert_eq!(due_run(&cron, since, now), Some(ms(2030, 1, 1, 9, 0)));
    // Once that run is settled nothing more is due until 10:00.
    assert_eq!(due_run(&cron, ms(2030, 1, 1, 9, 0), now), None);
    assert_eq!(
        due_run(&cron, ms(2030, 1, 1, 9, 0), ms(2030, 1, 1, 10, 0)),
        Some(ms(2030, 1, 1, 10, 0))
    );
    let every = schedule_spec::parse("every 1h").unwrap();
    assert_eq!(due_run(&every, since, now), Some(ms(2030, 1, 1, 9, 0)));
    let at = schedule_spec::parse("at 2030-01-01T05:00:00Z").unwrap();
    assert_eq!(due_run(&at, since, now), Some(ms(2030, 1, 1, 5, 0)));
    assert_eq!(due_run(&at, ms(2030, 1, 1, 5, 0), now), None);
    // Nothing before the schedule existed.
    assert_eq!(due_run(&cron, now, now), None);
}
