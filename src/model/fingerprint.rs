//! What makes two runs comparable: the same scenario content, the same way of running it,
//! on the same kind of machine and server. Every summary.json records it (`fingerprint`);
//! `queuebench compare` refuses summaries whose fingerprints differ (exit 2, unless
//! `--force`), and `run --baseline` warns when the baseline was made on another kind of
//! machine. Summaries from before the fingerprint have none: the check says it cannot tell.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The server settings that change throughput and latency enough to make runs incomparable.
pub(crate) const SETTINGS: &[&str] = &["fsync", "synchronous_commit", "shared_buffers", "max_connections"];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fingerprint {
    /// A hash of the scenario as run: the file with its `--set` overrides, without what does not
    /// change the load (`description`, `seed`, `[expect]`, `[baseline]`), keys in a fixed order.
    pub scenario_hash: String,
    pub strategy: String,
    /// The adapter file, empty for a built-in strategy.
    pub adapter: String,
    pub workers: u32,
    pub batch: u32,
    pub mode: String,
    pub work: String,
    /// `ephemeral`, `url` or `docker`.
    pub target: String,
    /// `TLS` when the run's connections were encrypted, empty (and left out) otherwise: a TLS run
    /// and a plain one are not compared (each handshake and record costs; docs/production-postgres.md).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tls: String,
    /// The pooler the workers went through (`pgbouncer transaction`, `external session`), empty
    /// (and left out) without one: a pooled run and a direct one are not compared.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pooler: String,
    pub server_version: String,
    pub cores: u64,
    /// Rounded to whole GiB.
    pub memory_gib: u64,
    /// [`SETTINGS`] as the server reported them (`SHOW`).
    pub settings: BTreeMap<String, String>,
}

/// One field whose value differs between two fingerprints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// The field (`workers`, `settings.fsync`).
    pub field: String,
    pub old: String,
    pub new: String,
    /// A difference of machine or server (cores, memory, server version, settings, target)
    /// rather than of the run itself.
    pub machine: bool,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |v: &str| if v.is_empty() { "(none)".to_string() } else { v.to_string() };
        write!(f, "{}: {} → {}", self.field, shown(&self.old), shown(&self.new))
    }
}

impl Fingerprint {
    /// The fields that differ from `new`, in a fixed order: the run's, then the machine's.
    pub fn differences(&self, new: &Fingerprint) -> Vec<Difference> {
        let (o, n) = (self.fields(), new.fields());
        let mut out: Vec<Difference> = o
            .iter()
            .zip(&n)
            .filter(|(a, b)| a.1 != b.1)
            .map(|(a, b)| Difference { field: a.0.to_string(), old: a.1.clone(), new: b.1.clone(), machine: a.2 })
            .collect();
        let names: std::collections::BTreeSet<&String> = self.settings.keys().chain(new.settings.keys()).collect();
        for name in names {
            let (a, b) = (self.settings.get(name), new.settings.get(name));
            if a != b {
                out.push(Difference {
                    field: format!("settings.{name}"),
                    old: a.cloned().unwrap_or_default(),
                    new: b.cloned().unwrap_or_default(),
                    machine: true,
                });
            }
        }
        out
    }

    /// (name, value, is a machine field), settings apart.
    fn fields(&self) -> Vec<(&'static str, String, bool)> {
        vec![
            ("scenario_hash", self.scenario_hash.clone(), false),
            ("strategy", self.strategy.clone(), false),
            ("adapter", self.adapter.clone(), false),
            ("workers", self.workers.to_string(), false),
            ("batch", self.batch.to_string(), false),
            ("mode", self.mode.clone(), false),
            ("work", self.work.clone(), false),
            ("target", self.target.clone(), true),
            ("tls", self.tls.clone(), true),
            ("pooler", self.pooler.clone(), true),
            ("server_version", self.server_version.clone(), true),
            ("cores", self.cores.to_string(), true),
            ("memory_gib", self.memory_gib.to_string(), true),
        ]
    }
}

/// The names the two sides of a comparison go by in its messages ("baseline main", "this run").
#[derive(Debug, Clone, Copy)]
pub(crate) struct Labels<'a> {
    pub(crate) old: &'a str,
    pub(crate) new: &'a str,
}

/// What the fingerprints of two sets of runs say about comparing them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub(crate) enum Check {
    Same,
    /// A side has no fingerprint (a summary from before it): nothing can be said.
    Unknown {
        side: String,
    },
    Differ {
        differences: Vec<Difference>,
    },
}

impl Check {
    /// `old` and `new`: each side's fingerprint (its first run's), None for an older summary.
    pub(crate) fn of(old: Option<&Fingerprint>, new: Option<&Fingerprint>, labels: Labels<'_>) -> Check {
        match (old, new) {
            (Some(o), Some(n)) => match o.differences(n) {
                d if d.is_empty() => Check::Same,
                differences => Check::Differ { differences },
            },
            (None, _) => Check::Unknown { side: labels.old.to_string() },
            (_, None) => Check::Unknown { side: labels.new.to_string() },
        }
    }

    pub(crate) fn differences(&self) -> &[Difference] {
        match self {
            Check::Differ { differences } => differences,
            _ => &[],
        }
    }

