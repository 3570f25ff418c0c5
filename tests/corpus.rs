//! The corpus of real queue bugs (`corpus/`, docs/corpus.md): for every entry the corpus marks
//! expressible, the buggy adapter's run fails on the check the entry names, and the fixed
//! adapter's run, with the same scenario, load and faults, passes. One test per expressible
//! entry, so they run side by side; `every_expressible_entry_is_tested` keeps the tests and the
//! folders in step, and every other entry must say what queuebench lacks to express it.

use crate::common::{queuebench, repo};

/// The entry's `check` and whether it is expressible today.
fn entry(name: &str) -> (String, bool) {
    let text = std::fs::read_to_string(repo(&format!("corpus/{name}/entry.toml"))).unwrap();
    let v: toml::Value = toml::from_str(&text).unwrap();
    let check = v["check"].as_str().unwrap_or_else(|| panic!("{name}: entry.toml names no check")).to_string();
    (check, v["expressible"].as_bool().unwrap_or(false))
}

/// Runs both sides of `name`: the buggy one must fail (exit 1) on the entry's check, the fixed
/// one pass (exit 0).
fn pair(name: &str) {
    let (check, expressible) = entry(name);
    assert!(expressible, "{name}: tested, but its entry.toml says expressible = false");
    let scenario = repo(&format!("corpus/{name}/scenario.toml"));
    let s = scenario.to_str().unwrap();
    let buggy = queuebench(&["run", s, "--quiet"]);
    assert_eq!(buggy.code, 1, "{name}, buggy side: expected a failed run\n{}\n{}", buggy.stdout, buggy.stderr);
    let failed: Vec<String> =
        buggy.summary()["failed_checks"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect();
    assert!(
        failed.contains(&check),
        "{name}, buggy side: `{check}` did not fail (failed: {failed:?})\n{}",
        buggy.stdout
    );
    let fixed = queuebench(&["run", s, "--quiet", "--set", "adapter=fixed.toml"]);
    assert_eq!(fixed.code, 0, "{name}, fixed side: expected a passed run\n{}\n{}", fixed.stdout, fixed.stderr);
    // A pass the scenario's faults never reached proves nothing about the fix.
    let text = std::fs::read_to_string(&scenario).unwrap();
    let faults =
        toml::from_str::<toml::Value>(&text).unwrap().get("faults").and_then(|f| f.as_array()).map_or(0, Vec::len);
    let injected = fixed.summary()["faults"]["injected"].as_u64().unwrap();
    assert!(faults == 0 || injected > 0, "{name}, fixed side: passed, but none of its {faults} faults fired");
}

#[test]
fn every_expressible_entry_is_tested() {
    let mut expressible = Vec::new();
    for e in std::fs::read_dir(repo("corpus")).unwrap().filter_map(|e| e.ok()).filter(|e| e.path().is_dir()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(e.path().join("entry.toml")).unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap_or_else(|err| panic!("{name}/entry.toml: {err}"));
        if entry(&name).1 {
            expressible.push(name);
        } else {
            let reason = v.get("reason").and_then(|r| r.as_str()).unwrap_or("");
            assert!(!reason.trim().is_empty(), "{name}: not expressible, and its entry.toml gives no reason");
        }
    }
    expressible.sort();
    assert_eq!(expressible, TESTED, "the expressible corpus entries and the tests below differ");
}

macro_rules! corpus_pairs {
    ($($test:ident => $name:literal),* $(,)?) => {
        /// The entries tested, sorted.
        const TESTED: &[&str] = &[$($name),*];
        $(
            #[test]
            fn $test() {
                pair($name);
            }
        )*
    };
}

corpus_pairs! {
    dotnetworkqueue_328 => "dotnetworkqueue-328",
    hangfire_postgresql_353 => "hangfire-postgresql-353",
    oban_122 => "oban-122",
    oban_137 => "oban-137",
    pg_boss_492 => "pg-boss-492",
    pgqueuer_474 => "pgqueuer-474",
    pgqueuer_630 => "pgqueuer-630",
    pgqueuer_761 => "pgqueuer-761",
    procrastinate_103 => "procrastinate-103",
    que_c95329c => "que-c95329c",
    river_1302 => "river-1302",
    solid_queue_589 => "solid_queue-589",
    sqlxmq_989b11f => "sqlxmq-989b11f",
}
