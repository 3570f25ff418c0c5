//! The swimlanes drawn from small journals.

use super::*;
use crate::collect::EventKind::*;
use crate::model::check::Check;

fn ev(t_us: u64, job: i64, worker: u32, claim: u32, kind: EventKind) -> Event {
    Event { t_us, job, attempt: 1, worker, claim, kind, dur_us: 100, token: 0 }
}

#[test]
fn a_race_draws_two_lanes_each_with_its_claim_work_and_write() {
    let journal = [
        ev(1_000, 7, 1, 1, Claimed),
        ev(1_100, 7, 2, 1, Claimed),
        ev(2_000, 7, 1, 1, Executed),
        ev(2_100, 7, 2, 1, Executed),
        ev(3_000, 7, 1, 1, Accepted),
        ev(3_100, 7, 2, 1, Rejected),
        ev(500, 8, 3, 1, Claimed),
    ];
    let failed = CheckResult {
        name: Check::ExactlyOnce,
        passed: false,
        violations: 1,
        detail: String::new(),
        examples: vec![7],
    };
    let passed = CheckResult { name: Check::NoLostJobs, passed: true, examples: vec![8], ..failed.clone() };
    let src = Source {
        journal: &journal,
        faults: &[],
        reaps: &[],
        final_jobs: &[],
        lease: Duration::from_secs(30),
        hold_transaction: false,
        clock_us: 0,
        network: &[],
    };
    let lanes = swimlanes(&[failed, passed], &src);
    assert_eq!(lanes.len(), 1, "only failed checks are drawn");
    let svg = &lanes[0].svg;
    assert!(svg.contains(">w1<") && svg.contains(">w2<") && !svg.contains(">w3<"), "{svg}");
    assert_eq!(svg.matches("fill='#cfe2ff'>").count(), 2, "two lease windows");
    assert_eq!(svg.matches("fill='#f0ad00'>").count(), 2, "two executions");
    assert!(svg.contains("complete_rejected sent at t=0.003 s, answered at t=0.003 s"), "{svg}");
    assert!(lanes[0].causes.iter().any(|c| c.contains("racing claim")), "{:?}", lanes[0].causes);
    let mut page = String::new();
    crate::report::html::example_jobs(&mut page, &lanes);
    assert!(page.contains("<h3>job 7 · exactly_once</h3>") && page.contains("racing claim"), "{page}");
}

#[test]
fn a_partition_is_a_band_over_the_lanes_of_its_agent_s_workers_only() {
    // w5 (agent 2) claims job 3 at 0.5 s, is cut off from 1 s to 11 s, and its late
    // completion is rejected; w1 (agent 1) took the job at 9 s.
    let journal = [
        ev(500_000, 3, 5, 1, Claimed),
        ev(8_000_000, 3, 5, 1, Executed),
        ev(9_100_000, 3, 1, 1, Claimed),
        ev(12_000_000, 3, 5, 1, Rejected),
        ev(17_000_000, 3, 1, 1, Executed),
        ev(17_100_000, 3, 1, 1, Accepted),
    ];
    let net =
        |agent, start_us, end_us, workers| NetworkSpan { kind: "partition".into(), agent, start_us, end_us, workers };
    let network = [
        net(2, 1_000_000, 11_000_000, vec![(5, 8), (100_009, 200_008)]),
        // Another agent's cut: none of its workers is in this job's lanes.
        net(3, 2_000_000, 4_000_000, vec![(9, 12)]),
        // Agent 2 again, long after this job's window.
        net(2, 90_000_000, 95_000_000, vec![(5, 8)]),
    ];
    let failed = CheckResult {
        name: crate::model::check::Check::StaleCompletionsAccepted,
        passed: false,
        violations: 1,
        detail: String::new(),
        examples: vec![3],
    };
    let mut src = Source {
        journal: &journal,
        faults: &[],
        reaps: &[],
        final_jobs: &[],
        lease: Duration::from_secs(9),
        hold_transaction: false,
        clock_us: 0,
        network: &network,
    };
    let svg = swimlanes(std::slice::from_ref(&failed), &src).remove(0).svg;
    assert_eq!(svg.matches("class='net-fault'").count(), 1, "one band, on w5's lane only: {svg}");
    assert!(svg.contains("network partition of agent 2"), "{svg}");
    assert!(svg.contains("from t=1.000 s to t=11.000 s"), "{svg}");
    assert!(svg.contains(">network partition · agent 2, 1.0–11.0 s (the lanes"), "its legend entry: {svg}");
    // The band lies in w5's lane (the second: w1, then w5) and spans 1 s to 11 s.
    let band = svg.split("class='net-fault' ").nth(1).unwrap();
    let attr = |name: &str| -> f64 {
        let v = band.split(&format!("{name}='")).nth(1).unwrap();
        v[..v.find('\'').unwrap()].parse().unwrap()
    };
    assert_eq!(attr("y"), TOP + LANE, "{band}");
    let (t0, t1) = window(&journal, &spans(&journal, Duration::from_secs(9), false), &[]);
    let ax = Axis { t0, t1 };
    assert!(
        (attr("x") - ax.x(1_000_000)).abs() < 0.2 && (attr("width") - (ax.x(11_000_000) - ax.x(1_000_000))).abs() < 0.2
    );
    // Without network faults: no band and no legend entry for them.
    src.network = &[];
    let plain = swimlanes(&[failed], &src).remove(0).svg;
    assert!(!plain.contains("net-fault") && !plain.contains("network partition"), "{plain}");
}

