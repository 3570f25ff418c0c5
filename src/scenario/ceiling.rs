//! The throughput a client run's configuration allows at most, in words
//! (docs/clients.md, "Ceilings"): a library that waits out its poll interval after every fetch
//! (pg-boss) can run no more than `handlers × jobs per fetch ÷ poll` jobs a second, and no
//! handler runs more than `1 ÷ work` jobs a second. Which of these a library obeys is declared
//! in its folder's `client.toml` (`[throughput]`), from the library's documented design.

use super::client::ClientPlan;
#[cfg(test)]
use super::client::Pacing;
use super::plan::WorkModel;
use super::units::format_duration;
use std::time::Duration;

/// A ceiling and how it follows from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ceiling {
    pub jobs_per_sec: f64,
    /// e.g. "16 handlers (4 processes × 4) × 1 job per fetch ÷ 0.5 s poll = 32 jobs/s".
    pub words: String,
}

fn rate(x: f64) -> String {
    if x >= 100.0 {
        let whole = x.round() as u64;
        let s = whole.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else {
        format!("{:.3}", x).trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn seconds(d: Duration) -> String {
    if d >= Duration::from_secs(1) || d.subsec_millis().is_multiple_of(100) && d >= Duration::from_millis(100) {
        format!("{} s", rate(d.as_secs_f64()))
    } else {
        format_duration(d)
    }
}

/// The lower of the poll-paced and the work-paced ceilings of a client run with `processes`
/// worker processes; None when the configuration sets neither (e.g. a library that fetches
/// again at once while jobs wait, with work that is not a fixed time).
pub(crate) fn of_client(client: &ClientPlan, processes: u32, work: &WorkModel) -> Option<Ceiling> {
    let handlers = processes as f64 * client.concurrency as f64;
    let noun = if handlers == 1.0 { "handler" } else { "handlers" };
    let who = if processes > 1 {
        format!("{} {noun} ({processes} processes × {})", rate(handlers), client.concurrency)
    } else {
        format!("{} {noun}", rate(handlers))
    };
    let batch = client.batch.unwrap_or(1) as f64;
    let pacing = client.pacing.clone().unwrap_or_default();
    let mut found = Vec::new();
    let poll = client.poll_ms.map(Duration::from_millis).or(pacing.poll_default);
    if let (true, Some(poll)) = (pacing.paced_by_poll, poll.filter(|p| !p.is_zero())) {
        let jobs = handlers * batch / poll.as_secs_f64();
        let per = if batch == 1.0 { "1 job".to_string() } else { format!("{} jobs", rate(batch)) };
        found.push(Ceiling {
            jobs_per_sec: jobs,
            words: format!("{who} × {per} per fetch ÷ {} poll = {} jobs/s", seconds(poll), rate(jobs)),
        });
    }
    if let WorkModel::Fixed(w) = *work
        && !w.is_zero()
    {
        let side = if pacing.batch_side_by_side { batch } else { 1.0 };
        let jobs = handlers * side / w.as_secs_f64();
        let who = if side > 1.0 { format!("{who} × {} jobs side by side", rate(side)) } else { who };
        found.push(Ceiling {
            jobs_per_sec: jobs,
            words: format!("{who} ÷ {} of work per job = {} jobs/s", seconds(w), rate(jobs)),
        });
    }
    found.into_iter().min_by(|a, b| a.jobs_per_sec.total_cmp(&b.jobs_per_sec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::client::EnqueueSql;

    fn client(concurrency: u32, batch: Option<u32>, poll_ms: Option<u64>, pacing: Option<Pacing>) -> ClientPlan {
        ClientPlan {
            name: "x".into(),
            dir: "/x".into(),
            program: "/x/run".into(),
            enqueue: EnqueueSql { session: vec![], statement: "INSERT".into() },
            concurrency,
            bug: None,
            poll_ms,
            batch,
            pacing,
            faults: vec![],
        }
    }

    fn paced() -> Option<Pacing> {
        Some(Pacing {
            paced_by_poll: true,
            poll_default: Some(Duration::from_secs(2)),
            batch_side_by_side: true,
            batch_fetch: true,
        })
    }

    #[test]
    fn a_poll_paced_library_is_bounded_by_handlers_times_batch_over_poll() {
        let c =
            of_client(&client(4, None, Some(500), paced()), 4, &WorkModel::Fixed(Duration::from_millis(5))).unwrap();
        assert_eq!(c.jobs_per_sec, 32.0);
        assert_eq!(c.words, "16 handlers (4 processes × 4) × 1 job per fetch ÷ 0.5 s poll = 32 jobs/s");
        // The library's default poll when the scenario gives none; a batch multiplies.
        let c = of_client(&client(2, Some(50), None, paced()), 1, &WorkModel::Fixed(Duration::ZERO)).unwrap();
        assert_eq!((c.jobs_per_sec, c.words.as_str()), (50.0, "2 handlers × 50 jobs per fetch ÷ 2 s poll = 50 jobs/s"));
    }

    #[test]
    fn work_bounds_every_library_and_the_lower_ceiling_is_named() {
        let c = of_client(&client(4, None, None, None), 4, &WorkModel::Fixed(Duration::from_millis(5))).unwrap();
        assert_eq!(c.words, "16 handlers (4 processes × 4) ÷ 5ms of work per job = 3,200 jobs/s");
        // Poll-paced with a large batch run side by side: the work is the lower bound.
        let c =
            of_client(&client(1, Some(100), Some(500), paced()), 1, &WorkModel::Fixed(Duration::from_secs(1))).unwrap();
        assert_eq!(c.words, "1 handler × 100 jobs side by side ÷ 1 s of work per job = 100 jobs/s");
        // Nothing set by configuration: no ceiling.
        assert!(of_client(&client(4, Some(10), Some(500), None), 2, &WorkModel::Fixed(Duration::ZERO)).is_none());
    }
}
