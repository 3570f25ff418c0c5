//! Adapter files (`docs/adapters.md`): a shipped one by name (compiled in from `adapters/`),
//! or a path relative to the scenario that names it; parsed with the same help as scenario
//! files (line and column, "did you mean"), checked, and resolved into an [`Adapter`]. Every
//! error names the adapter file, the line and the key.

use super::raw::{RawAdapter, RawStep};
use super::{
    Accepted, Adapter, Columns, Constant, Observe, Origin, Role, Statement, Step, builtin, statement, statement_at,
};
use crate::error::{Error, Invalid, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The adapters queuebench ships, by name.
pub(crate) const SHIPPED: &[(&str, &str)] = &[
    ("good_job", include_str!("../../adapters/good_job.toml")),
    ("graphile-worker", include_str!("../../adapters/graphile-worker.toml")),
    ("oban", include_str!("../../adapters/oban.toml")),
    ("pg-boss", include_str!("../../adapters/pg-boss.toml")),
    ("pgmq", include_str!("../../adapters/pgmq.toml")),
    ("pgqueuer", include_str!("../../adapters/pgqueuer.toml")),
    ("procrastinate", include_str!("../../adapters/procrastinate.toml")),
    ("que", include_str!("../../adapters/que.toml")),
    ("river", include_str!("../../adapters/river.toml")),
    ("solid_queue", include_str!("../../adapters/solid_queue.toml")),
];

/// The adapter a scenario names: a shipped name, else a file relative to `base` (the
/// scenario's folder). `lease_parser` reads the adapter's `lease` as scenario durations are read.
pub(crate) fn load(
    spec: &str,
    base: &Path,
    lease_parser: impl Fn(&str) -> std::result::Result<Duration, Invalid>,
) -> Result<Adapter> {
    let (path, text) = match SHIPPED.iter().find(|(name, _)| *name == spec) {
        Some((name, text)) => (PathBuf::from(format!("adapters/{name}.toml")), text.to_string()),
        None => {
            let path = base.join(spec);
            let text = crate::files::read_text(&path, crate::files::Kind::Scenario).map_err(|e| Error::ScenarioFile {
                file: path.clone(),
                sets: Vec::new(),
                reason: format!(
                    "cannot read the adapter: {e}; `adapter` is a shipped name ({}) or a file relative to the scenario",
                    SHIPPED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            })?;
            (path, text)
        }
    };
    let raw: RawAdapter = toml::from_str(&text).map_err(|e| Error::ScenarioFile {
        file: path.clone(),
        sets: Vec::new(),
        reason: crate::error::toml_error(&e, &text, "docs/adapters.md lists every key"),
    })?;
    let at = |key: &str, e: Invalid| {
        let key = match &e.key {
            Some(sub) => format!("{key}.{sub}"),
            None => key.to_string(),
        };
        Error::Scenario {
            file: path.clone(),
            line: crate::error::find_key_line(&text, &key),
            key,
            via_set: None,
            reason: e.reason,
        }
    };
    resolve(raw, &path, &lease_parser, &at)
}

fn resolve(
    raw: RawAdapter,
    path: &Path,
    lease_parser: &impl Fn(&str) -> std::result::Result<Duration, Invalid>,
    at: &impl Fn(&str, Invalid) -> Error,
) -> Result<Adapter> {
    if raw.name.trim().is_empty() {
        return Err(at("name", Invalid::new("must name the queue")));
    }
    let table_ok = !raw.table.is_empty()
        && raw.table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !raw.table.starts_with(|c: char| c.is_ascii_digit());
    if !table_ok {
        return Err(at(
            "table",
            Invalid::new("a table name of letters, digits and _ (it is named in VACUUM and LOCK)"),
        ));
    }
    let constants = constants(&raw, lease_parser).map_err(|e| at("constants", e))?;
    let default_lease = raw.lease.as_deref().map(lease_parser).transpose().map_err(|e| at("lease", e))?;
    if raw.lease_fixed && default_lease.is_none() {
        return Err(at(
            "lease_fixed",
            Invalid::new("declares the adapter's `lease` the queue's only one, but the adapter has no `lease = \"…\"`"),
        ));
    }
    let drive = super::drive::Drive::resolve(raw.drive.as_ref(), lease_parser).map_err(|e| at("drive", e))?;
    if raw.result.successor.is_some() && raw.fail.is_none() {
        return Err(at(
            "result.successor",
            Invalid::new("names the column the fail step returns the job's new id in, but the adapter has no fail"),
        ));
    }
    let unique_rule = raw.drive.as_ref().is_some_and(|d| d.unique_states.is_some() || d.unique_period.is_some());
    if unique_rule && raw.result.unique_key.is_none() {
        return Err(at(
            "drive",
            Invalid::new(
                "unique_states and unique_period describe a deduplicating enqueue, but the adapter has no \
                 [result] unique_key (the column its enqueue returns the key in)",
            ),
        ));
    }
    let has_select = raw.select.is_some();
    let step = |role: Role, key: &str, raw: &RawStep| -> Result<Step> {
        build_step(role, raw, has_select, &constants).map_err(|e| at(key, e))
    };
    let optional = |role: Role, key: &str, raw: &Option<RawStep>| raw.as_ref().map(|r| step(role, key, r)).transpose();
    let claim = step(Role::Claim, "claim", &raw.claim)?;
    if has_select && !claim.statements.iter().any(|s| s.params.contains(&super::Param::Ids)) {
        return Err(at("claim", Invalid::new("the adapter has a select step, so its claim must use :ids")));
    }
    let observe_stmt = |key: &str, text: &str| -> Result<Statement> {
        statement(Role::Observe, text, "", false, &constants, false).map_err(|e| at(key, Invalid::new(e.to_string())))
    };
    let observe = Observe {
        state: observe_stmt("observe.state", &raw.observe.state)?,
        remaining: observe_stmt("observe.remaining", &raw.observe.remaining)?,
        depth: raw.observe.depth.as_deref().map(|d| observe_stmt("observe.depth", d)).transpose()?,
    };
    Ok(Adapter {
        origin: Origin::File(path.to_path_buf()),
        description: raw.description.trim().to_string(),
        design: raw.design,
        locks_rows: true,
        fence: String::new(),
        table: raw.table,
        default_lease,
        lease_fixed: raw.lease_fixed,
        setup: Some(raw.setup),
        on_connect: raw.on_connect,
        columns: Columns {
            id: raw.result.id,
            attempt: raw.result.attempt,
            token: raw.result.token,
            class: raw.result.class,
            successor: raw.result.successor,
            exclusion_key: raw.result.exclusion_key,
            unique_key: raw.result.unique_key,
        },
        select: optional(Role::Select, "select", &raw.select)?,
        complete: step(Role::Complete, "complete", &raw.complete)?,
        fail: optional(Role::Fail, "fail", &raw.fail)?,
        heartbeat: optional(Role::Heartbeat, "heartbeat", &raw.heartbeat)?,
        reclaim: optional(Role::Reclaim, "reclaim", &raw.reclaim)?,
        cancel: optional(Role::Cancel, "cancel", &raw.cancel)?,
        enqueue: step(Role::Enqueue, "enqueue", &raw.enqueue)?,
        preload: optional(Role::Preload, "preload", &raw.preload)?,
        claim,
        observe,
        constants,
        drive,
        name: raw.name,
    })
}

const CONSTANT_KINDS: &str = "a constant is a string, an integer, a float, a boolean, an array of one of these \
     (all of one type), or a duration: { duration = \"10s\" }";

/// One `[constants]` value (`duration` reads `{ duration = "…" }`).
fn constant(
    v: &toml::Value,
    duration: &impl Fn(&str) -> std::result::Result<Duration, Invalid>,
) -> std::result::Result<Constant, Invalid> {
    use toml::Value as V;
    Ok(match v {
        V::String(s) => Constant::Text(s.clone()),
        V::Integer(i) => Constant::Int(*i),
        V::Float(f) => Constant::Float(*f),
        V::Boolean(b) => Constant::Bool(*b),
        V::Array(items) => {
            let all = |f: fn(&V) -> bool| items.iter().all(f);
            if items.is_empty() {
                return Err(Invalid::new("an empty array has no type; give it at least one element"));
            } else if all(V::is_str) {
                Constant::TextArray(items.iter().filter_map(|i| i.as_str().map(String::from)).collect())
            } else if all(V::is_integer) {
                Constant::IntArray(items.iter().filter_map(V::as_integer).collect())
            } else if all(|i| i.is_float() || i.is_integer()) {
                Constant::FloatArray(
                    items.iter().filter_map(|i| i.as_float().or(i.as_integer().map(|n| n as f64))).collect(),
                )
            } else if all(V::is_bool) {
                Constant::BoolArray(items.iter().filter_map(V::as_bool).collect())
            } else {
                return Err(Invalid::new(format!(
                    "an array's elements are all strings, all numbers or all booleans; {CONSTANT_KINDS}"
                )));
            }
        }
        V::Table(t) if t.len() == 1 && t.get("duration").is_some_and(V::is_str) => {
            let text = t["duration"].as_str().unwrap_or_default();
            Constant::Duration(duration(text).map_err(|e| Invalid::new(format!("duration: {}", e.reason)))?)
        }
        V::Table(t) => {
            let keys: Vec<&str> = t.keys().map(String::as_str).collect();
            return Err(Invalid::new(format!(
                "a table with {}; accepted: {{ duration = \"10s\" }} ({CONSTANT_KINDS})",
                keys.join(", ")
            )));
        }
        _ => return Err(Invalid::new(CONSTANT_KINDS)),
    })
}

/// `[constants]`: TOML strings, numbers, booleans, arrays of one of these, durations; no
/// built-in parameter's name.
fn constants(
    raw: &RawAdapter,
    duration: &impl Fn(&str) -> std::result::Result<Duration, Invalid>,
) -> std::result::Result<Vec<(String, Constant)>, Invalid> {
    let mut out = Vec::new();
    for (name, v) in &raw.constants {
        let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(Invalid::at(name.clone(), "a constant's name is letters, digits and _"));
        }
        if super::params::ALL.iter().any(|p| p.name() == name) {
            return Err(Invalid::at(name.clone(), format!("`:{name}` is a built-in parameter; pick another name")));
        }
        out.push((name.clone(), constant(v, duration).map_err(|e| Invalid::at(name.clone(), e.reason))?));
    }
    Ok(out)
}

/// One step: its statements translated, its acceptance rule read and checked.
fn build_step(
    role: Role,
    raw: &RawStep,
    has_select: bool,
    constants: &[(String, Constant)],
) -> std::result::Result<Step, Invalid> {
    let (texts, rule) = raw.parts();
    if texts.is_empty() || texts.iter().any(|t| t.trim().trim_end_matches(';').trim().is_empty()) {
        return Err(Invalid::new("a statement is empty"));
    }
    let accepted = match rule {
        None => Accepted::Rows,
        Some(r) => Accepted::parse(r)
            .ok_or_else(|| Invalid::at("accepted", format!("`{r}`; accepted: rows, true, positive")))?,
    };
    let statements = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            statement_at(role, t, "", has_select, constants, false, i > 0).map_err(|e| Invalid::new(e.to_string()))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let step = Step { role, statements, accepted };
    if accepted == Accepted::Rows && matches!(role, Role::Complete | Role::Fail | Role::Heartbeat | Role::Cancel) {
        builtin::rows_rule_fits(role.name(), step.first())?;
    }
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(s: &str) -> std::result::Result<Duration, Invalid> {
        crate::scenario::units::parse_duration(s).map_err(|e| Invalid::new(e.to_string()))
    }

    #[test]
    fn every_shipped_adapter_resolves() {
        for (name, _) in SHIPPED {
            let a = load(name, Path::new("."), lease).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(a.name, *name);
            assert!(a.setup.as_deref().is_some_and(|s| !s.trim().is_empty()), "{name} has setup SQL");
            assert!(!a.design.is_empty(), "{name} names the design it follows");
        }
    }

    /// The intervals a statement writes as literals (`interval '30 seconds'`), as durations.
    fn interval_literals(text: &str) -> Vec<Duration> {
        text.split("interval '")
            .skip(1)
            .filter_map(|rest| {
                let (n, unit) = rest.split('\'').next()?.split_once(' ')?;
                let unit = match unit.trim_end_matches('s') {
                    "second" => "s",
                    "minute" => "m",
                    "hour" => "h",
                    "day" => "d",
                    _ => return None,
                };
                lease(&format!("{n}{unit}")).ok()
            })
            .collect()
    }

    #[test]
    fn no_shipped_adapter_writes_its_own_lease_where_the_scenarios_is_meant() {
        for (name, _) in SHIPPED {
            let a = load(name, Path::new("."), lease).unwrap();
            let Some(own) = a.default_lease.filter(|_| !a.lease_fixed) else { continue };
            for st in a.statements() {
                assert!(
                    !interval_literals(&st.text).contains(&own),
                    "{name}: the {} statement writes its lease ({own:?}) as a literal; bind :lease_secs:\n{}",
                    st.role.name(),
                    st.text
                );
            }
        }
        assert_eq!(interval_literals("x < now() - interval '4 hours' OR interval '1 second'").len(), 2);
    }

    #[test]
    fn a_select_shaped_complete_must_declare_its_rule() {
        let dir = tempfile::tempdir().unwrap();
        let text = |complete: &str| {
            format!(
                "name = \"x\"\ntable = \"q\"\nsetup = \"CREATE TABLE q (id bigint)\"\nenqueue = \"INSERT INTO q VALUES (:n)\"\n\
                 claim = \"SELECT id FROM q LIMIT :batch\"\ncomplete = {complete}\n\
                 [result]\nid = \"id\"\n[observe]\nstate = \"SELECT id, 'done' AS status FROM q\"\n\
                 remaining = \"SELECT false\"\n"
            )
        };
        let file = dir.path().join("a.toml");
        std::fs::write(&file, text("\"WITH r AS (DELETE FROM q WHERE id = :id RETURNING 1) SELECT count(*) FROM r\""))
            .unwrap();
        let e = load("a.toml", dir.path(), lease).unwrap_err().to_string();
        assert!(e.contains("a.toml:6: complete") && e.contains("accepted = \"positive\""), "{e}");
        std::fs::write(
            &file,
            text("{ sql = \"WITH r AS (DELETE FROM q WHERE id = :id RETURNING 1) SELECT count(*) FROM r\", accepted = \"positive\" }"),
        )
        .unwrap();
        let a = load("a.toml", dir.path(), lease).unwrap();
        assert_eq!(a.complete.accepted, Accepted::Positive);
        assert_eq!(
            a.complete.first().sql,
            "WITH r AS (DELETE FROM q WHERE id = $1 RETURNING 1) SELECT count(*) FROM r"
        );
    }

    #[test]
    fn unknown_keys_and_parameters_name_the_adapter_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.toml"), "name = \"x\"\ntabel = \"q\"\n").unwrap();
        let e = load("b.toml", dir.path(), lease).unwrap_err().to_string();
        assert!(e.contains("b.toml") && e.contains("did you mean `table`?"), "{e}");
        let e = load("missing.toml", dir.path(), lease).unwrap_err().to_string();
        assert!(e.contains("cannot read the adapter") && e.contains("river"), "{e}");
    }
}
