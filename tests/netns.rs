//! Agents in network namespaces (`--spawn-agents N --netns`, docs/agents.md) and the network
//! faults between them and PostgreSQL, with real namespaces, veth pairs and a real partition
//! (the agent's link down). They need root and iproute2; elsewhere each test checks the clear
//! refusal instead and says so. The tests here run one at a time (they share the machine's
//! interface list) and each checks that no namespace of its run is left.

use crate::common;

use common::{queuebench, repo};
use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Root and iproute2, which namespaces need; without them, `common::missing` says which is not
/// there (and fails the test under `QUEUEBENCH_STRICT=1`).
fn root_with_ip() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        common::missing("root", "network namespaces need root: checked the refusal of --netns only");
        return false;
    }
    if std::process::Command::new("ip").arg("-V").output().is_err() {
        common::missing("iproute2", "no `ip` program: checked the refusal of --netns only");
        return false;
    }
    true
}

/// queuebench's namespaces on this machine (`qb<pid>n<k>`).
fn our_namespaces() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/run/netns") else { return Vec::new() };
    let mut names: Vec<String> = dir
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("qb") && n.contains('n'))
        .collect();
    names.sort();
    names
}

/// Without root: the refusal names what is missing (exit 2). Returns true when the real
/// test can run.
fn can_run(file: &str) -> bool {
    if root_with_ip() {
        return true;
    }
    let run = queuebench(&["run", file, "--spawn-agents", "2", "--netns", "--quiet"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--netns") && run.stderr.contains("root"), "{}", run.stderr);
    false
}

fn scenario(dir: &Path, body: &str) -> String {
    let path = dir.join("netns.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"netns\"\nseed = 11\n[jobs]\npreload = 3000\n[workers]\ncount = 6\nstrategy = \"skip-locked\"\n\
             work = \"1ms\"\n[lease]\nduration = \"30s\"\nfencing = \"token\"\nreclaim = \"reaper\"\n[run]\n\
             stop = \"drained\"\ntimeout = \"120s\"\n{body}"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

fn by_kind(s: &Value, kind: &str) -> u64 {
    s["faults"]["by_kind"][kind].as_u64().unwrap_or(0)
}

#[test]
fn agents_in_namespaces_run_exactly_once_through_their_own_interfaces() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "");
    if !can_run(&file) {
        return;
    }
    let before = our_namespaces();
    let run = queuebench(&["run", &file, "--spawn-agents", "3", "--netns", "--quiet"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    let agents = s["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 3);
    let mut addresses = Vec::new();
    for (k, a) in agents.iter().enumerate() {
        assert_eq!(a["state"], "finished", "{a}");
        let name = a["name"].as_str().unwrap();
        // Agent k joined as number k, from its own host's address.
        let (who, at) = name.split_once('@').unwrap_or_else(|| panic!("no address in {name}"));
        assert_eq!(who, format!("spawned-{}", k + 1));
        assert!(at.starts_with("10.213."), "{name}");
        addresses.push(at.to_string());
        assert!(a["jobs"].as_u64().unwrap() > 0, "agent {} ran no job: {a}", k + 1);
    }
    addresses.dedup();
    assert_eq!(addresses.len(), 3, "one address per agent: {addresses:?}");
    let jobs: u64 = agents.iter().map(|a| a["jobs"].as_u64().unwrap()).sum();
    assert_eq!((jobs, s["executions"]["total"].as_u64().unwrap()), (3000, 3000));
    assert_eq!(run.check("exactly_once"), 0);
    assert_eq!(run.check("effects_ledger_agrees"), 0);
    assert_eq!(our_namespaces(), before, "the run's namespaces are gone");
}

#[test]
fn a_partition_expires_live_leases_and_the_token_fence_rejects_every_late_completion() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let token = repo("scenarios/agents/partition-fencing-token.toml").to_string_lossy().into_owned();
    if !can_run(&token) {
        return;
    }
    let before = our_namespaces();
    let run = queuebench(&["run", &token, "--spawn-agents", "2", "--netns", "--quiet"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    assert_eq!(by_kind(&s, "partition"), 1, "{}", s["faults"]);
    // Agent 2's four workers executed and sent their completions inside their leases; the
    // leases ran out while the completions hung in the cut, agent 1 re-ran the jobs, and
    // every late completion was turned away.
    let ex = &s["executions"];
    assert_eq!((ex["duplicate_lease_expired"].as_u64(), ex["duplicate_race"].as_u64()), (Some(4), Some(0)));
    let c = &s["completions"];
    assert_eq!((c["stale_rejected"].as_u64(), c["stale_accepted"].as_u64()), (Some(4), Some(0)), "{c}");
    assert_eq!(s["jobs"]["completed"], 8);
    let agents = s["agents"].as_array().unwrap();
    assert_eq!((agents[0]["jobs"].as_u64(), agents[1]["jobs"].as_u64()), (Some(8), Some(4)), "{agents:?}");
    assert_eq!(our_namespaces(), before);
}

#[test]
fn under_the_status_fence_the_late_completions_land() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let status = repo("scenarios/agents/partition-fencing-status.toml").to_string_lossy().into_owned();
    if !can_run(&status) {
        return;
    }
    let run = queuebench(&["run", &status, "--spawn-agents", "2", "--netns", "--quiet"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    assert_eq!(s["completions"]["stale_accepted"], 4, "{}", s["completions"]);
    assert_eq!(run.check("stale_completions_accepted"), 4);
    // The partition, as it happened, in the evidence: agent 2 (workers 5–8 and the identities
    // its respawned workers take), from about 1 s for about 10 s.
    let evidence: Value = serde_json::from_slice(&std::fs::read(run.out.join("evidence.json")).unwrap()).unwrap();
    let spans = evidence["network"].as_array().unwrap();
    assert_eq!(spans.len(), 1, "{spans:?}");
    let p = &spans[0];
    assert_eq!((p["kind"].as_str(), p["agent"].as_u64()), (Some("partition"), Some(2)), "{p}");
    assert_eq!(p["workers"][0], serde_json::json!([5, 8]), "{p}");
    let (from, to) = (p["start_us"].as_u64().unwrap(), p["end_us"].as_u64().unwrap());
    assert!((900_000..3_000_000).contains(&from) && (9_500_000..13_000_000).contains(&(to - from)), "{p}");
    // The report's swimlanes draw it as a band on agent 2's workers' lanes, never agent 1's,
    // with its legend entry; `queuebench report` draws it again from the run folder.
    let bands = |html: &str| -> Vec<String> {
        let titles = html.split("class='net-fault'").skip(1);
        titles.map(|b| b.split("</title>").next().unwrap().to_string()).collect()
    };
    let html = std::fs::read_to_string(run.out.join("report.html")).unwrap();
    let drawn = bands(&html);
    assert!(!drawn.is_empty(), "no partition band in the swimlanes");
    assert!(drawn.iter().all(|b| b.contains("network partition of agent 2")), "{drawn:?}");
    assert!(html.contains(">network partition · agent 2, "), "the band's legend entry");
    // Every band sits on a lane of worker 5–8: the band's y is one of those lanes' y.
    for lane in html.split("<h3>job ").skip(1) {
        let svg = lane.split("</svg>").next().unwrap();
        let lane_y = |w: u32| -> Option<String> {
            let at = svg.find(&format!(">w{w}</text>"))?;
            let before = &svg[..at];
            let rect = before.rfind("<rect x='56' y='")?;
            Some(before[rect + 16..].split('\'').next()?.to_string())
        };
        let agent2: Vec<String> = (5..=8).filter_map(lane_y).collect();
        for band in svg.split("class='net-fault' ").skip(1) {
            let y = band.split("y='").nth(1).unwrap().split('\'').next().unwrap();
            let y = format!("{}", y.parse::<f64>().unwrap());
            assert!(
                agent2.iter().any(|l| format!("{}", l.parse::<f64>().unwrap()) == y),
                "band at y={y}, agent 2's lanes {agent2:?}"
            );
        }
    }
    std::fs::remove_file(run.out.join("report.html")).unwrap();
    let rebuilt = queuebench(&["report", run.out.to_str().unwrap()]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    assert_eq!(bands(&std::fs::read_to_string(run.out.join("report.html")).unwrap()), drawn);
}

#[test]
fn latency_holds_every_byte_of_one_agent_and_loss_needs_netem() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let slow = "[[faults]]\nkind = \"latency\"\nagents = [1]\nat = \"0s\"\nduration = \"10m\"\ndelay = \"20ms\"\n\
                jitter = \"5ms\"\n";
    let file = scenario(dir.path(), slow);
    if !can_run(&file) {
        return;
    }
    let run = queuebench(&["run", &file, "--spawn-agents", "2", "--netns", "--quiet", "--set", "jobs.preload=400"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    assert_eq!(by_kind(&s, "latency"), 1);
    let agents = s["agents"].as_array().unwrap();
    // A claim's round trip crosses the path twice: never under 2 × (20 − 5) ms on agent 1.
    let slow_p99 = agents[0]["claim_p99_ms"].as_f64().unwrap();
    assert!(slow_p99 >= 30.0, "agent 1's claim p99 {slow_p99} ms under 20 ± 5 ms each way");
    assert_eq!(run.check("exactly_once"), 0);

    // Loss: a kernel without the netem qdisc is refused before the run starts (exit 3, naming
    // it); with netem the run goes on.
    let lossy = scenario(dir.path(), "[[faults]]\nkind = \"loss\"\nat = \"1s\"\nduration = \"1s\"\npercent = 5\n");
    let run = queuebench(&["run", &lossy, "--spawn-agents", "2", "--netns", "--quiet", "--set", "jobs.preload=400"]);
    match run.code {
        3 => {
            assert!(run.stderr.contains("netem"), "{}", run.stderr);
            common::missing("netem", "this kernel has no netem qdisc: checked the refusal of kind = \"loss\" only");
        }
        0 => assert_eq!(by_kind(&run.summary(), "loss"), 2, "both agents"),
        other => panic!("exit {other}: {}", run.stderr),
    }
}

#[test]
fn network_faults_without_namespaces_or_naming_a_missing_agent_are_refused() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let token = repo("scenarios/agents/partition-fencing-token.toml").to_string_lossy().into_owned();
    for extra in [&[][..], &["--spawn-agents", "2"][..]] {
        let mut args = vec!["run", token.as_str(), "--quiet"];
        args.extend_from_slice(extra);
        let run = queuebench(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("--spawn-agents N --netns") && run.stderr.contains("faults[0]"), "{}", run.stderr);
    }
    if !root_with_ip() {
        return;
    }
    let before = our_namespaces();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "[[faults]]\nkind = \"partition\"\nagents = [3]\nat = \"1s\"\nduration = \"1s\"\n");
    let run = queuebench(&["run", &file, "--quiet", "--spawn-agents", "2", "--netns"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("names agent 3, but the run has 2"), "{}", run.stderr);
    assert_eq!(our_namespaces(), before, "a refused run leaves no namespace");
}
