//! The property test: the reference and `verify` agree on thousands of random histories.

use super::*;

/// What a claim's holder does after the claim came back, at a time (ms).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step {
    Heartbeat,
    /// The side effect, with its work (ms).
    Execute(u64),
    /// A completion with its round trip (ms).
    Complete(u64),
    Fail(u64),
    Abandon,
}

/// One claim before the database's answers are decided (times in ms).
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub(crate) worker: u32,
    pub(crate) sent: u64,
    pub(crate) ret: u64,
    /// When the database handed the job out (between sent and ret): its attempt order.
    pub(crate) server: u64,
    pub(crate) steps: Vec<(u64, Step)>,
}

/// The first time at or after `t` that no event of the job uses yet.
pub(crate) fn free(used: &mut HashSet<u64>, mut t: u64) -> u64 {
    while !used.insert(t) {
        t += 1;
    }
    t
}

/// Claims of one job, each placed after the previous one: in flight, during its lease, right after
/// its completion or failure was sent, after its lease, or anywhere.
pub(crate) fn draft_claims(rng: &mut StdRng, workers: u32, heartbeats: bool) -> Vec<Draft> {
    let k = [0, 1, 1, 1, 2, 2, 2, 3, 3, 4][rng.random_range(0..10)];
    let mut used = HashSet::new();
    let mut drafts: Vec<Draft> = Vec::new();
    for _ in 0..k {
        let sent = match drafts.last() {
            None => rng.random_range(0..=300),
            Some(p) => {
                let last_held = p.steps.iter().filter(|(_, s)| matches!(s, Step::Heartbeat)).map(|(t, _)| *t).max();
                let after_lease = last_held.unwrap_or(p.ret) + 1_000 + 50 + rng.random_range(1..=600);
                let write = p.steps.iter().find(|(_, s)| matches!(s, Step::Complete(_) | Step::Fail(_)));
                match rng.random_range(0..100) {
                    0..20 => p.sent + rng.random_range(0..=p.ret - p.sent + 20),
                    20..40 => p.ret + rng.random_range(1..=900),
                    40..60 => match write {
                        Some(&(t, Step::Complete(d) | Step::Fail(d))) => t + rng.random_range(0..=d + 20),
                        _ => after_lease,
                    },
                    60..85 => after_lease,
                    _ => rng.random_range(0..=4_000),
                }
            }
        };
        let round_trip = if rng.random_bool(0.3) { 0 } else { rng.random_range(1..=20) };
        let ret = free(&mut used, sent + round_trip);
        let server = rng.random_range(sent..=ret);
        let work = match rng.random_range(0..10) {
            0..4 => rng.random_range(1..=50),
            4..8 => rng.random_range(50..=800),
            _ => rng.random_range(800..=2_500),
        };
        let mut steps = Vec::new();
        let mut t = ret;
        if heartbeats {
            let mut hb = ret + 300;
            while hb < ret + work {
                t = free(&mut used, hb.max(t + 1));
                steps.push((t, Step::Heartbeat));
                hb += 300;
            }
        }
        if rng.random_bool(0.1) {
            // Crashed before the side effect.
            if rng.random_bool(0.5) {
                t = free(&mut used, t + rng.random_range(1..=work));
                steps.push((t, Step::Abandon));
            }
        } else {
            t = free(&mut used, (ret + work).max(t + 1));
            // Now and then the side effect is skipped yet the job completed (a job done without
            // an execution).
            if rng.random_bool(0.95) {
                steps.push((t, Step::Execute(work)));
            }
            let after = t + rng.random_range(1..=5);
            match rng.random_range(0..100) {
                0..65 => steps.push((free(&mut used, after), Step::Complete(rng.random_range(0..=15)))),
                65..80 => steps.push((free(&mut used, after), Step::Fail(rng.random_range(0..=15)))),
                80..88 => steps.push((free(&mut used, after), Step::Abandon)),
                _ => {} // crashed after the side effect
            }
        }
        drafts.push(Draft { worker: rng.random_range(1..=workers), sent, ret, server, steps });
    }
    drafts
}