    /// Lines to print above a comparison table (none when the fingerprints agree).
    pub(crate) fn lines(&self) -> Vec<String> {
        match self {
            Check::Same => Vec::new(),
            Check::Unknown { side } => vec![format!(
                "warning: {side} has no fingerprint (a summary from before queuebench recorded one): \
                 cannot check that the runs are comparable"
            )],
            Check::Differ { differences } => {
                let machine = differences.iter().all(|d| d.machine);
                let what = if machine { "a different kind of machine or server" } else { "different runs" };
                let mut out = vec![format!("warning: not comparable: {what} ({} differences)", differences.len())];
                out.extend(differences.iter().map(|d| format!("  {d}")));
                out.extend(majors_differ(differences));
                out
            }
        }
    }
}

/// `the runs ran on different PostgreSQL majors: 14 → 16 …` when the server versions' majors differ.
fn majors_differ(differences: &[Difference]) -> Option<String> {
    let d = differences.iter().find(|d| d.field == "server_version")?;
    let (old, new) = (super::pg_version::major_of(&d.old)?, super::pg_version::major_of(&d.new)?);
    (old != new).then(|| {
        format!(
            "  the runs ran on different PostgreSQL majors: {old} → {new} (a difference in throughput or latency \
             may be the server's, not the queue's)"
        )
    })
}

/// FNV-1a, 64 bits, as 16 hex digits: stable across builds and platforms (std's hasher is not
/// promised to be), enough to tell two scenario texts apart.
pub(crate) fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(workers: u32, cores: u64, fsync: &str) -> Fingerprint {
        Fingerprint {
            scenario_hash: hash("x"),
            strategy: "skip-locked".into(),
            workers,
            cores,
            memory_gib: 24,
            settings: [("fsync".to_string(), fsync.to_string())].into(),
            ..Fingerprint::default()
        }
    }

    #[test]
    fn different_majors_are_said_in_words() {
        let (mut a, mut b) = (print(8, 2, "on"), print(8, 2, "on"));
        a.server_version = "14.23".into();
        b.server_version = "16.13".into();
        let lines = Check::of(Some(&a), Some(&b), Labels { old: "o", new: "n" }).lines();
        assert!(lines.iter().any(|l| l.contains("different PostgreSQL majors: 14 → 16")), "{lines:?}");
        b.server_version = "14.22".into();
        let lines = Check::of(Some(&a), Some(&b), Labels { old: "o", new: "n" }).lines();
        assert!(!lines.iter().any(|l| l.contains("majors")), "{lines:?}");
    }

    #[test]
    fn differences_name_each_field_and_whether_it_is_the_machine() {
        assert!(print(8, 2, "on").differences(&print(8, 2, "on")).is_empty());
        let d = print(8, 2, "on").differences(&print(16, 4, "off"));
        let shown: Vec<String> = d.iter().map(|d| format!("{d} {}", d.machine)).collect();
        assert_eq!(shown, ["workers: 8 → 16 false", "cores: 2 → 4 true", "settings.fsync: on → off true"]);
        let mut missing = print(8, 2, "on");
        missing.settings.clear();
        assert_eq!(print(8, 2, "on").differences(&missing)[0].to_string(), "settings.fsync: on → (none)");
    }

    #[test]
    fn a_tls_run_and_a_plain_one_differ_and_a_plain_one_matches_an_older_fingerprint() {
        let tls = Fingerprint { tls: "TLS".into(), ..print(8, 2, "on") };
        assert_eq!(print(8, 2, "on").differences(&tls)[0].to_string(), "tls: (none) → TLS");
        // A plain run serializes without the field: older summaries read back the same.
        let plain = serde_json::to_value(print(8, 2, "on")).unwrap();
        assert!(plain.get("tls").is_none());
        let back: Fingerprint = serde_json::from_value(plain).unwrap();
        assert!(back.differences(&print(8, 2, "on")).is_empty());
    }

    #[test]
    fn the_check_says_same_unknown_or_what_differs() {
        let (a, b) = (print(8, 2, "on"), print(8, 4, "on"));
        assert_eq!(Check::of(Some(&a), Some(&a), Labels { old: "old", new: "new" }), Check::Same);
        assert!(Check::of(Some(&a), Some(&a), Labels { old: "old", new: "new" }).lines().is_empty());
        assert_eq!(Check::of(None, Some(&a), Labels { old: "old", new: "new" }), Check::Unknown { side: "old".into() });
        assert!(
            Check::of(Some(&a), None, Labels { old: "o", new: "new" }).lines()[0].contains("new has no fingerprint")
        );
        let lines = Check::of(Some(&a), Some(&b), Labels { old: "o", new: "n" }).lines();
        assert_eq!(
            lines,
            ["warning: not comparable: a different kind of machine or server (1 differences)", "  cores: 2 → 4"]
        );
    }

    #[test]
    fn the_hash_is_fnv1a() {
        assert_eq!(hash(""), "cbf29ce484222325");
        assert_eq!(hash("a"), "af63dc4c8601ec8c");
        assert_ne!(hash("workers = 8"), hash("workers = 16"));
    }
}
