//! The run's history, kept (`history.csv.gz` in the run folder; columns documented in
//! `schema/history.schema.json`): every claim (with its round trip, attempt and token),
//! execution (with its work time), completion, failure and heartbeat (with its round trip
//! and outcome), abandon, enqueue, injected fault and job the reaper took back, one row each,
//! by time. Gzipped CSV, so
//! pandas (`read_csv(…, compression="gzip")`) and DuckDB (`read_csv('history.csv.gz')`) read
//! it as it is; `queuebench check` and `explain` read it back (`read`), exactly: the rows
//! carry every field the checkers use.
//!
//! The final table state the checkers read goes beside it (`final_state.csv.gz`).

use super::{Arrival, Event, EventKind, FaultEvent, FaultKind, ReapAction, ReapEvent};
use crate::files::Kind;
use crate::model::records::{JobRow, Status};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use std::io::{Read, Write};

/// The history's columns, in order (schema/history.schema.json describes each).
pub(crate) const COLUMNS: [&str; 10] =
    ["t_us", "event", "worker", "job", "attempt", "claim", "dur_us", "token", "class", "detail"];

/// A history or final-state file that is not what queuebench writes: which row, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{reason}", row.map(|r| format!("row {r}: ")).unwrap_or_default())]
pub(crate) struct Unreadable {
    /// The file's line (the header is line 1); None for the file as a whole.
    pub row: Option<usize>,
    pub reason: String,
}

impl Unreadable {
    fn file(reason: impl Into<String>) -> Unreadable {
        Unreadable { row: None, reason: reason.into() }
    }
}

impl From<String> for Unreadable {
    fn from(reason: String) -> Unreadable {
        Unreadable::file(reason)
    }
}

impl From<&str> for Unreadable {
    fn from(reason: &str) -> Unreadable {
        Unreadable::file(reason)
    }
}

/// What a history holds.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct History {
    pub journal: Vec<Event>,
    pub arrivals: Vec<Arrival>,
    pub faults: Vec<FaultEvent>,
    /// The jobs the reaper's reclaims returned, by time.
    pub reaps: Vec<ReapEvent>,
}

/// What a history is written from (`write`).
pub(crate) struct Rows<'a> {
    pub journal: &'a [Event],
    pub arrivals: &'a [Arrival],
    pub faults: &'a [FaultEvent],
    pub reaps: &'a [ReapEvent],
}

