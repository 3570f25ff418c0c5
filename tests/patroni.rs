//! The HA manager users run (docs/production-postgres.md, "A cluster of your own"): Patroni 3.0
//! with etcd 3.4, from Debian's packages, manages two PostgreSQL nodes on this machine; a run
//! goes through a multi-host URL with `target_session_attrs=read-write` while `patronictl
//! switchover` moves the leader to the other node. Everything (etcd, both Patroni agents, their
//! servers, the folder) is the test's own and is torn down at the end, also when it fails.
//!
//! Needs `patroni` and `etcd-server` installed (`.ci/run` installs them) and root (Patroni runs
//! PostgreSQL as the `postgres` user). The servers listen on 127.0.0.1 only and let in only a
//! password made for this test (scram-sha-256), never trust.

use crate::common;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port on 127.0.0.1 (the listener is closed at once; the test's processes bind it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn installed(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// etcd, two Patroni agents and the folder; dropped: every process stopped, the folder removed.
struct Ha {
    dir: tempfile::TempDir,
    etcd: Child,
    nodes: Vec<Child>,
    ports: Vec<(u16, u16)>,
    password: String,
}

impl Drop for Ha {
    fn drop(&mut self) {
        // SIGTERM: Patroni stops its PostgreSQL (fast shutdown) and exits.
        for n in &mut self.nodes {
            common::pg::signal(n, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for n in &mut self.nodes {
            while n.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = n.kill();
            let _ = n.wait();
        }
        // A server Patroni could not stop in time: stop it by its own pid file.
        for k in 1..=2 {
            let pid = std::fs::read_to_string(self.dir.path().join(format!("node{k}/postmaster.pid")));
            if let Some(pid) = pid.ok().and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<i32>().ok())) {
                // SAFETY: kill(2) on a pid read from this test's own server's pid file.
                unsafe { libc::kill(pid, libc::SIGQUIT) };
            }
        }
        let _ = self.etcd.kill();
        let _ = self.etcd.wait();
    }
}

impl Ha {
    fn config(&self, k: usize) -> PathBuf {
        self.dir.path().join(format!("node{k}.yml"))
    }

    fn url(&self) -> String {
        let hosts: Vec<String> = self.ports.iter().map(|(pg, _)| format!("127.0.0.1:{pg}")).collect();
        format!("postgres://postgres:{}@{}/postgres?target_session_attrs=read-write", self.password, hosts.join(","))
    }

    /// The node whose REST API answers `/leader` with 200 (1 or 2), if any.
    fn leader(&self) -> Option<usize> {
        (1..=2).find(|&k| http_status(self.ports[k - 1].1, "/leader") == Some(200))
    }

    fn patronictl(&self, args: &[&str]) -> std::process::Output {
        Command::new("patronictl").arg("-c").arg(self.config(1)).args(args).output().unwrap()
    }
}

/// The status code of `GET path` on 127.0.0.1:port, by hand (no HTTP client among the crates).
fn http_status(port: u16, path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head).ok()?;
    String::from_utf8_lossy(&head[..n]).split_whitespace().nth(1)?.parse().ok()
}

impl Ha {
    /// What the processes themselves saw, for a wait that ran out: `patronictl list`, then the
    /// end of each Patroni agent's log (its PostgreSQL's output included) and of etcd's.
    fn what_they_saw(&self) -> String {
        let list = self.patronictl(&["list"]);
        let mut seen = format!(
            "patronictl list:\n{}{}",
            String::from_utf8_lossy(&list.stdout),
            String::from_utf8_lossy(&list.stderr)
        );
        for name in ["patroni1.log", "patroni2.log", "etcd.log"] {
            let tail = common::log_tail(&self.dir.path().join(name), 30);
            seen.push_str(&format!("\n--- {name} (last 30 lines):\n{tail}\n"));
        }
        seen
    }
}

