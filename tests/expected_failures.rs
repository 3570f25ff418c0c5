//! A run that passes because its scenario expects checks to fail (naive-duplicates names
//! `checks.exactly_once` in `[expect]`) says so in every verdict: the terminal, report.html,
//! comparison.html, the GitHub step summary, junit.xml, and `compare`'s table and compare.md.
//! A pass beside thousands of duplicates never reads as a clean "ok".

use crate::common;
use common::{bin, queuebench_env, repo};
use serde_json::Value;

/// The checks of a summary that failed (in a passing run: every one its scenario excused).
fn failed(summary: &Value) -> Vec<String> {
    let checks = summary["checks"].as_array().unwrap();
    checks.iter().filter(|c| c["passed"] == false).map(|c| c["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_pass_by_expected_failures_says_which_checks_failed_in_every_verdict() {
    let scenario = repo("scenarios/naive-duplicates.toml");
    let github = tempfile::tempdir().unwrap();
    let step_summary = github.path().join("step-summary.md");
    let small = ["--set", "jobs.preload=800", "--set", "workers.max_claims=100"];
    let mut args = vec!["run", scenario.to_str().unwrap(), "--repeat", "2", "--github"];
    args.extend(small);
    let run = queuebench_env(&args, &[("GITHUB_STEP_SUMMARY", step_summary.to_str().unwrap())]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let read = |rel: &str| std::fs::read_to_string(run.out.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));

    for k in 1..=2 {
        let summary: Value = serde_json::from_str(&read(&format!("repeat-{k}/summary.json"))).unwrap();
        assert_eq!(summary["passed"], true);
        let names = failed(&summary);
        assert!(names.iter().any(|n| n == "exactly_once"), "the naive claim ran jobs twice: {names:?}");
        let n = names.len();
        let note =
            format!("{n} check{} failed as the scenario expects: {}", if n == 1 { "" } else { "s" }, names.join(", "));
        // The terminal's verdict line, and report.html's heading.
        let line = format!("naive-duplicates — PASSED ({note})");
        assert!(run.stdout.contains(&line), "no `{line}` in:\n{}", run.stdout);
        let html = read(&format!("repeat-{k}/report.html"));
        assert!(
            html.contains(&format!("<span class=ok>PASSED</span> <small class=muted>({note})</small></h1>")),
            "{html}"
        );
        assert!(
            html.contains(
                "<span class=fail>FAIL</span> <span class=muted>as expected</span></td><td>exactly_once</td>"
            )
        );
    }

    // comparison.html's verdict column: not a bare "ok".
    let comparison = read("comparison.html");
    let rows: Vec<&str> = comparison.split("<tr>").skip(2).collect();
    assert_eq!(rows.len(), 2, "{comparison}");
    for row in rows {
        assert!(row.contains("<span class=ok>ok</span> <small class=muted>("), "{row}");
        assert!(row.contains("failed as the scenario expects: exactly_once"), "{row}");
    }
    // The GitHub step summary's heading and junit.xml's test case.
    let md = std::fs::read_to_string(&step_summary).unwrap();
    assert!(md.starts_with("### queuebench: `naive-duplicates` ✅ passed ("), "{md}");
    assert!(md.contains("failed as the scenario expects: `exactly_once`"), "{md}");
    let junit = read("junit.xml");
    assert!(junit.contains("failed as the scenario expects (checks.exactly_once &gt; 0)"), "{junit}");

    // compare's table and compare.md: the rows' "ok" compares with the baseline, and says so.
    let cmp_out = tempfile::tempdir().unwrap();
    let cmp_dir = cmp_out.path().join("cmp");
    let (old, new) = (run.out.join("repeat-1"), run.out.join("repeat-2"));
    let o = bin()
        .args(["compare", old.to_str().unwrap(), new.to_str().unwrap(), "--out", cmp_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("  The new run passed; ") && stdout.contains("expects: exactly_once"), "{stdout}");
    let compare_md = std::fs::read_to_string(cmp_dir.join("compare.md")).unwrap();
    assert!(compare_md.contains("The new run passed; ") && compare_md.contains("`exactly_once`"), "{compare_md}");
    assert!(compare_md.contains("\"ok\" below compares with the baseline: it does not say those checks held."));
    run.assert_clean();
}
