//! The reference checker: quadratic loops over one job's events, straight from the semantics.

use super::*;

/// One claim of a job as the reference sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease {
    pub(crate) worker: u32,
    pub(crate) claim: u32,
    pub(crate) attempt: i32,
    /// When the claim was sent (it came back `dur_us` later).
    pub(crate) sent: u64,
    /// When it came back.
    pub(crate) ret: u64,
    /// The end of its lease window.
    pub(crate) end: u64,
    /// The end its lease would have had, an accepted completion or failure left aside.
    pub(crate) until: u64,
    /// The window was cut short by an accepted completion or failure (its end is measured on
    /// the harness's clock: no tolerance).
    pub(crate) cut: bool,
    /// When its holder let go (None: never).
    pub(crate) released: Option<u64>,
}

pub(crate) fn of(e: &Event, l: &Lease) -> bool {
    e.worker == l.worker && e.claim == l.claim
}

pub(crate) fn of_same(a: &Lease, b: &Lease) -> bool {
    (a.worker, a.claim) == (b.worker, b.claim)
}

/// The claims of one job, with their lease windows and beliefs.
pub(crate) fn leases(events: &[Event]) -> Vec<Lease> {
    let mut out = Vec::new();
    for c in events.iter().filter(|e| e.kind == Claimed) {
        let mut l = Lease {
            worker: c.worker,
            claim: c.claim,
            attempt: c.attempt,
            sent: c.t_us.saturating_sub(u64::from(c.dur_us)),
            ret: c.t_us,
            end: c.t_us + LEASE_US,
            until: 0,
            cut: false,
            released: None,
        };
        let mut first_give_back: Option<&Event> = None;
        for e in events.iter().filter(|e| (e.worker, e.claim) == (c.worker, c.claim)) {
            match e.kind {
                // A heartbeat's time is when it was sent; the harness does not measure its round trip.
                HeartbeatOk => l.end = l.end.max(e.t_us + LEASE_US),
                Accepted | FailAccepted if first_give_back.is_none_or(|f| e.t_us < f.t_us) => first_give_back = Some(e),
                _ => {}
            }
            let lets_go =
                matches!(e.kind, Accepted | Rejected | FailAccepted | FailRejected | Abandoned | HeartbeatRejected);
            if lets_go && l.released.is_none_or(|r| e.t_us < r) {
                l.released = Some(e.t_us);
            }
        }
        l.until = l.end;
        // Given back when the accepted write was sent: a claim sent during its round trip may
        // follow its commit, so only one sent before it overlaps for certain.
        if let Some(f) = first_give_back
            && f.t_us < l.end
        {
            l.end = f.t_us;
            l.cut = true;
        }
        out.push(l);
    }
    out
}

/// Do two claims' lease windows overlap? The tolerance applies at a computed end, not at a cut
/// one; the inequality is the one the brief points to in exactly_once.rs (strict, each window's
/// start shifted by the other's slack), the only thing taken from `src/verify`.
pub(crate) fn windows_overlap(a: &Lease, b: &Lease) -> bool {
    let slack = |l: &Lease| if l.cut { 0 } else { TOLERANCE_US };
    a.sent + slack(b) < b.end && b.sent + slack(a) < a.end
}

/// Do two claims' beliefs (return .. let go) overlap?
pub(crate) fn beliefs_overlap(a: &Lease, b: &Lease) -> bool {
    a.ret < b.released.unwrap_or(u64::MAX) && b.ret < a.released.unwrap_or(u64::MAX)
}

/// The job's events in time order.
pub(crate) fn job_events(h: &History, job: i64) -> Vec<Event> {
    let mut events: Vec<Event> = h.journal.iter().filter(|e| e.job == job).copied().collect();
    events.sort_by_key(|e| e.t_us);
    events
}

