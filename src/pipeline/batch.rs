//! The batch around single runs: every scenario file validated before any runs, each run
//! `--repeat` times, compared with `--baseline` (and saved with `--save-baseline`), and the
//! batch's own outputs written through the fan-out: junit.xml over the repeats and the
//! baseline, compare.md/json, the GitHub step summary, and comparison.html across scenarios.

use super::{RunPlace, RunResult, check_output_folder, check_target, run_id, run_one};
use crate::compare::{self, Comparison, Labels, store};
use crate::error::{ExitCode, Result};
use crate::model::expect;
use crate::model::summary::RunSummary;
use crate::options::RunCommand;
use crate::report::export::{self, Exporter};
use crate::report::junit::LabelledRun;
use crate::scenario::{self, Plan};
use crate::{gate, report};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// `queuebench run FILE…`: the exit code is the worst of the scenarios'.
pub(crate) async fn run_files(cmd: &RunCommand, interrupt: &CancellationToken) -> Result<ExitCode> {
    let plans = plans(cmd)?;
    // Every run's id and folder before any runs: a folder that holds something is refused
    // (unless --force) before a run could cost anything.
    let mut folders = Vec::new();
    for plan in &plans {
        let id = run_id();
        let out_dir = match (&cmd.out, plans.len()) {
            (Some(out), 1) => out.clone(),
            (Some(out), _) => out.join(super::versions::folder_name(plan, cmd)),
            (None, _) => PathBuf::from("results").join(&plan.name).join(&id),
        };
        check_output_folder(&out_dir, cmd.force)?;
        folders.push((out_dir, id));
    }
    let github = report::github::enabled(cmd.github);
    let mut worst = ExitCode::Passed;
    let mut finished = Vec::new();
    let mut done: Vec<Vec<(RunSummary, PathBuf)>> = plans.iter().map(|_| Vec::new()).collect();
    for (i, k) in super::versions::schedule(plans.len(), cmd.pg_versions.len(), cmd.repeat) {
        if interrupt.is_cancelled() {
            break;
        }
        let (plan, (out_dir, id)) = (&plans[i], &folders[i]);
        let place = RunPlace { dir: out_dir, run_id: id.clone() };
        let (code, run) = run_repeat(plan, cmd, place, k, interrupt).await;
        worst = worst.worst(code);
        done[i].extend(run);
        if k == cmd.repeat {
            // The plan's last repeat: its batch outputs (junit.xml, the baseline) at once.
            let runs = std::mem::take(&mut done[i]);
            worst = worst.worst(finish_plan(plan, cmd, out_dir, &runs, github)?);
            finished.extend(runs);
        }
    }
    // An interrupt leaves plans with some of their repeats: their outputs all the same.
    for (i, runs) in done.into_iter().enumerate() {
        worst = worst.worst(finish_plan(&plans[i], cmd, &folders[i].0, &runs, github)?);
        finished.extend(runs);
    }
    if finished.len() > 1 {
        let batch_dir =
            cmd.out.clone().unwrap_or_else(|| PathBuf::from("results").join(format!("comparison-{}", run_id())));
        let runs: Vec<report::ComparedRun> = finished
            .into_iter()
            .map(|(summary, dir)| report::ComparedRun {
                summary,
                report: relative(&batch_dir, &dir.join("report.html")),
            })
            .collect();
        let matrix = super::versions::matrix(&runs, &plans, cmd);
        report::export_comparison(&batch_dir, &runs, &matrix)?;
        if !cmd.quiet {
            println!("\ncomparison of {} runs: {}", runs.len(), batch_dir.join("comparison.html").display());
        }
        super::versions::print(&matrix);
    }
    Ok(worst)
}