#[test]
fn the_reaper_is_a_line_across_the_lanes_and_a_cause() {
    // w5 claims job 3 at 0.5 s and is paused; the reaper fails the job at 9 s; w5's late
    // completion lands at 12 s.
    let journal = [ev(500_000, 3, 5, 1, Claimed), ev(800_000, 3, 5, 1, Executed), ev(12_000_000, 3, 5, 1, Accepted)];
    let reaps = [
        ReapEvent { t_us: 9_000_000, job: 3, action: crate::collect::ReapAction::Failed, dur_us: 1_000 },
        ReapEvent { t_us: 9_000_000, job: 4, action: crate::collect::ReapAction::Failed, dur_us: 1_000 },
    ];
    let failed = CheckResult {
        name: crate::model::check::Check::StaleCompletionsAccepted,
        passed: false,
        violations: 1,
        detail: String::new(),
        examples: vec![3],
    };
    let src = Source {
        journal: &journal,
        faults: &[],
        reaps: &reaps,
        final_jobs: &[],
        lease: Duration::from_secs(3),
        hold_transaction: false,
        clock_us: 0,
        network: &[],
    };
    let lane = swimlanes(&[failed], &src).remove(0);
    assert_eq!(lane.svg.matches("class='reap'").count(), 1, "this job's only: {}", lane.svg);
    assert!(lane.svg.contains("<title>the reaper failed it at t=9.000 s</title>"), "{}", lane.svg);
    assert!(lane.causes.iter().any(|c| c.contains("accepted after the reaper failed it")), "{:?}", lane.causes);
}

#[test]
fn a_long_lease_does_not_flatten_the_race() {
    let journal = [ev(1_000, 1, 1, 1, Claimed), ev(11_000, 1, 1, 1, Accepted)];
    let claims = spans(&journal, Duration::from_secs(30), false);
    let (t0, t1) = window(&journal, &claims, &[]);
    assert!(t0 <= 1_000 - 100 && t1 < 40_000, "{t0}..{t1}");
}

