//! explore measured (docs/explore.md): its pace (`explore-bench`) and its answer on every shipped
//! adapter scenario (`explore-adapters`). Each search's figures are read from the explore.json
//! it writes with `--out`, never from its printed text.

use crate::error::{Error, Result};
use crate::qb::{Build, Qb, root};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One search's explore.json, the fields the tables print.
#[derive(Debug, Clone, PartialEq)]
pub struct Explored {
    pub depth: u64,
    pub exhausted: bool,
    pub timed_out: bool,
    pub schedules: u64,
    pub naive: f64,
    pub states: u64,
    pub steps_sent: u64,
    pub seconds: f64,
    /// Each violation's check and the steps of its counterexample.
    pub violations: Vec<(String, u64)>,
}

impl Explored {
    pub fn parse(text: &str, path: &Path) -> Result<Explored> {
        let v: Value =
            serde_json::from_str(text).map_err(|source| Error::Summary { path: path.to_path_buf(), source })?;
        let num = |k: &str| v[k].as_u64().ok_or_else(|| Error::Run(format!("{}: no number `{k}`", path.display())));
        let violations = v["violations"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| Some((x["check"].as_str()?.to_string(), x["steps"].as_u64()?))).collect())
            .unwrap_or_default();
        Ok(Explored {
            depth: num("depth")?,
            exhausted: v["exhausted"].as_bool().unwrap_or(false),
            timed_out: v["timed_out"].as_bool().unwrap_or(false),
            schedules: num("schedules")?,
            naive: v["naive_schedules"].as_f64().unwrap_or(0.0),
            states: num("distinct_states")?,
            steps_sent: num("steps_sent")?,
            seconds: v["seconds"].as_f64().unwrap_or(0.0),
            violations,
        })
    }

    pub fn load(dir: &Path) -> Result<Explored> {
        let path = dir.join("explore.json");
        let text = std::fs::read_to_string(&path).map_err(Error::io(&path))?;
        Explored::parse(&text, &path)
    }

    /// How far the search went, in explore's own words.
    pub fn reached(&self) -> String {
        queuebench::model::words::explore_reached(self.depth as usize, self.exhausted, self.timed_out)
    }

    /// explore's tally (the reset time is not in explore.json, so not here).
    pub fn tally(&self) -> String {
        let rate = self.schedules as f64 / self.seconds.max(1e-9);
        let factor = self.naive / self.schedules.max(1) as f64;
        format!(
            "{} schedules run, standing for at least {:.0} without reduction (×{factor:.1}); {} distinct states; {} \
             steps sent, {:.1} s: {rate:.0} schedules/s",
            self.schedules, self.naive, self.states, self.steps_sent, self.seconds
        )
    }

    /// The shortest counterexample's steps, and every check broken (in order, once each).
    pub fn broke(&self) -> Option<(u64, String)> {
        let steps = self.violations.iter().map(|v| v.1).min()?;
        let mut checks: Vec<&str> = Vec::new();
        for (c, _) in &self.violations {
            if !checks.contains(&c.as_str()) {
                checks.push(c);
            }
        }
        Some((steps, checks.join(",")))
    }
}

/// `queuebench explore SCENARIO ARGS… --out OUT`: its exit code and what it printed.
fn explore(qb: &Qb, scenario: &Path, args: &[String], out: &Path) -> Result<(i32, String)> {
    let o = qb
        .cmd()
        .arg("explore")
        .arg(scenario)
        .args(args)
        .arg("--out")
        .arg(out)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| Error::Spawn { program: qb.bin.display().to_string(), source })?;
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    Ok((o.status.code().unwrap_or(-1), text))
}

/// The first line of `text` naming an error, for a table cell.
fn error_line(text: &str) -> &str {
    text.lines().find(|l| l.contains("error")).or_else(|| text.lines().find(|l| !l.trim().is_empty())).unwrap_or("")
}

/// Session counts as "2 3" or "2,3".
pub fn parse_sessions(s: &str) -> Result<Vec<u32>> {
    let v: Vec<u32> = s
        .split([',', ' '])
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().map_err(|_| Error::Usage(format!("--sessions takes whole numbers, not `{x}`"))))
        .collect::<Result<_>>()?;
    if v.is_empty() {
        return Err(Error::Usage("--sessions names no session count".into()));
    }
    Ok(v)
}

