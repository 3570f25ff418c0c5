//! `queuebench sweep FILE --set key=a,b …`: runs a scenario over a grid of
//! `--set` values, each cell (and each `--repeat`) on a fresh database
//! through `pipeline::run_one`, saves `sweep.csv` after every cell, then
//! draws the charts and recommends lease, heartbeat, max attempts and batch
//! by the lease-sizing rules (`recommend`).
//!
//! grid → plans (all validated before anything runs) → run_one per cell and
//! repeat → CellResult → Measured → recommendation → exporters.

pub(crate) mod charts;
pub(crate) mod grid;
pub(crate) mod output;
pub(crate) mod recommend;
pub(crate) mod results;

use crate::error::{Access, Error, ExitCode, Result};
use crate::options::{RunOptions, SweepCommand};
use crate::pipeline::{RunPlace, RunResult, run_id, run_one};
use crate::report::{self, export};
use crate::scenario::{self, Plan};
use grid::{Cell, Grid};
use results::CellResult;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// More cells than this is almost certainly a typo in a list.
const MAX_CELLS: usize = 500;

pub(crate) async fn sweep(args: &SweepCommand, interrupt: &CancellationToken) -> Result<ExitCode> {
    let (grid, plans) = plan_cells(args)?;
    let first = plans[0].1.clone();
    let first = &first;
    let dir = match &args.out {
        Some(out) => out.clone(),
        None => PathBuf::from("results").join(&first.name).join(format!("sweep-{}", run_id())),
    };
    // The same target checks as `run` (a postgres_restart needs the ephemeral cluster), before
    // anything is created.
    for (_, plan) in &plans {
        crate::pipeline::check_target(plan, &args.run.database.target)?;
        crate::pipeline::check_limits(plan)?;
    }
    crate::pipeline::check_output_folder(&dir, args.force)?;
    // The server is reached (and its connections counted) before any folder is made: a sweep
    // that cannot log in leaves nothing behind.
    crate::pipeline::check_free_connections(first, &args.run.database.target).await?;
    std::fs::create_dir_all(&dir).map_err(|e| Error::path(Access::CreateSweepFolder, &dir, e))?;
    let total = plans.len();
    println!("{}: sweeping {total} cells × {} repeat(s) into {}", first.name, args.repeat, dir.display());
    let mut done: Vec<CellResult> = Vec::new();
    let mut worst = ExitCode::Passed;
    for (cell, plan) in &plans {
        if interrupt.is_cancelled() {
            break;
        }
        let result = run_cell(cell, plan, args.repeat, &args.run, &dir, interrupt).await;
        for e in &result.errors {
            eprintln!("error: cell {:02} ({}): {e}", cell.index + 1, cell.label());
        }
        if !result.errors.is_empty() {
            worst = worst.worst(ExitCode::Infrastructure);
        }
        println!("{}", progress_line(&result, total));
        done.push(result);
        // Save as you go: a killed sweep still leaves its table.
        export::write(&dir, &[], &[&export::one("sweep.csv", || output::sweep_csv(&grid, &done))])?;
    }
    let mut batches: Vec<u32> = plans.iter().map(|(_, p)| p.workers.batch).collect();
    batches.sort_unstable();
    batches.dedup();
    let planned = recommend::Planned {
        cells: total,
        ran: done.iter().filter(|c| !c.runs.is_empty() || !c.errors.is_empty()).count(),
        batches,
        interrupted: interrupt.is_cancelled(),
    };
    finish(args, &grid, first, &done, &dir, &planned)?;
    if interrupt.is_cancelled() {
        return Ok(ExitCode::Interrupted);
    }
    Ok(worst)
}

