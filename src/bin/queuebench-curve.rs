//! `queuebench-curve CSV DIR`: the worker-count curve of `scripts/bench.sh`
//! as charts. CSV columns: workers, jobs_per_sec, claim_p50_ms, claim_p99_ms
//! (a header line first). Writes DIR/worker-curve-throughput.{svg,png} and
//! DIR/worker-curve-claim.{svg,png}, with workers on a log2 axis (and claim
//! latency, which spans three orders of magnitude, on a log10 axis).

use queuebench::error::{Access, Error};
use queuebench::report::charts::{LineChart, Series, line_log2, line_log2_log10};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, csv, dir] = args.as_slice() else {
        eprintln!("usage: queuebench-curve CSV DIR  (CSV: workers,jobs_per_sec,claim_p50_ms,claim_p99_ms)");
        return ExitCode::from(2);
    };
    // A regular file under the summaries' limit; a FIFO, a device or a /proc file is refused.
    let text = match queuebench::files::read_text(Path::new(csv), queuebench::files::Kind::Summary) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1).filter(|(_, l)| !l.trim().is_empty()) {
        let v: Result<Vec<f64>, _> = line.split(',').map(|f| f.trim().parse::<f64>()).collect();
        match v {
            Ok(v) if v.len() == 4 && v[0] >= 1.0 => rows.push(v),
            _ => {
                let line = queuebench::error::shown(&queuebench::error::filter(line)).into_owned();
                eprintln!("error: {csv}:{}: expected four numbers, workers ≥ 1: {line}", n + 1);
                return ExitCode::from(2);
            }
        }
    }
    let series = |name: &str, col: usize, log_y: bool| Series {
        name: name.into(),
        points: rows.iter().map(|r| (r[0].log2(), if log_y { r[col].max(0.001).log10() } else { r[col] })).collect(),
    };
    let throughput = LineChart {
        title: "Throughput by worker count (skip-locked, zero work)",
        x_label: "workers",
        y_label: "jobs/s",
        series: vec![series("jobs/s", 1, false)],
    };
    let claim = LineChart {
        title: "Claim latency by worker count",
        x_label: "workers",
        y_label: "ms (log scale)",
        series: vec![series("claim p50", 2, true), series("claim p99", 3, true)],
    };
    let charts = [(&throughput, "worker-curve-throughput", false), (&claim, "worker-curve-claim", true)];
    for (chart, name, log_y) in charts {
        let drawn = if log_y { line_log2_log10 } else { line_log2 };
        let written = drawn(chart, name, "").and_then(|c| {
            let png = Path::new(dir).join(format!("{name}.png"));
            std::fs::write(Path::new(dir).join(format!("{name}.svg")), &c.svg)
                .and_then(|()| std::fs::write(&png, &c.png))
                .map(|()| png)
                .map_err(|e| Error::io(Access::WriteChartInto, dir, e))
        });
        match written {
            Ok(png) => println!("{}", png.display()),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(3);
            }
        }
    }
    ExitCode::SUCCESS
}