/// The journal of one job: attempts numbered in the database's order, each write accepted or
/// rejected plausibly (likely when its claim is the newest the database handed out and the job is
/// not done yet; with a fence, a write of an older claim is almost always rejected).
pub(crate) fn materialize(
    rng: &mut StdRng,
    job: i64,
    drafts: &[Draft],
    g: &Knobs,
    next_claim: &mut [u32],
) -> Vec<Event> {
    let mut order: Vec<usize> = (0..drafts.len()).collect();
    order.sort_by_key(|&i| (drafts[i].server, i));
    let mut attempt = vec![-1; drafts.len()];
    if g.attempts {
        for (rank, &i) in order.iter().enumerate() {
            attempt[i] = rank as i32 + 1;
        }
    }
    let seq: Vec<u32> = drafts
        .iter()
        .map(|d| {
            let s = &mut next_claim[d.worker as usize];
            *s += 1;
            *s
        })
        .collect();
    let ev = |i: usize, t: u64, kind: EventKind, dur: u64| Event {
        t_us: ms(t),
        job,
        attempt: attempt[i],
        worker: drafts[i].worker,
        claim: seq[i],
        kind,
        dur_us: u32::try_from(ms(dur)).unwrap(),
        token: 0,
    };
    let mut events: Vec<Event> =
        (0..drafts.len()).map(|i| ev(i, drafts[i].ret, Claimed, drafts[i].ret - drafts[i].sent)).collect();
    let mut steps: Vec<(u64, usize, Step)> =
        drafts.iter().enumerate().flat_map(|(i, d)| d.steps.iter().map(move |&(t, s)| (t, i, s))).collect();
    steps.sort_by_key(|s| s.0);
    let mut stopped = vec![false; drafts.len()];
    let mut done = false;
    for (t, i, step) in steps {
        if stopped[i] {
            continue;
        }
        let newest = (0..drafts.len()).filter(|&j| drafts[j].server <= t).max_by_key(|&j| (drafts[j].server, j));
        let p = match (newest == Some(i), done) {
            (true, false) => 0.9,
            (true, true) => 0.2,
            (false, _) if g.fenced => 0.05,
            (false, _) => 0.6,
        };
        let accepted = rng.random_bool(p);
        match step {
            Step::Heartbeat if accepted => events.push(ev(i, t, HeartbeatOk, 0)),
            Step::Heartbeat => {
                // The job is no longer ours: the worker stops before its side effect.
                events.push(ev(i, t, HeartbeatRejected, 0));
                stopped[i] = true;
            }
            Step::Execute(work) => events.push(ev(i, t, Executed, work)),
            Step::Complete(d) => {
                events.push(ev(i, t, if accepted { Accepted } else { Rejected }, d));
                done |= accepted;
            }
            Step::Fail(d) => events.push(ev(i, t, if accepted { FailAccepted } else { FailRejected }, d)),
            Step::Abandon => events.push(ev(i, t, Abandoned, 0)),
        }
    }
    events
}

/// Is a claim sent within the tolerance of another claim's computed lease end (or exactly at a
/// cut-short one)? Then the answer hangs on a clock allowance, not on the semantics.
pub(crate) fn near_a_lease_end(events: &[Event]) -> bool {
    let mut events = events.to_vec();
    events.sort_by_key(|e| e.t_us);
    let claims = leases(&events);
    claims.iter().any(|c| {
        claims.iter().any(|o| {
            (o.worker, o.claim) != (c.worker, c.claim)
                && if o.cut { c.sent == o.end } else { c.sent.abs_diff(o.end) <= TOLERANCE_US }
        })
    })
}

/// One history's random settings.
pub(crate) struct Knobs {
    /// The strategy returns attempt numbers.
    pub(crate) attempts: bool,
    /// Completions, failures and heartbeats are fenced by the claim.
    pub(crate) fenced: bool,
    pub(crate) heartbeats: bool,
}