/// Every kind of mark, drawn in one lane set: every journal event kind (two of each write, one
/// answered late), a fault, the reaper and a network fault on the first worker's agent.
fn everything() -> String {
    let mut journal = vec![ev(1_000, 9, 1, 1, Claimed), ev(1_000, 9, 2, 1, Claimed)];
    for (i, kind) in EventKind::ALL.into_iter().enumerate() {
        journal.push(ev(2_000 + 1_000 * i as u64, 9, 1 + (i % 2) as u32, 1, kind));
    }
    journal.push(Event { dur_us: 5_000, ..ev(20_000, 9, 2, 1, Accepted) });
    let faults =
        [FaultEvent { t_us: 3_500, kind: crate::model::fault::FaultKind::ALL[0], worker: Some(1), job: Some(9) }];
    let reaps = [ReapEvent { t_us: 8_000, job: 9, action: crate::collect::ReapAction::Failed, dur_us: 100 }];
    let network =
        [NetworkSpan { kind: "partition".into(), agent: 1, start_us: 4_000, end_us: 9_000, workers: vec![(1, 1)] }];
    let failed = CheckResult {
        name: Check::ExactlyOnce,
        passed: false,
        violations: 1,
        detail: String::new(),
        examples: vec![9],
    };
    let src = Source {
        journal: &journal,
        faults: &faults,
        reaps: &reaps,
        final_jobs: &[],
        lease: Duration::from_millis(10),
        hold_transaction: false,
        clock_us: 0,
        network: &network,
    };
    swimlanes(&[failed], &src).remove(0).svg
}

/// The classes of the marks an SVG draws (`<tag class='…'`), in order of first appearance.
fn drawn(svg: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in svg.split(" class='").skip(1) {
        let class = part.split('\'').next().unwrap().to_string();
        if !out.contains(&class) {
            out.push(class);
        }
    }
    out
}

#[test]
fn the_legend_names_every_kind_of_mark_the_lanes_draw() {
    let svg = everything();
    let classes = drawn(&svg);
    let all: Vec<&str> = Mark::ALL.iter().map(|m| m.class()).collect();
    // Every drawn element is a listed kind of mark, and this drawing has them all.
    for c in &classes {
        assert!(all.contains(&c.as_str()), "`{c}` is drawn but not in Mark::ALL (the legend's list)");
    }
    for m in Mark::ALL {
        assert!(classes.iter().any(|c| c == m.class()), "{m:?} is never drawn here: {classes:?}");
        // Its legend entry: the glyph's words (a network fault's are the faults themselves).
        let words = if m == Mark::Network { ">network partition · agent 1, " } else { m.label() };
        let entry = if m == Mark::Network { words.to_string() } else { format!(">{words}</text>") };
        assert!(svg.contains(&entry), "the legend does not name {m:?} ({entry}): {svg}");
    }
    // Every kind of mark has its own class and its own words.
    let mut labels: Vec<&str> = Mark::ALL.iter().map(|m| m.label()).collect();
    labels.sort_unstable();
    labels.dedup();
    let mut unique = all.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((labels.len(), unique.len()), (Mark::ALL.len(), Mark::ALL.len()));
    // 14 entries do not fit one row of 960 px: the legend wraps, and the picture grows with it.
    let height: f64 = svg.split("height='").nth(1).unwrap().split('\'').next().unwrap().parse().unwrap();
    assert!(height >= TOP + 2.0 * LANE + 18.0 + 2.0 * 16.0, "{height}");
}

#[test]
fn the_legend_names_only_what_was_drawn() {
    let journal = [ev(1_000, 7, 1, 1, Claimed), ev(2_000, 7, 1, 1, Executed), ev(3_000, 7, 1, 1, Accepted)];
    let failed = CheckResult {
        name: Check::ExactlyOnce,
        passed: false,
        violations: 1,
        detail: String::new(),
        examples: vec![7],
    };
    let src = Source {
        journal: &journal,
        faults: &[],
        reaps: &[],
        final_jobs: &[],
        lease: Duration::from_secs(30),
        hold_transaction: false,
        clock_us: 0,
        network: &[],
    };
    let svg = swimlanes(&[failed], &src).remove(0).svg;
    for m in [Mark::RoundTrip, Mark::LeaseWindow, Mark::BelievedOwned, Mark::Work, Mark::Accepted] {
        assert!(svg.contains(&format!(">{}</text>", m.label())), "{m:?}: {svg}");
    }
    for m in [Mark::Fault, Mark::Reaper, Mark::CompleteUnknown, Mark::Network, Mark::Rejected] {
        assert!(!svg.contains(&format!(">{}</text>", m.label())), "{m:?} was not drawn: {svg}");
    }
}
