//! A schedule as a string, and back: the steps a counterexample took, one word each, so the
//! answer can print it and `--replay SCHEDULE` can play it again and judge it the same way.
//!
//! `A:claim A:commit tick R:reclaim R:commit B:claim B:commit A:complete A:commit`: a step that
//! starts one of the protocol's steps is `SESSION:STEP` (`select`, `claim`, `heartbeat`,
//! `complete`, `fail`, `reclaim`, `cancel`, `enqueue`), the step's next statement
//! `SESSION:next`, its commit `SESSION:commit`, a crash `SESSION:crash`, the clock `tick`.
//! Inside a statement (`explore::pause`): a statement sent with a pause inside is its word and
//! `+pause` (`A:claim+pause`, `A:next+pause`), the paused statement running on `SESSION:resume`;
//! a completion's COMMIT whose answer is lost `SESSION:ack-lost` (`--acks-lost`).

use crate::error::{Error, Result};
use crate::explore::protocol::{Op, StepKind};

const KINDS: [(StepKind, &str); 8] = [
    (StepKind::Select, "select"),
    (StepKind::Claim, "claim"),
    (StepKind::Heartbeat, "heartbeat"),
    (StepKind::Complete, "complete"),
    (StepKind::Fail, "fail"),
    (StepKind::Reclaim, "reclaim"),
    (StepKind::Cancel, "cancel"),
    (StepKind::Enqueue, "enqueue"),
];

/// What a statement's word ends with when it is sent with a pause inside.
const PAUSE: &str = "+pause";

/// A protocol step's word.
pub(crate) fn kind_word(kind: StepKind) -> &'static str {
    KINDS.iter().find(|(k, _)| *k == kind).map_or("?", |(_, w)| w)
}

/// One step's word, by the actors' names (`names[a]`).
pub(crate) fn word(op: Op, names: &[String]) -> String {
    let name = |a: usize| names.get(a).map_or("?", String::as_str);
    match op {
        Op::Start(a, kind) => format!("{}:{}", name(a), kind_word(kind)),
        Op::Next(a) => format!("{}:next", name(a)),
        Op::Commit(a) => format!("{}:commit", name(a)),
        Op::Crash(a) => format!("{}:crash", name(a)),
        Op::Tick => "tick".into(),
        Op::Paused(a, Some(kind)) => format!("{}:{}{PAUSE}", name(a), kind_word(kind)),
        Op::Paused(a, None) => format!("{}:next{PAUSE}", name(a)),
        Op::Resume(a) => format!("{}:resume", name(a)),
        Op::AckLost(a) => format!("{}:ack-lost", name(a)),
    }
}

/// A schedule's string: its steps' words, separated by spaces.
pub(crate) fn render(ops: &[Op], names: &[String]) -> String {
    ops.iter().map(|op| word(*op, names)).collect::<Vec<_>>().join(" ")
}

/// A schedule's string read back, by the actors' names; a word that names no session or no
/// step is refused, naming it and what is accepted.
pub(crate) fn parse(text: &str, names: &[String]) -> Result<Vec<Op>> {
    let refuse = |word: &str, why: String| Error::Flag {
        flag: "--replay".into(),
        reason: format!(
            "`{word}`: {why}; a step is `tick` or SESSION:STEP, SESSION one of {} and STEP one of next, commit, \
             crash, resume, ack-lost, {} (a statement's STEP, or next, with `{PAUSE}`: sent with a pause inside)",
            names.join(", "),
            KINDS.iter().map(|(_, w)| *w).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut ops = Vec::new();
    for w in text.split_whitespace() {
        if w == "tick" {
            ops.push(Op::Tick);
            continue;
        }
        let Some((who, what)) = w.split_once(':') else { return Err(refuse(w, "no SESSION:STEP".into())) };
        let Some(a) = names.iter().position(|n| n == who) else {
            return Err(refuse(w, format!("no session named {who} in this search")));
        };
        let (what, paused) = match what.strip_suffix(PAUSE) {
            Some(plain) => (plain, true),
            None => (what, false),
        };
        let op = match (what, paused) {
            ("next", false) => Op::Next(a),
            ("next", true) => Op::Paused(a, None),
            ("commit", false) => Op::Commit(a),
            ("crash", false) => Op::Crash(a),
            ("resume", false) => Op::Resume(a),
            ("ack-lost", false) => Op::AckLost(a),
            ("commit" | "crash" | "resume" | "ack-lost", true) => {
                return Err(refuse(w, format!("{what} sends no statement to pause inside")));
            }
            _ => match KINDS.iter().find(|(_, k)| *k == what) {
                Some((kind, _)) if paused => Op::Paused(a, Some(*kind)),
                Some((kind, _)) => Op::Start(a, *kind),
                None => return Err(refuse(w, format!("no step named {what}"))),
            },
        };
        ops.push(op);
    }
    if ops.is_empty() {
        return Err(Error::Flag { flag: "--replay".into(), reason: "the schedule has no step".into() });
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::{parse, render};
    use crate::explore::protocol::{Op, StepKind};

    fn names() -> Vec<String> {
        ["A", "B", "R"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_schedule_reads_back_as_the_same_steps() {
        let ops = vec![
            Op::Start(0, StepKind::Claim),
            Op::Next(0),
            Op::Commit(0),
            Op::Tick,
            Op::Start(2, StepKind::Reclaim),
            Op::Crash(1),
            Op::Start(1, StepKind::Complete),
        ];
        let text = render(&ops, &names());
        assert_eq!(text, "A:claim A:next A:commit tick R:reclaim B:crash B:complete");
        assert_eq!(parse(&text, &names()).unwrap(), ops);
    }

    #[test]
    fn pauses_resumes_and_lost_answers_read_back_as_the_same_steps() {
        let ops = vec![
            Op::Paused(0, Some(StepKind::Claim)),
            Op::Start(1, StepKind::Claim),
            Op::Resume(0),
            Op::Paused(1, None),
            Op::Resume(1),
            Op::Start(1, StepKind::Complete),
            Op::AckLost(1),
        ];
        let text = render(&ops, &names());
        assert_eq!(text, "A:claim+pause B:claim A:resume B:next+pause B:resume B:complete B:ack-lost");
        assert_eq!(parse(&text, &names()).unwrap(), ops);
    }

    #[test]
    fn a_word_that_names_no_session_or_step_is_refused() {
        let e = parse("A:claim C:commit", &names()).unwrap_err().to_string();
        assert!(e.contains("`C:commit`") && e.contains("no session named C"), "{e}");
        let e = parse("A:grab", &names()).unwrap_err().to_string();
        assert!(e.contains("no step named grab"), "{e}");
        let e = parse("A:commit+pause", &names()).unwrap_err().to_string();
        assert!(e.contains("commit sends no statement to pause inside"), "{e}");
        let e = parse("A:grab+pause", &names()).unwrap_err().to_string();
        assert!(e.contains("no step named grab"), "{e}");
        assert!(parse("  ", &names()).is_err());
        assert!(parse("claim", &names()).is_err());
    }
}