/// The history as gzipped CSV, rows by time. `classes`: the class names, "default" first
/// (an arrival's class is an index into them).
pub(crate) fn write(h: Rows<'_>, classes: &[String]) -> Vec<u8> {
    enum Row<'a> {
        E(&'a Event),
        A(&'a Arrival),
        F(&'a FaultEvent),
        R(&'a ReapEvent),
    }
    let t = |r: &Row| match r {
        Row::E(e) => e.t_us,
        Row::A(a) => a.sent_us,
        Row::F(f) => f.t_us,
        Row::R(r) => r.t_us,
    };
    let mut rows: Vec<Row> = h.journal.iter().map(Row::E).chain(h.arrivals.iter().map(Row::A)).collect();
    rows.extend(h.faults.iter().map(Row::F));
    rows.extend(h.reaps.iter().map(Row::R));
    rows.sort_by_key(t);
    let mut w = csv::Writer::from_writer(GzEncoder::new(Vec::new(), Compression::fast()));
    let _ = w.write_record(COLUMNS);
    let empty = String::new;
    for r in &rows {
        let record: [String; 10] = match r {
            Row::E(e) => [
                e.t_us.to_string(),
                e.kind.name().into(),
                e.worker.to_string(),
                e.job.to_string(),
                e.attempt.to_string(),
                e.claim.to_string(),
                e.dur_us.to_string(),
                if e.token == 0 { empty() } else { format!("{:016x}", e.token) },
                empty(),
                empty(),
            ],
            Row::A(a) => [
                a.sent_us.to_string(),
                "enqueue".into(),
                empty(),
                a.job.to_string(),
                empty(),
                empty(),
                a.enqueue_us.to_string(),
                empty(),
                classes.get(a.class as usize).cloned().unwrap_or_else(|| a.class.to_string()),
                format!("intended_us={}", a.intended_us),
            ],
            Row::F(f) => [
                f.t_us.to_string(),
                "fault".into(),
                f.worker.map(|w| w.to_string()).unwrap_or_default(),
                f.job.map(|j| j.to_string()).unwrap_or_default(),
                empty(),
                empty(),
                empty(),
                empty(),
                empty(),
                f.kind.name().into(),
            ],
            Row::R(r) => [
                r.t_us.to_string(),
                "reap".into(),
                empty(),
                r.job.to_string(),
                empty(),
                empty(),
                r.dur_us.to_string(),
                empty(),
                empty(),
                r.action.name().into(),
            ],
        };
        let _ = w.write_record(&record);
    }
    let encoder = w.into_inner().map_err(|e| e.into_error()).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

/// Unpacks a history or final state, refused past the limit of [`Kind::History`] (a doctored
/// run folder can hold a gzip bomb).
fn gunzip(gz: &[u8]) -> Result<Vec<u8>, Unreadable> {
    let limit = Kind::History.limit();
    let mut text = Vec::new();
    GzDecoder::new(gz)
        .take(limit + 1)
        .read_to_end(&mut text)
        .map_err(|e| Unreadable::file(format!("not gzip: {e}")))?;
    if text.len() as u64 > limit {
        return Err(Unreadable::file(format!(
            "unpacks to more than queuebench reads for a run's history ({}; docs/safety.md)",
            crate::files::size(limit)
        )));
    }
    Ok(text)
}

/// Reads a history back (`write`'s bytes); an error says which row.
pub(crate) fn read(gz: &[u8], classes: &[String]) -> Result<History, Unreadable> {
    let text = gunzip(gz)?;
    let mut r = csv::Reader::from_reader(text.as_slice());
    let header: Vec<String> =
        r.headers().map_err(|e| Unreadable::file(e.to_string()))?.iter().map(String::from).collect();
    if header != COLUMNS {
        return Err(Unreadable::file(format!("unexpected columns {header:?}; expected {COLUMNS:?}")));
    }
    let mut h = History::default();
    for (i, rec) in r.records().enumerate() {
        let at = |reason: String| Unreadable { row: Some(i + 2), reason };
        let rec = rec.map_err(|e| at(e.to_string()))?;
        row(&rec, classes, &mut h).map_err(|e| at(e.reason))?;
    }
    // The checkers read the journal by job, then time, then kind.
    h.journal.sort_unstable_by_key(Event::order);
    Ok(h)
}

fn row(rec: &csv::StringRecord, classes: &[String], h: &mut History) -> Result<(), Unreadable> {
    let field = |i: usize| rec.get(i).unwrap_or("");
    fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, Unreadable> {
        s.parse().map_err(|_| Unreadable::file(format!("{what} `{s}` is not a number")))
    }
    let opt = |s: &str, what: &str| -> Result<Option<i64>, Unreadable> {
        if s.is_empty() { Ok(None) } else { num(s, what).map(Some) }
    };
    let t_us: u64 = num(field(0), "t_us")?;
    match field(1) {
        "enqueue" => {
            let intended = field(9).strip_prefix("intended_us=").ok_or("enqueue without intended_us")?;
            let class = classes.iter().position(|c| c == field(8)).unwrap_or(0) as u16;
            h.arrivals.push(Arrival {
                job: num(field(3), "job")?,
                class,
                intended_us: num(intended, "intended_us")?,
                sent_us: t_us,
                enqueue_us: num(field(6), "dur_us")?,
            });
        }
        "fault" => {
            let kind = FaultKind::parse(field(9)).ok_or_else(|| format!("unknown fault `{}`", field(9)))?;
            let worker = opt(field(2), "worker")?.map(|w| w as u32);
            h.faults.push(FaultEvent { t_us, kind, worker, job: opt(field(3), "job")? });
        }
        "reap" => {
            let action = ReapAction::parse(field(9)).ok_or_else(|| format!("unknown reap `{}`", field(9)))?;
            h.reaps.push(ReapEvent { t_us, job: num(field(3), "job")?, action, dur_us: num(field(6), "dur_us")? });
        }
        name => {
            let kind = EventKind::from_name(name).ok_or_else(|| format!("unknown event `{name}`"))?;
            let token =
                if field(7).is_empty() { 0 } else { u64::from_str_radix(field(7), 16).map_err(|e| e.to_string())? };
            h.journal.push(Event {
                t_us,
                job: num(field(3), "job")?,
                attempt: num(field(4), "attempt")?,
                worker: num(field(2), "worker")?,
                claim: num(field(5), "claim")?,
                kind,
                dur_us: num(field(6), "dur_us")?,
                token,
            });
        }
    }
    Ok(())
}

/// The final table state (`final_state.csv.gz`): one row per job the table still held,
/// with the queue's own id when it is not the journal's number.
pub(crate) fn write_final_state(jobs: &[JobRow], key: impl Fn(i64) -> Option<String>) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(GzEncoder::new(Vec::new(), Compression::fast()));
    let _ = w.write_record(["job", "status", "attempts", "max_attempts", "lease_expired", "key"]);
    for j in jobs {
        let max = if j.max_attempts == i32::MAX { String::new() } else { j.max_attempts.to_string() };
        let _ = w.write_record([
            j.id.to_string(),
            j.status.name().into(),
            j.attempts.to_string(),
            max,
            j.lease_expired.to_string(),
            key(j.id).unwrap_or_default(),
        ]);
    }
    let encoder = w.into_inner().map_err(|e| e.into_error()).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

pub(crate) fn read_final_state(gz: &[u8]) -> Result<Vec<JobRow>, Unreadable> {
    let text = gunzip(gz)?;
    let mut r = csv::Reader::from_reader(text.as_slice());
    let mut out = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| format!("row {}: {e}", i + 2))?;
        let f = |k: usize| rec.get(k).unwrap_or("");
        let bad = |what: &str| format!("row {}: {what} `{}`", i + 2, rec.iter().collect::<Vec<_>>().join(","));
        out.push(JobRow {
            id: f(0).parse().map_err(|_| bad("job"))?,
            status: Status::parse_known(f(1)).ok_or_else(|| bad("status"))?,
            attempts: f(2).parse().map_err(|_| bad("attempts"))?,
            max_attempts: if f(3).is_empty() { i32::MAX } else { f(3).parse().map_err(|_| bad("max_attempts"))? },
            lease_expired: f(4) == "true",
        });
    }
    Ok(out)
}

/// Writes `bytes` through a gzip encoder (for callers that stream).
pub(crate) fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    let _ = e.write_all(bytes);
    e.finish().expect("writing to memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_history_reads_back_exactly() {
        let classes = vec!["default".to_string(), "high".to_string()];
        let mut journal: Vec<Event> = EventKind::ALL
            .iter()
            .enumerate()
            .map(|(i, &kind)| Event {
                t_us: 10 + i as u64,
                job: 7,
                attempt: 2,
                worker: 3,
                claim: 4,
                kind,
                dur_us: i as u32,
                token: if i % 2 == 0 { 0 } else { 0xdead_beef_0000_0001 },
            })
            .collect();
        journal.sort_unstable_by_key(Event::order);
        let arrivals = vec![Arrival { job: 7, class: 1, intended_us: 5, sent_us: 6, enqueue_us: 900 }];
        let faults = vec![
            FaultEvent { t_us: 12, kind: FaultKind::Crash, worker: Some(3), job: Some(7) },
            FaultEvent { t_us: 13, kind: FaultKind::PostgresRestart, worker: None, job: None },
        ];
        let reaps = vec![
            ReapEvent { t_us: 14, job: 7, action: ReapAction::Failed, dur_us: 300 },
            ReapEvent { t_us: 15, job: 8, action: ReapAction::Requeued, dur_us: 0 },
            ReapEvent { t_us: 16, job: 9, action: ReapAction::Reclaimed, dur_us: 1 },
        ];
        let gz = write(Rows { journal: &journal, arrivals: &arrivals, faults: &faults, reaps: &reaps }, &classes);
        let back = read(&gz, &classes).unwrap();
        assert_eq!(back, History { journal, arrivals, faults, reaps });
        let rows = [
            JobRow { id: 7, status: Status::Done, attempts: 2, max_attempts: 5, lease_expired: false },
            JobRow { id: 8, status: Status::Running, attempts: 1, max_attempts: i32::MAX, lease_expired: true },
        ];
        let state = write_final_state(&rows, |id| (id == 8).then(|| "uuid-8".into()));
        assert_eq!(read_final_state(&state).unwrap(), rows);
    }

    #[test]
    fn a_broken_history_names_the_row() {
        let gz = gzip(b"t_us,event,worker,job,attempt,claim,dur_us,token,class,detail\n1,claim,1,x,1,1,0,,,\n");
        let e = read(&gz, &[]).unwrap_err();
        assert_eq!(e.row, Some(2));
        let text = e.to_string();
        assert!(text.contains("row 2") && text.contains("job `x`"), "{text}");
    }
}
