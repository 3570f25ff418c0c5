//! An agent's evidence as it travels through the control tables, and back: the journal and
//! the latency samples in their fixed-size binary records (gzipped), the HDR histograms in
//! their V2 form, the counters and faults as JSON. Decoding is exact: the merge adds
//! histograms and concatenates journals, it never re-derives a number.

use super::problem::BadEvidence;
use crate::collect::spill::Record;
use crate::collect::{Event, FaultEvent, FaultKind, Sample, Samples, Second, WorkerStats, history};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The parts an agent uploads, by name.
pub(crate) const PARTS: [&str; 5] = ["journal", "samples", "histograms", "counters", "faults"];

/// What one agent recorded, as the merge needs it.
#[derive(Debug, Default)]
pub(crate) struct AgentEvidence {
    pub journal: Vec<Event>,
    pub stats: WorkerStats,
    pub latency: Samples,
    pub faults: Vec<FaultEvent>,
}

/// The counters of `WorkerStats` (its histograms and samples travel apart).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Counters {
    claims: u64,
    empty_claims: u64,
    claimed_jobs: u64,
    reconnects: u64,
    reconnect_attempts: u64,
    outages: Vec<(u64, u64)>,
    heartbeats: u64,
    drained_checks: u64,
    notifications: u64,
    errors: BTreeMap<String, u64>,
    /// By statement and code, with each one's first message (`WorkerStats::errors_at`).
    #[serde(default)]
    errors_at: BTreeMap<String, u64>,
    #[serde(default)]
    first_errors: BTreeMap<String, String>,
    #[serde(default)]
    exclusion_keys: Vec<(i64, String)>,
    /// claims, empty claims, drained checks, executions, completions per second.
    per_second: Vec<[u32; 5]>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Fault {
    t_us: u64,
    kind: String,
    worker: Option<u32>,
    job: Option<i64>,
}

fn records<T: Record>(items: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + items.len() * T::SIZE);
    out.extend_from_slice(&(items.len() as u64).to_le_bytes());
    for item in items {
        item.encode(&mut out);
    }
    out
}

/// Reads a list written by `records` from the front of `bytes`, and moves past it.
fn read_records<T: Record>(bytes: &mut &[u8], part: &'static str) -> Result<Vec<T>, BadEvidence> {
    let cut = BadEvidence::CutShort { part };
    let n = bytes.get(..8).ok_or(cut.clone())?;
    let n = u64::from_le_bytes(n.try_into().expect("8 bytes")) as usize;
    let len = n.checked_mul(T::SIZE).filter(|l| *l + 8 <= bytes.len()).ok_or(cut)?;
    let items = bytes[8..8 + len].chunks_exact(T::SIZE).map(T::decode).collect();
    *bytes = &bytes[8 + len..];
    Ok(items)
}

/// A part's bytes unpacked, within the limit of a run's history (`files::Kind::History`).
fn gunzip(gz: &[u8], part: &'static str) -> Result<Vec<u8>, BadEvidence> {
    crate::files::gunzip(gz, std::path::Path::new(part), crate::files::Kind::History).map_err(|e| match e {
        crate::error::Error::Input { reason, .. } => BadEvidence::NotGzip { part, cause: reason },
        other => BadEvidence::NotGzip { part, cause: other.to_string() },
    })
}

fn histograms(s: &WorkerStats) -> [&Histogram<u64>; 5] {
    [&s.claim_latency, &s.claim_tx_latency, &s.work_latency, &s.complete_latency, &s.acquire_latency]
}