/// explore's pace: for each session count, with the liveness checks and with `--safety-only`,
/// SECONDS of search on `scenario` (depth 40); one line each.
pub fn explore_bench(scenario: Option<&Path>, seconds: u32, sessions: &str, crashes: u32) -> Result<()> {
    let sessions = parse_sessions(sessions)?;
    let scenario =
        scenario.map(Path::to_path_buf).unwrap_or_else(|| root().join("scenarios/gc-pause-fencing-token.toml"));
    if !scenario.is_file() {
        return Err(Error::Usage(format!("{}: no such scenario file", scenario.display())));
    }
    let qb = Qb::find(Build::Release)?;
    let work =
        tempfile::Builder::new().prefix("qb-explore-bench.").tempdir().map_err(Error::io("a temporary folder"))?;
    let name = scenario.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    println!("explore pace: {name}, {seconds} s a configuration, {crashes} crash(es); {}", qb.version());
    for n in sessions {
        for safety_only in [false, true] {
            let mut args: Vec<String> = ["--sessions", &n.to_string(), "--crashes", &crashes.to_string()]
                .iter()
                .map(|s| s.to_string())
                .collect();
            args.extend(["--depth".into(), "40".into(), "--time".into(), seconds.to_string()]);
            if safety_only {
                args.push("--safety-only".into());
            }
            let mode = if safety_only { "safety-only" } else { "liveness" };
            let out = work.path().join(format!("{n}-{mode}"));
            let (code, text) = explore(&qb, &scenario, &args, &out)?;
            if !out.join("explore.json").is_file() {
                return Err(Error::Run(format!("explore exited {code} without explore.json:\n{text}")));
            }
            let e = Explored::load(&out)?;
            let answer = match e.broke() {
                Some((steps, checks)) => format!("counterexample ({checks}, {steps} steps)"),
                None => format!("no counterexample {}", e.reached()),
            };
            println!("{n} sessions, {mode}: {answer}: {}", e.tally());
        }
    }
    Ok(())
}

/// The scenarios explore-adapters searches: SKIP LOCKED with a token, then every shipped adapter
/// scenario whose name contains `only` (the `-real-schema` ones left out: the same SQL over the
/// library's own schema).
pub fn adapter_scenarios(only: &str) -> Result<Vec<(String, PathBuf)>> {
    let dir = root().join("scenarios/adapters");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(Error::io(&dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files.insert(0, root().join("scenarios/gc-pause-fencing-token.toml"));
    Ok(files
        .into_iter()
        .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), p)))
        .filter(|(n, _)| n.contains(only) && !n.ends_with("-real-schema"))
        .collect())
}

/// explore against the pause table: every adapter scenario, 2 ticks, a Markdown table.
pub fn explore_adapters(depth: u32, seconds: u32, crashes: u32, out: Option<&Path>, only: &str) -> Result<()> {
    let scenarios = adapter_scenarios(only)?;
    if scenarios.is_empty() {
        return Err(Error::Usage(format!("--only {only}: no adapter scenario's name contains it")));
    }
    let qb = Qb::find(Build::Release)?;
    let out = match out {
        Some(d) => d.to_path_buf(),
        None => tempfile::Builder::new()
            .prefix("qb-explore-adapters.")
            .tempdir()
            .map_err(Error::io("a temporary folder"))?
            .keep(),
    };
    std::fs::create_dir_all(&out).map_err(Error::io(&out))?;
    println!(
        "explore against the pause table: depth ≤ {depth}, ≤ {seconds} s each, {crashes} crash(es), 2 ticks; {}; output \
         in {}",
        qb.version(),
        out.display()
    );
    println!();
    println!("| scenario | answer | steps | broke | schedules | time |");
    println!("|---|---|---:|---|---:|---:|");
    for (name, file) in scenarios {
        let args: Vec<String> = vec![
            "--crashes".into(),
            crashes.to_string(),
            "--ticks".into(),
            "2".into(),
            "--depth".into(),
            depth.to_string(),
            "--time".into(),
            seconds.to_string(),
        ];
        let dir = out.join(&name);
        let (code, text) = explore(&qb, &file, &args, &dir)?;
        let e = if dir.join("explore.json").is_file() { Some(Explored::load(&dir)?) } else { None };
        println!("{}", adapter_row(&name, code, e.as_ref(), &text));
    }
    Ok(())
}

