//! What a plan asks of its workers' transport, each need with the scenario key that asks for
//! it; the refusal of a transport that does not declare a need's capability
//! (`model::transport`). Nothing here is a hand-kept list of what a transport runs: the
//! transport's declaration decides.

use super::plan::Plan;
use crate::adapter::{Accepted, Constant, Param, Role};
use crate::error::Invalid;
use crate::model::protocol::Mode;
use crate::model::transport::{Capability, TransportKind};
use crate::scenario::plan::Wakeup;

/// One capability the plan needs: the key that asks for it and what there asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Need {
    pub capability: Capability,
    pub key: &'static str,
    pub because: String,
}

/// The transport the plan's workers run over.
pub(crate) fn transport(plan: &Plan) -> TransportKind {
    if plan.workers.pool.is_some() { TransportKind::Pool } else { TransportKind::Direct }
}

/// Every capability the plan needs of its transport, in the plan's order.
pub(crate) fn needs(plan: &Plan) -> Vec<Need> {
    let mut out = Vec::new();
    let mut need = |capability, key, because: String| out.push(Need { capability, key, because });
    if plan.workers.mode == Mode::HoldTransaction {
        need(Capability::HoldTransaction, "workers.mode", "mode = \"hold-transaction\"".into());
    }
    if plan.workers.idle.wakeup == Wakeup::Listen {
        need(Capability::Listen, "workers.wakeup", "wakeup = \"listen\"".into());
    }
    for f in &plan.faults {
        if let Some(c) = Capability::for_fault(f.kind.kind()) {
            need(c, "faults", format!("a {} fault", f.kind.name()));
        }
    }
    let a = &plan.adapter;
    if !a.own_table() {
        need(Capability::AdapterQueue, "adapter", format!("the adapter `{}` (a schema of its own)", a.name));
    }
    // The statements a worker sends: its steps and the drained check.
    let steps = a.worker_steps().map(|s| (s.role.name(), &s.statements));
    let remaining = std::iter::once(("observe.remaining", std::slice::from_ref(&a.observe.remaining)));
    for (step, statements) in steps.map(|(n, s)| (n, s.as_slice())).chain(remaining) {
        for p in statements.iter().flat_map(|s| &s.params) {
            let what = match p {
                Param::Const(i) => a.constants.get(usize::from(*i)).map_or("const", |(n, _)| n.as_str()),
                _ => p.name(),
            };
            let capability = match p {
                Param::Now => Capability::TimeValues,
                Param::Payload => Capability::JsonValues,
                Param::Const(i) => match a.constants.get(usize::from(*i)).map(|(_, c)| c) {
                    Some(Constant::Text(_) | Constant::Int(_) | Constant::Float(_) | Constant::Bool(_)) | None => {
                        continue;
                    }
                    Some(_) => Capability::ArrayConstants,
                },
                _ => continue,
            };
            need(capability, "adapter", format!("the {step} step's :{what}"));
        }
    }
    for step in a.worker_steps() {
        let judged = matches!(step.role, Role::Claim | Role::Select) || step.accepted == Accepted::Rows;
        if step.statements.len() != 1 || !judged {
            need(Capability::CompoundSteps, "adapter", format!("the {} step", step.role.name()));
        }
    }
    out
}

/// The first need `kind` does not declare, as a refusal naming the capability; for the key
/// that asks for it.
pub(crate) fn refusal(plan: &Plan, kind: TransportKind) -> Option<(&'static str, Invalid)> {
    let n = needs(plan).into_iter().find(|n| !kind.can(n.capability))?;
    let chosen = kind.key().map_or(String::new(), |k| format!(" ({k})"));
    let fix = match kind.key() {
        Some(k) => format!("; leave {k} out for a connection per worker"),
        None => String::new(),
    };
    let reason = format!(
        "the {} transport{chosen} cannot {} (capability `{}`), which {} needs{fix}",
        kind.name(),
        n.capability.what(),
        n.capability.name(),
        n.because
    );
    Some((n.key, Invalid::new(reason)))
}

#[cfg(test)]
mod tests {
    use super::super::load::{Source, parse_text};
    use super::super::validate::validate;
    use super::*;

    fn plan(text: &str) -> crate::error::Result<Plan> {
        let raw = parse_text(text).unwrap();
        validate(raw, Source { path: "t.toml".into(), text: text.into(), overrides: vec![] }, Some(1))
    }

    const POOL: &str = "[workers]\npool = { size = 2 }\n";

    #[test]
    fn a_plain_burn_down_needs_nothing_and_runs_on_every_transport() {
        let p = plan("name = \"x\"\n[jobs]\npreload = 1\n").unwrap();
        assert_eq!(needs(&p), vec![]);
        for kind in TransportKind::ALL {
            assert!(refusal(&p, kind).is_none(), "{}", kind.name());
        }
    }

    #[test]
    fn the_pool_refuses_what_it_does_not_declare_naming_the_capability_and_the_key() {
        let cases = [
            (
                "[workers]\nmode = \"hold-transaction\"\npool = { size = 2 }\n",
                Capability::HoldTransaction,
                "workers.mode",
            ),
            ("[workers]\nwakeup = \"listen\"\npool = { size = 2 }\n", Capability::Listen, "workers.wakeup"),
            (
                "[[faults]]\nkind = \"kill_backend\"\nat = \"1s\"\n[workers]\npool = { size = 2 }\n",
                Capability::OwnBackend,
                "faults",
            ),
        ];
        for (text, capability, key) in cases {
            let text = format!("name = \"x\"\n[jobs]\npreload = 1\n{text}");
            let e = plan(&text).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(&format!("`{}`", capability.name())), "{e}");
            assert!(e.contains("workers.pool"), "{e}");
            // The same scenario without the pool needs it of the direct transport, which has it.
            let direct = text.replace("pool = { size = 2 }\n", "");
            let p = plan(&direct).unwrap();
            assert!(needs(&p).iter().any(|n| n.capability == capability && n.key == key), "{direct}");
            assert!(refusal(&p, TransportKind::Direct).is_none());
            assert!(refusal(&p, TransportKind::Pool).is_some_and(|(k, _)| k == key));
        }
        let crash = "[[faults]]\nkind = \"crash\"\npoint = \"after_claim\"\nprobability = 0.1\n";
        assert!(plan(&format!("name = \"x\"\n[jobs]\npreload = 1\n{crash}{POOL}")).is_ok(), "crash needs nothing");
    }
}