/// How often the generator had to steer clear of a lease end.
#[derive(Default)]
pub(crate) struct Steering {
    /// Drafts of a job thrown away because a claim was sent near another claim's lease end.
    pub(crate) redrawn: u64,
    /// Jobs kept with such a claim after 20 draws (their answer then rests on the tolerance).
    pub(crate) kept_near: u64,
}

/// A random history.
pub(crate) fn generate(seed: u64, steering: &mut Steering) -> History {
    let mut rng = StdRng::seed_from_u64(seed);
    let jobs = rng.random_range(1..=4i64);
    let workers = rng.random_range(1..=3u32);
    let g = Knobs { attempts: rng.random_bool(0.8), fenced: rng.random_bool(0.5), heartbeats: rng.random_bool(0.4) };
    let mut next_claim = vec![0u32; workers as usize + 1];
    let mut h = History { enqueued: jobs as u64, ..Default::default() };
    for job in 1..=jobs {
        let mut events = Vec::new();
        for attempt in 0..20 {
            let drafts = draft_claims(&mut rng, workers, g.heartbeats);
            events = materialize(&mut rng, job, &drafts, &g, &mut next_claim);
            if !near_a_lease_end(&events) {
                break;
            }
            steering.redrawn += 1;
            steering.kept_near += u64::from(attempt == 19);
        }
        let claims = events.iter().filter(|e| e.kind == Claimed).count() as i32;
        let has = |k: EventKind| events.iter().any(|e| e.kind == k);
        let finished = has(Accepted) || has(FailAccepted);
        let missing = rng.random_bool(0.2);
        if !missing {
            const ANY: [Status; 6] =
                [Status::Queued, Status::Running, Status::Done, Status::Failed, Status::Dead, Status::Cancelled];
            let status =
                if has(Accepted) && rng.random_bool(0.7) { Status::Done } else { ANY[rng.random_range(0..ANY.len())] };
            let lease_expired = rng.random_bool(0.4);
            h.rows.push(JobRow { id: job, status, attempts: claims, max_attempts: 3, lease_expired });
        }
        // A cancel of a job that also finished and then vanished is the subtraction bug of
        // `a_job_missing_without_a_trace_is_lost_even_beside_a_cancelled_and_completed_one`
        // (ignored): not generated, so the rest stays compared.
        if rng.random_bool(0.12) && !(missing && finished) {
            h.faults.push(cancel(job, ms(rng.random_range(0..=3_000))));
        }
        h.journal.extend(events);
    }
    // The liveness checks' inputs, from a generator of their own (the histories above stay as
    // they were): faults that hit a job (some twice), lost connections, a stop by the clock, a
    // run that went on long after its last event.
    let mut more = StdRng::seed_from_u64(seed ^ 0x11fe_11fe_11fe_11fe);
    for job in 1..=jobs {
        for _ in 0..[0, 0, 0, 1, 1, 2][more.random_range(0..6)] {
            let kind =
                [FaultKind::Crash, FaultKind::Pause, FaultKind::Poison, FaultKind::LockHold][more.random_range(0..4)];
            let worker = Some(more.random_range(1..=workers));
            h.faults.push(FaultEvent { t_us: ms(more.random_range(0..=3_000)), kind, worker, job: Some(job) });
        }
    }
    if more.random_bool(0.25) {
        let kind = [FaultKind::KillBackend, FaultKind::KillBackend, FaultKind::PostgresRestart, FaultKind::Partition]
            [more.random_range(0..4)];
        let worker = (kind == FaultKind::KillBackend).then(|| more.random_range(1..=workers));
        h.faults.push(FaultEvent { t_us: ms(more.random_range(0..=3_000)), kind, worker, job: None });
    }
    if more.random_bool(0.1) {
        h.restarts.push(ms(more.random_range(0..=3_000)));
    }
    if more.random_bool(0.3) {
        h.stopped = Some(ms(more.random_range(500..=6_000)));
    }
    if more.random_bool(0.3) {
        h.end = ms(more.random_range(3_000..=40_000));
    }
    // The runner hands the journal over sorted; `verify` sorts one that is not.
    if rng.random_bool(0.5) {
        h.journal.shuffle(&mut rng);
    } else {
        h.journal.sort_by_key(Event::order);
    }
    h
}

