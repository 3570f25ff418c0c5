//! What a process cost, from `/usr/bin/time -v`'s report: CPU seconds and peak memory.

use crate::error::{Error, Result};
use std::path::Path;
use std::process::Command;

/// `cmd` under `/usr/bin/time -v -o REPORT`.
pub fn timed(report: &Path, cmd: &Command) -> Command {
    let mut t = Command::new("/usr/bin/time");
    t.arg("-v").arg("-o").arg(report).arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => t.env(k, v),
            None => t.env_remove(k),
        };
    }
    t
}

/// (user + system CPU seconds, peak RSS in MiB) of a `/usr/bin/time -v` report.
pub fn cost(report: &Path) -> Result<(f64, f64)> {
    let text = std::fs::read_to_string(report).map_err(Error::io(report))?;
    Ok(parse(&text))
}

fn parse(text: &str) -> (f64, f64) {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(": ")?.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (
        field("User time (seconds)") + field("System time (seconds)"),
        field("Maximum resident set size (kbytes)") / 1024.0,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_time_report_gives_cpu_and_peak_memory() {
        let text = "\tCommand being timed: \"x\"\n\tUser time (seconds): 1.25\n\tSystem time (seconds): 0.50\n\
                    \tMaximum resident set size (kbytes): 204800\n";
        assert_eq!(super::parse(text), (1.75, 200.0));
    }
}