pub(crate) fn reference(h: &History) -> Numbers {
    let mut n = Numbers { exactly_once: false, no_lost_jobs: false, ..CLEAN };
    let jobs: BTreeSet<i64> = h.journal.iter().map(|e| e.job).collect();
    let mut executed = BTreeSet::new();
    for &job in &jobs {
        let events = job_events(h, job);
        let claims = leases(&events);

        // Executions: the first is the job's; the causes of the extra ones below.
        let runs: Vec<&Event> = events.iter().filter(|e| e.kind == Executed).collect();
        n.total += runs.len() as u64;
        n.max_per_job = n.max_per_job.max(runs.len() as u64);
        if !runs.is_empty() {
            n.distinct_jobs += 1;
            executed.insert(job);
        }
        // Each extra run's cause: a race when its claim's window overlaps another claim's; else
        // after the job's completion when one landed (another claim's accepted completion, sent
        // before this claim was, and answered before it too or sent while its own lease still ran
        // beyond the tolerance); else by what the claim just before it in the database's order did
        // before this claim was sent: its failure was accepted (a retry, no duplicate), it let go
        // without finishing (a crash); else its lease ran out while it lived.
        let mut ordered = claims.clone();
        if claims.iter().all(|l| l.attempt >= 0) {
            ordered.sort_by_key(|l| (l.attempt, l.ret));
        }
        // A completion sent before the server was back from a restart that began before the
        // claim was sent may be lost (durability judges it).
        let lost = |e: &Event, l: &Lease| {
            h.restarts
                .iter()
                .enumerate()
                .any(|(i, &down)| e.t_us <= h.restarts_up.get(i).copied().unwrap_or(down) && down <= l.sent)
        };
        let landed = |l: &Lease| {
            events.iter().any(|e| {
                e.kind == Accepted && !of(e, l) && e.t_us <= l.sent && !lost(e, l) && {
                    let own = claims.iter().find(|o| of(e, o));
                    e.t_us + u64::from(e.dur_us) <= l.sent || own.is_some_and(|o| l.sent + TOLERANCE_US < o.until)
                }
            })
        };
        n.run_after_completion += u64::from(claims.iter().any(landed));
        let mut duplicates = 0;
        for run in runs.iter().skip(1) {
            // (An execution without its claim in the journal is neither: none is generated.)
            let Some(mine) = claims.iter().find(|l| of(run, l)) else { continue };
            let prev = ordered.iter().position(|l| of_same(l, mine)).and_then(|i| i.checked_sub(1)).map(|i| ordered[i]);
            let prev_did = |k: EventKind| {
                prev.is_some_and(|p| events.iter().any(|e| of(e, &p) && e.kind == k && e.t_us <= mine.sent))
            };
            if claims.iter().any(|o| !of(run, o) && windows_overlap(mine, o)) {
                n.duplicate_race += 1;
            } else if landed(mine) {
                n.duplicate_after_completion += 1;
            } else if prev_did(FailAccepted) {
                n.retries += 1;
                continue;
            } else if prev_did(Abandoned) {
                n.duplicate_after_crash += 1;
            } else {
                n.duplicate_lease_expired += 1;
            }
            duplicates += 1;
        }
        n.duplicate += duplicates;
        n.jobs_duplicated += u64::from(duplicates > 0);

        // Stale writes: the newest of the claims that came back before the write was sent (by
        // attempt when the strategy numbers them, else by time) is another claim. Or, for a write
        // still in flight when another claim came back: a rejected completion or failure; an
        // accepted completion when that claim is the job's last and its own write was rejected.
        let by_attempt = claims.iter().all(|l| l.attempt >= 0);
        // Surely the last claim: every other one came back before it was sent.
        let surely_last = |l: &Lease| claims.iter().all(|o| of_same(o, l) || o.ret < l.sent);
        let turned_away = |l: &Lease| events.iter().any(|e| of(e, l) && matches!(e.kind, Rejected | FailRejected));
        for w in &events {
            let newest = claims
                .iter()
                .filter(|l| l.ret < w.t_us)
                .max_by_key(|l| if by_attempt { (i64::from(l.attempt), l.ret) } else { (0, l.ret) });
            let answer = w.t_us + u64::from(w.dur_us);
            let mut in_flight = claims.iter().filter(|l| !of(w, l) && l.ret > w.t_us && l.ret <= answer);
            let late = match w.kind {
                Rejected | FailRejected => in_flight.next().is_some(),
                Accepted => in_flight.any(|l| surely_last(l) && turned_away(l)),
                _ => false,
            };
            let stale = u64::from(newest.is_some_and(|l| !of(w, l)) || late);
            match w.kind {
                Accepted => {
                    n.accepted += 1;
                    n.stale_accepted += stale;
                }
                Rejected => {
                    n.rejected += 1;
                    n.stale_rejected += stale;
                }
                FailAccepted => {
                    n.fails_accepted += 1;
                    n.fail_stale_accepted += stale;
                }
                FailRejected => {
                    n.fails_rejected += 1;
                    n.fail_stale_rejected += stale;
                }
                HeartbeatOk => {
                    n.heartbeats_accepted += 1;
                    n.heartbeat_stale_accepted += stale;
                }
                HeartbeatRejected => n.heartbeats_rejected += 1,
                Claimed | Executed | Abandoned | CompleteUnknown => {}
            }
        }

        // Ownership: two claims whose beliefs overlap; claims that came back after another claim
        // had, and were sent before that claim's lease ended.
        let overlap = claims.iter().enumerate().any(|(i, a)| claims[i + 1..].iter().any(|b| beliefs_overlap(a, b)));
        n.overlapping_jobs += u64::from(overlap);
        n.claims_during_lease += claims
            .iter()
            .filter(|c| {
                claims.iter().any(|o| (o.worker, o.claim) != (c.worker, c.claim) && o.ret <= c.ret && c.sent < o.end)
            })
            .count() as u64;
    }

    // Lost, job by job: a done row never executed, a running row whose lease expired, and a job
    // missing from the table that nothing accounts for (missing after an accepted completion is
    // done, so lost only if never executed; after an accepted failure dead; after a cancel cancelled).
    let cancelled: BTreeSet<i64> =
        h.faults.iter().filter(|f| f.kind.name() == "cancel").filter_map(|f| f.job).collect();
    for job in 1..=h.enqueued as i64 {
        let has = |k: EventKind| h.journal.iter().any(|e| e.job == job && e.kind == k);
        let ran = executed.contains(&job);
        let lost = match h.rows.iter().find(|r| r.id == job) {
            Some(r) => (r.status == Status::Done && !ran) || (r.status == Status::Running && r.lease_expired),
            None if has(Accepted) => !ran,
            None => !has(FailAccepted) && !cancelled.contains(&job),
        };
        n.lost += u64::from(lost);
    }

    reference_liveness(h, &mut n);
    n.exactly_once = n.jobs_duplicated == 0;
    n.no_lost_jobs = n.lost == 0;
    n.stale_completions_accepted = n.stale_accepted + n.fail_stale_accepted + n.heartbeat_stale_accepted == 0;
    n.ownership_overlap = n.overlapping_jobs == 0;
    n
}