/// The grid and a validated plan per cell; nothing runs when any cell is wrong.
fn plan_cells(args: &SweepCommand) -> Result<(Grid, Vec<(Cell, Plan)>)> {
    let grid = grid::parse(&args.grid)?;
    let fixed = scenario::scale::with_flag(&grid.fixed, args.time_scale)?;
    let cells = grid.cells();
    if cells.len() > MAX_CELLS {
        return Err(Error::GridTooLarge { cells: cells.len(), max: MAX_CELLS });
    }
    // One seed for every cell, so cells differ by their parameters only.
    let seed = match args.seed {
        Some(s) => s,
        None => scenario::plan_from_file(&args.file, &fixed, None)?.seed,
    };
    let plans = cells
        .into_iter()
        .map(|c| {
            let sets: Vec<String> = fixed.iter().cloned().chain(c.sets()).collect();
            scenario::plan_from_file(&args.file, &sets, Some(seed)).map(|p| (c, p))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((grid, plans))
}

/// One cell's repeats, each with the next seed; stops at an interrupt.
async fn run_cell(
    cell: &Cell,
    plan: &Plan,
    repeat: u32,
    run: &RunOptions,
    dir: &Path,
    interrupt: &CancellationToken,
) -> CellResult {
    let k = plan.time_scale;
    let mut result = CellResult {
        cell: cell.clone(),
        runs: Vec::new(),
        dirs: Vec::new(),
        errors: Vec::new(),
        lease_s: plan.lease.duration.as_secs_f64() / k,
        heartbeat_s: plan.lease.heartbeat.map(|h| h.as_secs_f64() / k),
    };
    for rep in 0..repeat {
        if interrupt.is_cancelled() {
            break;
        }
        let mut p = plan.clone();
        p.seed = plan.seed.wrapping_add(u64::from(rep));
        let name = format!("cell-{:02}", cell.index + 1);
        let rel = if repeat == 1 { PathBuf::from(name) } else { PathBuf::from(name).join(format!("rep-{}", rep + 1)) };
        match run_one(&p, run, RunPlace { dir: &dir.join(&rel), run_id: run_id() }, interrupt, true).await {
            Ok(RunResult { summary, .. }) if summary.interrupted => {}
            Ok(RunResult { summary, written }) => {
                if let Err(e) = written {
                    result.errors.push(e.to_string());
                }
                result.runs.push(summary);
                result.dirs.push(rel);
            }
            Err(e) => result.errors.push(e.to_string()),
        }
    }
    result
}

fn progress_line(r: &CellResult, total: usize) -> String {
    let head = format!("cell {:02}/{total:02} {}", r.cell.index + 1, r.cell.label());
    match r.measured() {
        Some(m) => format!(
            "{head}: {} jobs/s · claim p99 {:.2} ms · work p99 {} · expired {} · duplicates {}{}",
            recommend::num(m.jobs_per_sec),
            m.claim_p99_ms,
            recommend::secs(m.work_p99_s),
            recommend::pct(m.expired_rate),
            recommend::pct(m.duplicate_rate),
            if r.passed() { "" } else { " · FAILED" }
        ),
        None => format!("{head}: no finished run"),
    }
}

/// Recommendation, charts, sweep.html, runs.csv, and the terminal table.
fn finish(
    args: &SweepCommand,
    grid: &Grid,
    first: &Plan,
    done: &[CellResult],
    dir: &Path,
    planned: &recommend::Planned,
) -> Result<()> {
    let measured: Vec<_> = done.iter().filter_map(|c| c.measured().map(|m| (c, m))).collect();
    let lines = recommend::recommend_for(&measured.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>(), planned);
    let points: Vec<charts::Point> =
        measured.iter().map(|(c, m)| charts::Point { params: &c.cell.params, m }).collect();
    let drawn = charts::draw(grid, &points);
    let all: Vec<_> = done.iter().flat_map(|c| c.runs.iter().cloned()).collect();
    let sweep_csv = export::one("sweep.csv", || output::sweep_csv(grid, done));
    let runs_csv = export::one("runs.csv", || report::summary_csv(&all));
    let chart_files = report::charts_output(&drawn);
    let html = export::one("sweep.html", || {
        output::html(&first.name, first.time_scale, grid, done, &lines, drawn.as_deref().unwrap_or_default())
    });
    export::write(dir, &[], &[&sweep_csv, &runs_csv, &chart_files, &html])?;
    if !args.quiet {
        if first.time_scale != 1.0 {
            println!(
                "\ntime scale {}: times and rates in the scenario's units (claim latencies in real ms)",
                first.time_scale
            );
        }
        print!("\n{}", output::terminal(grid, done, &lines));
    }
    if planned.interrupted {
        println!(
            "  interrupted   after {} of {} cells: sweep.csv, runs.csv and sweep.html hold the cells that finished",
            planned.ran, planned.cells
        );
    }
    println!("  results       {}", dir.join("sweep.html").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(file: &Path, sets: &[&str]) -> SweepCommand {
        SweepCommand {
            file: file.to_path_buf(),
            grid: sets.iter().map(|s| s.to_string()).collect(),
            repeat: 1,
            time_scale: None,
            out: None,
            force: false,
            seed: None,
            quiet: true,
            run: RunOptions { database: crate::options::DatabaseOptions::ephemeral(), progress: false, agents: None },
        }
    }

    fn scenario() -> tempfile::NamedTempFile {
        let f = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
        std::fs::write(f.path(), "name = \"g\"\n[jobs]\npreload = 10\n[workers]\ncount = 2\n").unwrap();
        f
    }

    #[test]
    fn every_cell_is_a_validated_plan_with_one_seed() {
        let f = scenario();
        let (grid, plans) = plan_cells(&args(f.path(), &["workers.batch=1,10", "lease.duration=30s,90s"])).unwrap();
        assert_eq!(grid.axes.len(), 2);
        assert_eq!(plans.len(), 4);
        let got: Vec<(u32, u64)> = plans.iter().map(|(_, p)| (p.workers.batch, p.lease.duration.as_secs())).collect();
        assert_eq!(got, [(1, 30), (1, 90), (10, 30), (10, 90)]);
        assert!(plans.iter().all(|(_, p)| p.seed == plans[0].1.seed));
        let mut a = args(f.path(), &["workers.batch=1,2"]);
        a.time_scale = Some(0.5);
        let (_, plans) = plan_cells(&a).unwrap();
        assert!(plans.iter().all(|(_, p)| p.time_scale == 0.5 && p.lease.duration.as_secs() == 45));
    }

    #[test]
    fn a_bad_value_or_key_is_a_usage_error_naming_it() {
        let f = scenario();
        for (sets, want) in [
            (&["workers.batch=1,x"][..], "workers.batch"),
            (&["workers.batch=1,0"][..], "workers.batch"),
            (&["workers.bacth=1,2"][..], "did you mean `batch`"),
            (&["lease.duration=30s,9"][..], "lease.duration"),
            (&["a=1,2", "a=3"][..], "given twice"),
        ] {
            let e = plan_cells(&args(f.path(), sets)).unwrap_err();
            assert_eq!(e.exit_code(), ExitCode::Usage, "{sets:?}");
            assert!(e.to_string().contains(want), "{sets:?}: {e}");
        }
        let mut a = args(f.path(), &["run.time_scale=0.1"]);
        a.time_scale = Some(0.1);
        assert!(plan_cells(&a).unwrap_err().to_string().contains("once"));
    }
}