/// The parts of one agent's evidence, by name (`PARTS`).
pub(crate) fn encode(
    journal: &[Event],
    stats: &mut WorkerStats,
    faults: &[FaultEvent],
) -> Vec<(&'static str, Vec<u8>)> {
    let mut samples = Samples::default();
    stats.take_samples(&mut samples);
    let mut lists = Vec::new();
    for list in [&samples.claim, &samples.tx, &samples.work, &samples.complete] {
        lists.extend(records(list));
    }
    let mut hist = Vec::new();
    for h in histograms(stats) {
        let mut one = Vec::new();
        V2Serializer::new().serialize(h, &mut one).expect("a histogram serialises into memory");
        hist.extend_from_slice(&(one.len() as u64).to_le_bytes());
        hist.extend(one);
    }
    let counters = Counters {
        claims: stats.claims,
        empty_claims: stats.empty_claims,
        claimed_jobs: stats.claimed_jobs,
        reconnects: stats.reconnects,
        reconnect_attempts: stats.reconnect_attempts,
        outages: stats.outages.clone(),
        heartbeats: stats.heartbeats,
        drained_checks: stats.drained_checks,
        notifications: stats.notifications,
        errors: stats.errors.clone(),
        errors_at: stats.errors_at.clone(),
        first_errors: stats.first_errors.clone(),
        exclusion_keys: stats.exclusion_keys.clone(),
        per_second: stats
            .per_second
            .iter()
            .map(|s| [s.claims, s.empty_claims, s.drained_checks, s.executions, s.completions])
            .collect(),
    };
    let faults: Vec<Fault> =
        faults.iter().map(|f| Fault { t_us: f.t_us, kind: f.kind.to_string(), worker: f.worker, job: f.job }).collect();
    vec![
        ("journal", history::gzip(&records(journal))),
        ("samples", history::gzip(&lists)),
        ("histograms", hist),
        ("counters", serde_json::to_vec(&counters).expect("counters serialise")),
        ("faults", serde_json::to_vec(&faults).expect("faults serialise")),
    ]
}

/// One agent's evidence from its parts (`part` returns a part's bytes by name).
pub(crate) fn decode(part: impl Fn(&str) -> Vec<u8>) -> Result<AgentEvidence, BadEvidence> {
    let journal_bytes = gunzip(&part("journal"), "journal")?;
    let journal = read_records::<Event>(&mut journal_bytes.as_slice(), "journal")?;
    let sample_bytes = gunzip(&part("samples"), "samples")?;
    let mut rest = sample_bytes.as_slice();
    let mut lists = Vec::new();
    for _ in 0..4 {
        lists.push(read_records::<Sample>(&mut rest, "samples")?);
    }
    let [claim, tx, work, complete]: [Vec<Sample>; 4] = lists.try_into().expect("four lists");
    let mut stats = counters(&part("counters"))?;
    let hist = part("histograms");
    let mut rest = hist.as_slice();
    for h in [
        &mut stats.claim_latency,
        &mut stats.claim_tx_latency,
        &mut stats.work_latency,
        &mut stats.complete_latency,
        &mut stats.acquire_latency,
    ] {
        let len = rest.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize);
        let one = len.and_then(|l| rest.get(8..8 + l)).ok_or(BadEvidence::CutShort { part: "histograms" })?;
        let unreadable = |cause: String| BadEvidence::Unreadable { part: "histograms", cause };
        let got: Histogram<u64> =
            Deserializer::new().deserialize(&mut &one[..]).map_err(|e| unreadable(format!("{e:?}")))?;
        h.add(&got).map_err(|e| unreadable(format!("{e:?}")))?;
        rest = &rest[8 + one.len()..];
    }
    let faults: Vec<Fault> = serde_json::from_slice(&part("faults"))
        .map_err(|e| BadEvidence::Unreadable { part: "faults", cause: e.to_string() })?;
    let faults = faults.into_iter().map(fault).collect::<Result<_, _>>()?;
    Ok(AgentEvidence { journal, stats, latency: Samples { claim, tx, work, complete }, faults })
}

