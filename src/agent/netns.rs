//! `--spawn-agents N --netns`: each spawned agent on a host of its own — a network namespace
//! with one veth pair to this machine's, a /30 of its own in 10.213.0.0/16 — so that it
//! reaches PostgreSQL through its own interface, as a separate host would, and the
//! coordinator can cut or shape that path alone (`netfault`). Only what this module creates
//! is touched: namespaces named `qb<pid>n<k>` and their veth pairs, removed on drop (a
//! namespace left by a queuebench that was SIGKILLed is removed by the next one).

use super::problem::CommandFailed;
use crate::error::{Error, Result};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;

/// One agent's host: its namespace, the two ends of its veth pair and their addresses.
#[derive(Debug, Clone)]
pub(crate) struct Host {
    pub ns: String,
    /// The end on this machine's side (the forwarder listens on `host_ip` here).
    pub host_if: String,
    /// The end inside the namespace (the agent's address `agent_ip`).
    pub agent_if: String,
    pub host_ip: Ipv4Addr,
    pub agent_ip: Ipv4Addr,
}

impl Host {
    /// The namespace's file, for `setns` in the spawned agent.
    pub(crate) fn ns_file(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.ns)
    }
}

/// The hosts of one run, removed on drop.
pub(crate) struct Hosts {
    pub hosts: Vec<Host>,
}

/// The /30 blocks of 10.213.0.0/16 (block b: 10.213.b/64.(b%64)*4 + {1, 2}).
const BLOCKS: u32 = 16_384;

/// Why `--netns` cannot be used here, or None.
pub(crate) fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network namespaces need root (CAP_NET_ADMIN): run as root, or drop --netns".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("it needs iproute2's `ip` on PATH (Debian: apt-get install iproute2), or drop --netns".into()),
    }
}

impl Hosts {
    /// `count` hosts, one per agent (agent k gets `hosts[k - 1]`).
    pub(crate) fn create(count: u32) -> Result<Hosts> {
        if let Some(why) = unavailable() {
            return Err(Error::Flag { flag: "--netns".into(), reason: why });
        }
        let _lock = Lock::take()?;
        sweep_stale();
        let used = used_blocks()?;
        let pid = std::process::id();
        let mut hosts = Hosts { hosts: Vec::new() };
        let mut free = (0..BLOCKS).filter(|b| !used.contains(b));
        for k in 1..=count {
            let b = free
                .next()
                .ok_or_else(|| Error::machine("choosing an address for an agent", "10.213.0.0/16 is full"))?;
            let base = u32::from(Ipv4Addr::new(10, 213, 0, 0)) + b * 4;
            let host = Host {
                ns: format!("qb{pid}n{k}"),
                host_if: format!("qb{pid}h{k}"),
                agent_if: format!("qb{pid}a{k}"),
                host_ip: Ipv4Addr::from(base + 1),
                agent_ip: Ipv4Addr::from(base + 2),
            };
            // Pushed first: a failure half-way still removes what was made.
            hosts.hosts.push(host.clone());
            make(&host)?;
        }
        Ok(hosts)
    }

    /// Agent k's host.
    pub(crate) fn of(&self, k: u32) -> Option<&Host> {
        self.hosts.get(k.checked_sub(1)? as usize)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for h in &self.hosts {
            // Removing the namespace removes the veth pair with it.
            let _ = Command::new("ip").args(["netns", "del", &h.ns]).output();
            let _ = Command::new("ip").args(["link", "del", &h.host_if]).output();
        }
    }
}

/// Runs `ip`/`tc` with `args`; its stderr on failure.
pub(crate) fn run(program: &str, args: &[&str]) -> std::result::Result<(), CommandFailed> {
    match Command::new(program).args(args).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(CommandFailed::Exited {
            command: format!("{program} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        }),
        Err(e) => Err(CommandFailed::NotStarted { program: program.to_string(), cause: e.to_string() }),
    }
}

fn make(h: &Host) -> Result<()> {
    let (host_cidr, agent_cidr) = (format!("{}/30", h.host_ip), format!("{}/30", h.agent_ip));
    let steps: [&[&str]; 8] = [
        &["netns", "add", &h.ns],
        &["link", "add", &h.host_if, "type", "veth", "peer", "name", &h.agent_if],
        &["link", "set", &h.agent_if, "netns", &h.ns],
        &["addr", "add", &host_cidr, "dev", &h.host_if],
        &["link", "set", &h.host_if, "up"],
        &["-n", &h.ns, "addr", "add", &agent_cidr, "dev", &h.agent_if],
        &["-n", &h.ns, "link", "set", &h.agent_if, "up"],
        &["-n", &h.ns, "link", "set", "lo", "up"],
    ];
    for args in steps {
        run("ip", args).map_err(|e| Error::machine(format!("making the network namespace {}", h.ns), e))?;
    }
    Ok(())
}

/// The /30 blocks of 10.213.0.0/16 that some interface of this machine already has.
fn used_blocks() -> Result<Vec<u32>> {
    let out = Command::new("ip")
        .args(["-o", "-4", "addr", "show"])
        .output()
        .map_err(|e| Error::machine("listing this machine's addresses", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .split_whitespace()
        .filter_map(|w| w.split('/').next()?.parse::<Ipv4Addr>().ok())
        .filter(|ip| ip.octets()[..2] == [10, 213])
        .map(|ip| (u32::from(ip) - u32::from(Ipv4Addr::new(10, 213, 0, 0))) / 4)
        .collect())
}

/// Removes namespaces `qb<pid>n<k>` whose queuebench is gone (it was SIGKILLed).
fn sweep_stale() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else { return };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) =
            name.strip_prefix("qb").and_then(|r| r.split_once('n')).and_then(|(p, _)| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", &name]).output();
        }
    }
}

/// An exclusive lock while addresses are chosen and namespaces made (runs side by side, as
/// the tests are, must not take the same block).
struct Lock(#[allow(dead_code)] std::fs::File);

impl Lock {
    fn take() -> Result<Lock> {
        // Not under TMPDIR: every queuebench on this machine must take the same lock.
        let path = std::path::Path::new("/run/queuebench-netns.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(crate::error::Access::Write, path, e))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a file descriptor we own; released when the file closes.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        Ok(Lock(file))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_fit_an_interface_name() {
        // IFNAMSIZ is 16 with the NUL: the longest pid (pid_max 4194304) and agent 99 fit.
        assert!(format!("qb{}h{}", 4_194_304, 99).len() <= 15);
    }
}