/// Polls `ok` until it holds; past `limit` (generous: a loaded machine is slow, which is no
/// failure) the test fails with what the processes saw.
fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool, ha: &Ha) {
    let start = Instant::now();
    while !ok() {
        if start.elapsed() > limit {
            panic!("{what}: not within {} s\n{}", limit.as_secs(), ha.what_they_saw());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn node_yaml(dir: &Path, k: usize, ports: &[(u16, u16)], etcd: u16, password: &str) -> String {
    let (pg, api) = ports[k - 1];
    let d = dir.display();
    format!(
        "scope: queuebench-test\nname: node{k}\n\
         restapi:\n  listen: 127.0.0.1:{api}\n  connect_address: 127.0.0.1:{api}\n\
         etcd3:\n  hosts: 127.0.0.1:{etcd}\n\
         bootstrap:\n  dcs:\n    ttl: 10\n    loop_wait: 1\n    retry_timeout: 4\n    maximum_lag_on_failover: 1048576\n\
         \x20   postgresql:\n      use_pg_rewind: false\n\
         \x20 initdb:\n  - encoding: UTF8\n  - auth: scram-sha-256\n\
         postgresql:\n  listen: 127.0.0.1:{pg}\n  connect_address: 127.0.0.1:{pg}\n  data_dir: {d}/node{k}\n\
         \x20 bin_dir: /usr/lib/postgresql/15/bin\n  pgpass: {d}/pgpass{k}\n\
         \x20 authentication:\n    superuser:\n      username: postgres\n      password: {password}\n\
         \x20   replication:\n      username: postgres\n      password: {password}\n\
         \x20 parameters:\n    unix_socket_directories: {d}/sock{k}\n    password_encryption: scram-sha-256\n\
         \x20 pg_hba:\n  - local all all trust\n  - host all all 127.0.0.1/32 scram-sha-256\n\
         \x20 - host replication all 127.0.0.1/32 scram-sha-256\n"
    )
}

/// etcd and two Patroni nodes, with a leader and a streaming replica.
fn start() -> Ha {
    assert!(
        installed("patroni") && installed("etcd"),
        "this test needs Patroni and etcd: apt-get install patroni etcd-server (.ci/run installs them)"
    );
    let dir = tempfile::Builder::new().prefix("qb-patroni").tempdir_in("/tmp").unwrap();
    Command::new("chown").args(["postgres:postgres"]).arg(dir.path()).status().unwrap();
    let password = format!("qb{:016x}", rand::random::<u64>());
    let (etcd_port, peer) = (free_port(), free_port());
    let etcd_log = std::fs::File::create(dir.path().join("etcd.log")).unwrap();
    let etcd = Command::new("etcd")
        .args(["--name", "qb", "--data-dir"])
        .arg(dir.path().join("etcd"))
        .arg(format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"))
        .arg(format!("--advertise-client-urls=http://127.0.0.1:{etcd_port}"))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
        .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"))
        .arg(format!("--initial-cluster=qb=http://127.0.0.1:{peer}"))
        .current_dir(dir.path())
        .stdout(etcd_log.try_clone().unwrap())
        .stderr(etcd_log)
        .spawn()
        .unwrap();
    let ports = vec![(free_port(), free_port()), (free_port(), free_port())];
    let mut ha = Ha { dir, etcd, nodes: Vec::new(), ports, password };
    wait_for("etcd answers /health", Duration::from_secs(120), || http_status(etcd_port, "/health") == Some(200), &ha);
    for k in 1..=2 {
        std::fs::create_dir_all(ha.dir.path().join(format!("sock{k}"))).unwrap();
        std::fs::write(ha.config(k), node_yaml(ha.dir.path(), k, &ha.ports, etcd_port, &ha.password)).unwrap();
    }
    Command::new("chown").args(["-R", "postgres:postgres"]).arg(ha.dir.path()).status().unwrap();
    for k in 1..=2 {
        let log = std::fs::File::create(ha.dir.path().join(format!("patroni{k}.log"))).unwrap();
        // As postgres, in the test's own folder (postgres owns it): never in the checkout,
        // which may sit in a folder only root may enter (bootstrap then stopped at "could
        // not change directory").
        let node = common::as_postgres("patroni")
            .arg(ha.config(k))
            .current_dir(ha.dir.path())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        ha.nodes.push(node);
        if k == 1 {
            // The first node bootstraps the cluster; the second then clones it.
            wait_for("node1 leads", Duration::from_secs(180), || ha.leader() == Some(1), &ha);
        }
    }
    let replica = ha.ports[1].1;
    wait_for(
        "node2 streams from node1",
        Duration::from_secs(180),
        || http_status(replica, "/replica") == Some(200),
        &ha,
    );
    ha
}

#[test]
fn a_run_through_a_patroni_switchover_runs_every_job_once() {
    let ha = start();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("ha.toml");
    // A burn-down: 4 workers, 2 ms jobs, a lease the reaper enforces, long enough for the
    // switchover to land mid-run. A job whose completion was cut off by the old leader's
    // shutdown runs again after its lease (at-least-once, as after any lost connection): the
    // scenario allows that, never a racing claim and never a lost job.
    std::fs::write(
        &scenario,
        "name = \"patroni-switchover\"\nseed = 7\n[jobs]\npreload = 3000\n[workers]\ncount = 4\nwork = \"2ms\"\n\
         [lease]\nduration = \"5s\"\nfencing = \"token\"\nreclaim = \"reaper\"\n\
         [run]\nstop = \"drained\"\ntimeout = \"120s\"\nreconnect_timeout = \"60s\"\n\
         [expect]\n\"checks.exactly_once\" = \">= 0\"\n\"executions.duplicate_race\" = \"== 0\"\n\"jobs.lost\" = \"== 0\"\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let run = common::bin()
        .args(["run"])
        .arg(&scenario)
        .args(["--database-url", &ha.url(), "--quiet", "--out"])
        .arg(&out)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Switch over once the run has done some work: its schema holds executions.
    let leader_socket = ha.dir.path().join("sock1");
    let executed = || {
        let sql = "SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE relname = 'effects'";
        let o = Command::new("psql")
            .args(["-X", "-q", "-A", "-t", "-h"])
            .arg(&leader_socket)
            .args(["-p", &ha.ports[0].0.to_string(), "-U", "postgres", "-d", "postgres", "-c", sql])
            .output();
        o.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<i64>().unwrap_or(0) >= 300)
    };
    wait_for("the run executes jobs on node1", Duration::from_secs(120), executed, &ha);
    let switch = ha.patronictl(&["switchover", "--leader", "node1", "--candidate", "node2", "--force"]);
    assert!(
        switch.status.success(),
        "patronictl switchover: {}{}",
        String::from_utf8_lossy(&switch.stdout),
        String::from_utf8_lossy(&switch.stderr)
    );
    let o = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains(&ha.password), "the password never appears: {stderr}");
    assert_eq!(o.status.code(), Some(0), "{}\n{stderr}", String::from_utf8_lossy(&o.stdout));
    wait_for("node2 leads", Duration::from_secs(120), || ha.leader() == Some(2), &ha);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["jobs"]["completed"], 3000, "{}", s["jobs"]);
    assert_eq!(s["jobs"]["lost"], 0);
    assert_eq!(s["executions"]["distinct_jobs"], 3000);
    assert_eq!(s["executions"]["duplicate_race"], 0, "{}", s["executions"]);
    eprintln!(
        "patroni switchover: {} duplicate executions (after lease expiry), {} reconnects, longest worker outage {} ms",
        s["executions"]["duplicate"], s["outage"]["worker_reconnects"], s["outage"]["longest_worker_outage_ms"]
    );
    let reconnects = s["outage"]["worker_reconnects"].as_u64().unwrap_or(0);
    assert!(reconnects > 0, "the workers followed the leader to node2: {}", s["outage"]);
    // The change of server is seen (a new timeline, an older postmaster) and judged as a
    // failover, not "no server restart or failover in this run".
    assert_eq!(s["outage"]["server_restarts"], 1, "{}", s["outage"]);
    assert_eq!(s["durability"]["failovers"], 1, "{}", s["durability"]);
    assert_eq!(s["durability"]["tested"], true, "{}", s["durability"]);
    assert!(stderr.contains("counted as a failover"), "{stderr}");
}