/// One row of explore-adapters' table: a counterexample (exit 1 with violations), none (exit 0),
/// or the error and its first line.
pub fn adapter_row(name: &str, code: i32, e: Option<&Explored>, text: &str) -> String {
    match (code, e) {
        (1, Some(e)) if e.broke().is_some() => {
            let (steps, checks) = e.broke().expect("checked");
            format!("| {name} | counterexample | {steps} | {checks} | {} | {} s |", e.schedules, e.seconds)
        }
        (0, Some(e)) => {
            format!("| {name} | no counterexample {} | | | {} | {} s |", e.reached(), e.schedules, e.seconds)
        }
        _ => format!("| {name} | error (exit {code}): {} | | | | |", error_line(text).trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOUND: &str = r#"{"scenario":"x","depth":9,"exhausted":false,"timed_out":false,"schedules":389,
        "distinct_states":120,"naive_schedules":1945.0,"steps_sent":3000,"seconds":4.7,
        "violations":[{"check":"stale_completion","steps":9,"script":"a.sql"},
                      {"check":"duplicate_execution","steps":11,"script":"b.sql"},
                      {"check":"stale_completion","steps":10,"script":"c.sql"}]}"#;

    #[test]
    fn explore_json_reads_into_a_row_and_a_tally() {
        let e = Explored::parse(FOUND, Path::new("explore.json")).unwrap();
        assert_eq!(e.broke(), Some((9, "stale_completion,duplicate_execution".into())));
        assert_eq!(
            adapter_row("oban", 1, Some(&e), ""),
            "| oban | counterexample | 9 | stale_completion,duplicate_execution | 389 | 4.7 s |"
        );
        assert_eq!(
            e.tally(),
            "389 schedules run, standing for at least 1945 without reduction (×5.0); 120 distinct states; 3000 steps \
             sent, 4.7 s: 83 schedules/s"
        );
    }

    #[test]
    fn none_found_says_how_far_and_errors_name_their_line() {
        let text = r#"{"depth":16,"exhausted":true,"timed_out":false,"schedules":952,"distinct_states":504,
            "naive_schedules":9046,"steps_sent":11928,"seconds":11.4,"violations":[]}"#;
        let e = Explored::parse(text, Path::new("x")).unwrap();
        assert_eq!(e.broke(), None);
        assert!(adapter_row("que", 0, Some(&e), "").starts_with("| que | no counterexample in the whole space"));
        let timed = Explored { timed_out: true, exhausted: false, ..e.clone() };
        assert_eq!(timed.reached(), "up to depth 16 (the time limit stopped depth 17)");
        // Exit 1 without a violation (VACUOUS, a queue error) is no counterexample.
        assert_eq!(
            adapter_row("q", 1, Some(&e), "VACUOUS: nothing\nerror: the claim failed"),
            "| q | error (exit 1): error: the claim failed | | | | |"
        );
        assert_eq!(adapter_row("q", 2, None, "bad flag"), "| q | error (exit 2): bad flag | | | | |");
        assert!(Explored::parse("{}", Path::new("x")).is_err());
        assert!(matches!(Explored::parse("{nope", Path::new("x")), Err(Error::Summary { .. })));
    }

    #[test]
    fn sessions_and_scenarios() {
        assert_eq!(parse_sessions("2 3").unwrap(), vec![2, 3]);
        assert_eq!(parse_sessions("2,3,4").unwrap(), vec![2, 3, 4]);
        assert!(matches!(parse_sessions("two"), Err(Error::Usage(_))));
        assert!(matches!(parse_sessions(" "), Err(Error::Usage(_))));
        let all = adapter_scenarios("").unwrap();
        assert_eq!(all[0].0, "gc-pause-fencing-token");
        assert!(all.iter().all(|(n, _)| !n.ends_with("-real-schema")));
        assert!(adapter_scenarios("no-such-adapter-name").unwrap().is_empty());
    }
}