#[test]
fn property_the_reference_and_verify_agree_on_random_histories() {
    let only: Option<u64> = std::env::var("CHECKERS_SEED").ok().map(|s| s.parse().expect("CHECKERS_SEED: a number"));
    let cases: u64 =
        std::env::var("CHECKERS_CASES").ok().map_or(10_000, |s| s.parse().expect("CHECKERS_CASES: a number"));
    let seeds: Vec<u64> = match only {
        Some(s) => vec![s],
        None => (0..cases).collect(),
    };
    let start = Instant::now();
    let mut mismatches = Vec::new();
    let mut steering = Steering::default();
    // How many histories showed each cause (the generator must keep reaching them all).
    let mut seen = [0u64; 20];
    let names = [
        "racing duplicate",
        "duplicate after the lease",
        "stale completion accepted",
        "stale completion rejected",
        "stale failure",
        "stale heartbeat",
        "ownership overlap",
        "claim during a lease",
        "lost job",
        "clean (every compared check passes)",
        "race without an ownership overlap",
        "refused write unexplained",
        "refused write explained",
        "job left abandoned",
        "stall or nothing executed",
        "unrecovered fault",
        "dead after one fault",
        "retry after an accepted failure",
        "duplicate after a crash",
        "run after the completion",
    ];
    for &seed in &seeds {
        let h = generate(seed, &mut steering);
        let want = reference(&h);
        let got = observed(&h);
        let shows = [
            want.duplicate_race > 0,
            want.duplicate_lease_expired > 0,
            want.stale_accepted > 0,
            want.stale_rejected > 0,
            want.fail_stale_accepted + want.fail_stale_rejected > 0,
            want.heartbeat_stale_accepted > 0,
            want.overlapping_jobs > 0,
            want.claims_during_lease > 0,
            want.lost > 0,
            want.exactly_once && want.no_lost_jobs && want.stale_completions_accepted && want.ownership_overlap,
            want.duplicate_race > 0 && want.overlapping_jobs == 0,
            want.refused_unexplained > 0,
            want.rejected + want.fails_rejected > want.refused_unexplained,
            want.left_abandoned > 0,
            want.stalls > 0,
            want.unrecovered_faults.is_some_and(|n| n > 0),
            want.dead_after_one_fault.is_some_and(|n| n > 0),
            want.retries > 0,
            want.duplicate_after_crash > 0,
            want.run_after_completion > 0,
        ];
        for (s, shown) in seen.iter_mut().zip(shows) {
            *s += u64::from(shown);
        }
        if only.is_some() {
            println!("seed {seed}\n{}reference: {want:?}\nverify:    {got:?}", h.show());
        }
        if want != got {
            mismatches.push((seed, want.diff(&got), h));
        }
    }
    let elapsed = start.elapsed();
    println!(
        "{} histories in {:.2} s ({} job drafts redrawn for a claim near a lease end, {} kept); mismatches: {}",
        seeds.len(),
        elapsed.as_secs_f64(),
        steering.redrawn,
        steering.kept_near,
        mismatches.len()
    );
    for (name, n) in names.iter().zip(seen) {
        println!("  {name}: {n}");
    }
    if let Some((seed, diff, h)) = mismatches.first() {
        let first: Vec<u64> = mismatches.iter().map(|m| m.0).take(20).collect();
        panic!(
            "{} of {} histories: the reference and verify disagree (first seeds {first:?}).\n\
             seed {seed} (reference vs verify):\n{diff}{}\nreplay: CHECKERS_SEED={seed} cargo test --test suite checkers::property -- --nocapture",
            mismatches.len(),
            seeds.len(),
            h.show()
        );
    }
    if only.is_none() && cases >= 1_000 {
        for (name, n) in names.iter().zip(seen) {
            assert!(n * 100 >= cases, "the generator reached `{name}` in only {n} of {cases} histories");
        }
    }
}