/// Fault kinds that cut a connection: an answer may be lost and the statement sent again.
pub(crate) const CUTS: [&str; 5] = ["kill_backend", "postgres_restart", "partition", "latency", "loss"];

/// The liveness checks, from their documented semantics (src/verify/liveness/'s header): the
/// lease windows are the reference's own (`leases`), the tolerance the one above.
pub(crate) fn reference_liveness(h: &History, n: &mut Numbers) {
    let jobs: BTreeSet<i64> = h.journal.iter().map(|e| e.job).collect();
    let end = h.journal.iter().map(|e| e.t_us + u64::from(e.dur_us)).max().unwrap_or(0).max(h.end);

    // Refused completions and failures, one by one.
    for &job in &jobs {
        let events = job_events(h, job);
        let claims = leases(&events);
        for w in events.iter().filter(|e| matches!(e.kind, Rejected | FailRejected)) {
            let answer = w.t_us + u64::from(w.dur_us);
            let Some(mine) = claims.iter().find(|l| of(w, l)) else { continue };
            let competing = claims.iter().any(|o| !of_same(o, mine) && o.ret >= mine.sent && o.sent <= answer);
            let landed = events.iter().any(|x| {
                matches!(x.kind, Accepted | FailAccepted)
                    && !of(x, mine)
                    && x.t_us <= answer
                    && x.t_us + u64::from(x.dur_us) >= mine.sent
            });
            let expired = answer + TOLERANCE_US >= mine.end;
            let cancelled =
                h.faults.iter().any(|f| f.kind.name() == "cancel" && f.job == Some(job) && f.t_us <= answer);
            // A restart cuts what was open from its stop to the server's return (when known).
            let restart = |(i, &down): (usize, &u64)| match h.restarts_up.get(i) {
                Some(&up) => down <= answer && mine.sent <= up,
                None => (mine.sent..=answer).contains(&down),
            };
            let cut = h.faults.iter().any(|f| {
                CUTS.contains(&f.kind.name())
                    && f.kind.name() != "postgres_restart"
                    && (f.kind.name() != "kill_backend" || f.worker.is_none() || f.worker == Some(w.worker))
                    && (mine.sent..=answer).contains(&f.t_us)
            }) || h.restarts.iter().enumerate().any(restart);
            n.refused_unexplained += u64::from(!(competing || landed || expired || cancelled || cut));
        }
    }

    // Running rows whose newest holder let go before the stop (or that no claim holds).
    for r in h.rows.iter().filter(|r| r.status == Status::Running) {
        let events = job_events(h, r.id);
        let claims = leases(&events);
        let by_attempt = claims.iter().all(|l| l.attempt >= 0);
        let newest = claims.iter().max_by_key(|l| if by_attempt { (i64::from(l.attempt), l.ret) } else { (0, l.ret) });
        n.left_abandoned += u64::from(match newest {
            None => h.stopped.is_none(),
            Some(l) => l.released.is_some_and(|t| h.stopped.is_none_or(|s| t < s)),
        });
    }

    // Progress: the gaps between executions, cut to the stretches in which some job waited for
    // its first claim.
    let cancel_at =
        |job: i64| h.faults.iter().filter(|f| f.kind.name() == "cancel" && f.job == Some(job)).map(|f| f.t_us).min();
    let ready_at =
        |job: i64| h.arrivals.iter().find(|a| a.job == job).map_or(0, |a| a.sent_us + u64::from(a.enqueue_us));
    let mut waits: Vec<(u64, u64, i64)> = Vec::new();
    for &job in &jobs {
        let taken = h
            .journal
            .iter()
            .filter(|e| e.job == job)
            .filter_map(|e| match e.kind {
                Claimed | Executed => Some(e.t_us.saturating_sub(u64::from(e.dur_us))),
                Accepted | FailAccepted => Some(e.t_us),
                _ => None,
            })
            .chain(cancel_at(job))
            .min()
            .unwrap_or(end);
        waits.push((ready_at(job), taken, job));
    }
    for r in h.rows.iter().filter(|r| !jobs.contains(&r.id) && r.status == Status::Queued) {
        waits.push((ready_at(r.id), cancel_at(r.id).unwrap_or(end), r.id));
    }
    waits.retain(|w| w.1 > w.0);
    let mut runs: Vec<u64> = h.journal.iter().filter(|e| e.kind == Executed).map(|e| e.t_us).collect();
    runs.sort_unstable();
    if runs.is_empty() {
        n.stalls = u64::from(h.enqueued > 0 || !waits.is_empty());
    } else {
        let longest_work = h.journal.iter().filter(|e| e.kind == Executed).map(|e| u64::from(e.dur_us)).max().unwrap();
        let threshold = (10_000 * MS).max(3 * LEASE_US).max(3 * longest_work);
        let mut bounds = vec![0];
        bounds.extend(&runs);
        bounds.push(end.max(*runs.last().unwrap()));
        for gap in bounds.windows(2) {
            // The waits inside this gap between executions, as merged stretches.
            let mut inside: Vec<(u64, u64)> =
                waits.iter().map(|w| (w.0.max(gap[0]), w.1.min(gap[1]))).filter(|p| p.1 > p.0).collect();
            inside.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::new();
            for p in inside {
                match merged.last_mut() {
                    Some(m) if p.0 <= m.1 => m.1 = m.1.max(p.1),
                    _ => merged.push(p),
                }
            }
            n.stalls += merged.iter().filter(|m| m.1 - m.0 > threshold).count() as u64;
        }
    }

    // Faults that hit a job (not a cancel): did the job come back (a completion accepted after
    // the fault, a failure of its own accepted at any time, done at the end, or dead with its
    // budget spent)? Dead after one?
    let hits: Vec<&FaultEvent> = h.faults.iter().filter(|f| f.kind.name() != "cancel" && f.job.is_some()).collect();
    if hits.is_empty() {
        return;
    }
    let row = |job: i64| h.rows.iter().find(|r| r.id == job);
    let has = |job: i64, k: EventKind| h.journal.iter().any(|e| e.job == job && e.kind == k);
    let mut unrecovered = 0;
    for f in &hits {
        let job = f.job.unwrap();
        let after = h.journal.iter().any(|e| e.job == job && e.kind == Accepted && e.t_us >= f.t_us);
        let failed_on_its_own = has(job, FailAccepted);
        // Done at the end, or dead with every attempt spent (the faults took its budget and the
        // queue judged it).
        let done = match row(job) {
            Some(r) => {
                r.status == Status::Done
                    || (r.status == Status::Dead && r.max_attempts > 0 && r.attempts >= r.max_attempts)
            }
            None => has(job, Accepted),
        };
        let too_late = h.stopped.is_some_and(|s| f.t_us + 2 * LEASE_US + 1_000 * MS > s);
        unrecovered += u64::from(!after && !failed_on_its_own && !done && !too_late);
    }
    n.unrecovered_faults = Some(unrecovered);
    let hit: BTreeSet<i64> = hits.iter().map(|f| f.job.unwrap()).collect();
    let dead = hit
        .iter()
        .filter(|&&job| hits.iter().filter(|f| f.job == Some(job)).count() == 1)
        .filter(|&&job| row(job).is_some_and(|r| r.status == Status::Dead) && !has(job, FailAccepted))
        .count();
    n.dead_after_one_fault = Some(dead as u64);
}