/// Every file's plan, with `--expect` and `--tolerance` on top, the baselines named and the
/// target checked, before any run: a typo should not cost a run.
fn plans(cmd: &RunCommand) -> Result<Vec<Plan>> {
    let mut plans = Vec::new();
    for (f, sets) in super::versions::per_version(cmd) {
        let mut plan = scenario::plan_from_file(&f, &sets, cmd.seed)?;
        let classes: Vec<&str> = plan.load.classes.iter().map(|c| c.name.as_str()).collect();
        let vacuum: Vec<&str> = plan.vacuum.iter().map(|v| v.name.as_str()).collect();
        let phases: Vec<&str> = plan.load.phases.iter().map(|p| p.name.as_str()).collect();
        let names = RunSummary::metric_names(&classes, &vacuum, &phases);
        for text in &cmd.expect {
            plan.expectations.push(expect::parse_cli(text, &names)?);
        }
        for text in &cmd.baseline.tolerances {
            plan.tolerances.set_cli(text, &names)?;
        }
        check_target(&plan, &cmd.run.database.target)?;
        super::database::check_pooler(&plan, &cmd.run.database)?;
        if cmd.run.agents.is_some() && plan.postgres.pgbouncer.is_some() {
            return Err(crate::error::Error::Flag {
                flag: "--agents/--spawn-agents".into(),
                reason: format!(
                    "{}: agents connect to the server directly, not through the PgBouncer of \
                     [postgres.pgbouncer]; run without agents, or drop [postgres.pgbouncer]",
                    plan.source.path.display()
                ),
            });
        }
        super::check_limits(&plan)?;
        plans.push(plan);
    }
    for name in cmd.baseline.save.iter().chain(&cmd.baseline.compare) {
        store::check_name(name)?;
    }
    super::versions::check_found(&plans, cmd)?;
    if let Some(name) = &cmd.baseline.compare {
        for plan in &plans {
            store::load_named(&cmd.baseline.dir, name, &plan.name)?;
        }
    }
    Ok(plans)
}

/// One plan's batch outputs once its repeats ran: the baseline comparison (exit 1 when it
/// regressed), junit.xml over the repeats, compare.md/json. Nothing for a plan without runs.
fn finish_plan(
    plan: &Plan,
    cmd: &RunCommand,
    out_dir: &Path,
    runs: &[(RunSummary, PathBuf)],
    github: bool,
) -> Result<ExitCode> {
    if runs.is_empty() {
        return Ok(ExitCode::Passed);
    }
    let summaries: Vec<RunSummary> = runs.iter().map(|(s, _)| s.clone()).collect();
    let comparison = gate_against_baseline(plan, cmd, &summaries)?;
    export_batch(out_dir, &summaries, comparison.as_ref(), github)?;
    Ok(if comparison.as_ref().is_some_and(|c| c.regressed) { ExitCode::ExpectationFailed } else { ExitCode::Passed })
}

/// Runs repeat `k` of one plan placed at `place` (in `repeat-K/` of its folder when `--repeat`
/// is more than 1, run id `<id>-K`) and prints its verdict, even when its summary.json could not be written (then
/// exit 3).
async fn run_repeat(
    plan: &Plan,
    cmd: &RunCommand,
    place: RunPlace<'_>,
    k: u32,
    interrupt: &CancellationToken,
) -> (ExitCode, Option<(RunSummary, PathBuf)>) {
    let (out_dir, id) = (place.dir, place.run_id);
    // A single run compared with a baseline gets its junit.xml from the batch (with the baseline suite).
    let own_junit = cmd.repeat > 1 || cmd.baseline.compare.is_none();
    let (dir, run_id) = if cmd.repeat > 1 {
        (out_dir.join(format!("repeat-{k}")), format!("{id}-{k}"))
    } else {
        (out_dir.to_path_buf(), id.to_string())
    };
    match run_one(plan, &cmd.run, RunPlace { dir: &dir, run_id }, interrupt, own_junit).await {
        Ok(RunResult { summary, written }) => {
            let name = if cmd.repeat > 1 { format!("{} #{k}", plan.name) } else { plan.name.clone() };
            print_verdict(&summary, &name, &dir, cmd.quiet);
            let code = match written {
                Ok(_) => gate::verdict(&summary),
                Err(e) => {
                    eprintln!("error: {name}: the verdict above could not be saved: {e}");
                    ExitCode::Infrastructure
                }
            };
            (code, Some((summary, dir)))
        }
        Err(e) => {
            eprintln!("error: {}: {e}", plan.name);
            (e.exit_code(), None)
        }
    }
}