fn counters(bytes: &[u8]) -> Result<WorkerStats, BadEvidence> {
    let c: Counters = serde_json::from_slice(bytes)
        .map_err(|e| BadEvidence::Unreadable { part: "counters", cause: e.to_string() })?;
    Ok(WorkerStats {
        claims: c.claims,
        empty_claims: c.empty_claims,
        claimed_jobs: c.claimed_jobs,
        reconnects: c.reconnects,
        reconnect_attempts: c.reconnect_attempts,
        outages: c.outages,
        heartbeats: c.heartbeats,
        drained_checks: c.drained_checks,
        notifications: c.notifications,
        errors: c.errors,
        errors_at: c.errors_at,
        first_errors: c.first_errors,
        exclusion_keys: c.exclusion_keys,
        per_second: c
            .per_second
            .into_iter()
            .map(|[claims, empty_claims, drained_checks, executions, completions]| Second {
                claims,
                empty_claims,
                drained_checks,
                executions,
                completions,
            })
            .collect(),
        ..WorkerStats::default()
    })
}

/// A fault event's kind is one of the names a history may hold.
fn fault(f: Fault) -> Result<FaultEvent, BadEvidence> {
    let kind = FaultKind::parse(&f.kind).ok_or_else(|| BadEvidence::UnknownFault(f.kind.clone()))?;
    Ok(FaultEvent { t_us: f.t_us, kind, worker: f.worker, job: f.job })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::{EventKind, Latency};

    #[test]
    fn evidence_comes_back_exactly() {
        let mut stats = WorkerStats::default();
        for (t, v) in [(1_000u64, 250u64), (2_000_000, 9_000), (3_500_000, 1)] {
            stats.record(Latency::Claim, t, v);
            stats.record(Latency::Work, t, v * 2);
            stats.second(t).claims += 1;
        }
        stats.claims = 3;
        stats.record_error("40001", "could not serialize access");
        stats.outages.push((5, 9));
        let journal: Vec<Event> = (0..1000)
            .map(|i| Event {
                t_us: i * 10,
                job: i as i64 / 3,
                attempt: 1,
                worker: 7,
                claim: i as u32,
                kind: EventKind::ALL[i as usize % 9],
                dur_us: 5,
                token: i,
            })
            .collect();
        let faults = vec![FaultEvent { t_us: 77, kind: FaultKind::Crash, worker: Some(7), job: Some(3) }];
        let (claim_h, work_h) = (stats.claim_latency.clone(), stats.work_latency.clone());
        let parts = encode(&journal, &mut stats, &faults);
        let back = decode(|name| parts.iter().find(|(n, _)| *n == name).unwrap().1.clone()).unwrap();
        assert_eq!(back.journal, journal);
        assert_eq!(back.faults, faults);
        assert_eq!(back.stats.claim_latency, claim_h);
        assert_eq!(back.stats.work_latency, work_h);
        let want: Vec<Sample> = [(1, 250), (2000, 9000), (3500, 1)].map(|(at_ms, us)| Sample { at_ms, us }).to_vec();
        assert_eq!(back.latency.claim, want);
        assert_eq!((back.stats.claims, back.stats.outages.clone()), (3, vec![(5, 9)]));
        assert_eq!(back.stats.errors.get("40001"), Some(&1));
        assert_eq!(back.stats.per_second.len(), 4);
    }

    #[test]
    fn cut_or_foreign_evidence_is_an_error_not_a_panic() {
        let parts = encode(&[], &mut WorkerStats::default(), &[]);
        let get = |name: &str| parts.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert!(decode(|n| if n == "journal" { b"junk".to_vec() } else { get(n) }).is_err());
        assert!(decode(|n| if n == "histograms" { vec![9, 0, 0, 0, 0, 0, 0, 0, 1] } else { get(n) }).is_err());
        let bad_fault = br#"[{"t_us":1,"kind":"meteor","worker":null,"job":null}]"#.to_vec();
        assert!(
            decode(|n| if n == "faults" { bad_fault.clone() } else { get(n) }).unwrap_err()
                == super::BadEvidence::UnknownFault("meteor".into())
        );
    }
}