fn print_verdict(summary: &RunSummary, name: &str, dir: &Path, quiet: bool) {
    if quiet {
        print!("{}", report::terminal::quiet(summary, name));
    } else {
        print!("{}", report::terminal::render(summary));
        println!("  results        {}", dir.join("report.html").display());
    }
}

/// `--save-baseline` and `--baseline`: stores the runs, compares them.
fn gate_against_baseline(plan: &Plan, cmd: &RunCommand, runs: &[RunSummary]) -> Result<Option<Comparison>> {
    let dir = &cmd.baseline.dir;
    let comparison = match &cmd.baseline.compare {
        Some(name) => {
            let (label, old) = store::load_named(dir, name, &plan.name)?;
            let c = compare::compare(&old, runs, &plan.tolerances, Labels { old: &label, new: "this run" });
            if cmd.quiet {
                // A baseline from another kind of machine: the warning, even when quiet.
                for line in c.fingerprint.lines() {
                    println!("  {line}");
                }
                for r in c.regressions() {
                    println!(
                        "  baseline {}: {} → {} {}",
                        r.metric,
                        r.old.show(),
                        r.new.map_or("–".into(), |n| n.show()),
                        r.verdict.word()
                    );
                }
            } else {
                print!("{}", compare::table(&c));
            }
            Some(c)
        }
        None => None,
    };
    if let Some(name) = &cmd.baseline.save {
        save_baseline(name, cmd, runs)?;
    }
    Ok(comparison)
}

fn save_baseline(name: &str, cmd: &RunCommand, runs: &[RunSummary]) -> Result<()> {
    if runs.len() < cmd.repeat as usize {
        eprintln!("warning: baseline `{name}` not saved: only {} of {} repeats finished", runs.len(), cmd.repeat);
    } else if runs.iter().any(|r| r.interrupted || r.timed_out || r.aborted_by.is_some()) {
        eprintln!("warning: baseline `{name}` not saved: a run was interrupted, timed out or aborted");
    } else {
        let file = store::save(&cmd.baseline.dir, name, runs)?;
        println!("  baseline       {} ({} run{})", file.display(), runs.len(), if runs.len() == 1 { "" } else { "s" });
    }
    Ok(())
}

/// The batch's outputs for one scenario: junit.xml over its repeats and the baseline (when
/// there is more than one run or a baseline), compare.md/json, the GitHub step summary.
fn export_batch(out_dir: &Path, runs: &[RunSummary], comparison: Option<&Comparison>, github: bool) -> Result<()> {
    let labelled: Vec<LabelledRun> = runs
        .iter()
        .enumerate()
        .map(|(i, s)| LabelledRun {
            label: if runs.len() > 1 { format!("{} #{}", s.scenario, i + 1) } else { s.scenario.clone() },
            summary: s,
        })
        .collect();
    let junit = export::one("junit.xml", || report::junit::junit(&labelled, comparison));
    let compared = comparison.map(comparison_files);
    let mut list: Vec<&dyn Exporter> = Vec::new();
    if comparison.is_some() || runs.len() > 1 {
        list.push(&junit);
    }
    if let Some(c) = &compared {
        list.push(c);
    }
    export::write(out_dir, &[], &list)?;
    if github {
        let refs: Vec<&RunSummary> = runs.iter().collect();
        report::github::append(&report::github::markdown(&refs, comparison))?;
        for line in report::github::annotations(&refs, comparison) {
            println!("{line}");
        }
    }
    Ok(())
}

/// compare.md and compare.json.
pub(crate) fn comparison_files(c: &Comparison) -> export::Output<impl Fn() -> Result<Vec<export::File>> + '_> {
    export::Output("compare.md and compare.json", move || {
        Ok(vec![
            export::File::new("compare.md", compare::markdown(c)),
            export::File::new("compare.json", serde_json::to_string_pretty(c).expect("comparison serialises")),
        ])
    })
}

/// `to` relative to `from` when it lies below it, else as given.
fn relative(from: &Path, to: &Path) -> String {
    to.strip_prefix(from).unwrap_or(to).display().to_string()
}
