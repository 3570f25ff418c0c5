//! Which servers a connection tries, how long each may take, and what each must be: libpq's
//! multi-host rules, which tokio-postgres keeps only in part.
//!
//! - **Order.** The hosts of the URL in their order (`host=a,b port=1,2`, or
//!   `postgres://a:1,b:2/db`), shuffled under `load_balance_hosts=random`; the first that
//!   logs in and fits wins.
//! - **`connect_timeout`** bounds each host's attempt *whole*: TCP connect, TLS, the startup
//!   and authentication exchange, the `target_session_attrs` check and the harness's own
//!   `SET`s. tokio-postgres bounds only the TCP connect, so a server that accepts and never
//!   answers held a connection forever. As in libpq the value is in seconds, at least 2 (1 is
//!   taken as 2). Without it (or with 0) queuebench still bounds each attempt, by
//!   [`DEFAULT_CONNECT_TIMEOUT`].
//! - **`target_session_attrs`** takes libpq 14's six values ([`TargetSession`]); tokio-postgres
//!   knows three, so the parameter is taken out of the URL here and checked on each server
//!   with one query (`pg_is_in_recovery()` and `transaction_read_only`).
//!
//! When no host fits, [`Failure`] says what each host tried was: its error, that it timed out
//! after N s, or what the server is (a primary where a standby was asked for).

use super::{Failed, error_text};
use crate::error::{Error, Sql};
use std::fmt;
use std::time::Duration;
use tokio_postgres::config::{Host, LoadBalanceHosts, TargetSessionAttrs};
use tokio_postgres::{Client, Config, SimpleQueryMessage};

/// Each host's bound when the URL sets no `connect_timeout` (or 0, libpq's "wait forever").
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// libpq's smallest `connect_timeout`: 1 s is taken as 2.
const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The bound on one host's attempt (see the module docs).
pub(crate) fn connect_timeout(config: &Config) -> Duration {
    config.get_connect_timeout().map_or(DEFAULT_CONNECT_TIMEOUT, |t| (*t).max(MIN_CONNECT_TIMEOUT))
}

/// libpq's `target_session_attrs` (14 and later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetSession {
    #[default]
    Any,
    ReadWrite,
    ReadOnly,
    Primary,
    Standby,
    /// Standbys first; when none of the hosts is one, any server.
    PreferStandby,
}

/// Every accepted value, for the message that refuses another.
pub(crate) const TARGET_SESSION_VALUES: &str = "any, read-write, read-only, primary, standby, prefer-standby";

impl TargetSession {
    const ALL: [TargetSession; 6] = [
        TargetSession::Any,
        TargetSession::ReadWrite,
        TargetSession::ReadOnly,
        TargetSession::Primary,
        TargetSession::Standby,
        TargetSession::PreferStandby,
    ];

    pub fn parse(value: &str) -> Option<TargetSession> {
        TargetSession::ALL.into_iter().find(|t| t.name() == value)
    }

    pub fn name(self) -> &'static str {
        match self {
            TargetSession::Any => "any",
            TargetSession::ReadWrite => "read-write",
            TargetSession::ReadOnly => "read-only",
            TargetSession::Primary => "primary",
            TargetSession::Standby => "standby",
            TargetSession::PreferStandby => "prefer-standby",
        }
    }

    /// The value tokio-postgres's own parser took (a config built in code may carry one).
    pub(crate) fn or_driver(self, driver: TargetSessionAttrs) -> TargetSession {
        match (self, driver) {
            (TargetSession::Any, TargetSessionAttrs::ReadWrite) => TargetSession::ReadWrite,
            (TargetSession::Any, TargetSessionAttrs::ReadOnly) => TargetSession::ReadOnly,
            (mine, _) => mine,
        }
    }

    /// What a server must be in each pass over the hosts: prefer-standby makes two.
    pub(crate) fn passes(self) -> &'static [TargetSession] {
        match self {
            TargetSession::PreferStandby => &[TargetSession::Standby, TargetSession::Any],
            TargetSession::Any => &[TargetSession::Any],
            TargetSession::ReadWrite => &[TargetSession::ReadWrite],
            TargetSession::ReadOnly => &[TargetSession::ReadOnly],
            TargetSession::Primary => &[TargetSession::Primary],
            TargetSession::Standby => &[TargetSession::Standby],
        }
    }

    /// What was asked for, in words.
    fn wanted(self) -> &'static str {
        match self {
            TargetSession::Any | TargetSession::PreferStandby => "any server",
            TargetSession::ReadWrite => "a server that takes writes",
            TargetSession::ReadOnly => "a read-only server",
            TargetSession::Primary => "a primary",
            TargetSession::Standby => "a standby",
        }
    }

    /// `url` with `target_session_attrs=…` added (nothing for `any`), for a child process that
    /// must pick the same server (an agent, a client's workers).
    pub(crate) fn add_to(self, url: String) -> String {
        if self == TargetSession::Any {
            return url;
        }
        let sep = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            if url.contains('?') { '&' } else { '?' }
        } else {
            ' '
        };
        format!("{url}{sep}target_session_attrs={}", self.name())
    }

    /// Takes `target_session_attrs` out of a URL or key=value string given by `flag` (the
    /// last one counts): the rest for tokio-postgres, and the value. Err (exit 2): the value
    /// is none of libpq's.
    pub(crate) fn take(url: &str, flag: &str) -> Result<(String, TargetSession), Error> {
        let (rest, found) = super::tls::split_by(url, |k| (k == "target_session_attrs").then_some(()));
        let Some((_, value)) = found.last() else { return Ok((rest, TargetSession::Any)) };
        match TargetSession::parse(value) {
            Some(t) => Ok((rest, t)),
            None => Err(Error::Flag {
                flag: flag.into(),
                reason: format!(
                    "has target_session_attrs=`{}`, which is not one of libpq's values: {TARGET_SESSION_VALUES}",
                    crate::error::shown(value)
                ),
            }),
        }
    }
}

/// What a server is, as the check reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Role {
    pub in_recovery: bool,
    pub read_only: bool,
}

impl Role {
    /// Is this server what `want` asks for? (libpq's rules: read-write and read-only go by
    /// `transaction_read_only`, primary and standby by `pg_is_in_recovery()`.)
    pub(crate) fn fits(self, want: TargetSession) -> bool {
        match want {
            TargetSession::Any | TargetSession::PreferStandby => true,
            TargetSession::ReadWrite => !self.read_only,
            TargetSession::ReadOnly => self.read_only,
            TargetSession::Primary => !self.in_recovery,
            TargetSession::Standby => self.in_recovery,
        }
    }

    fn describe(self) -> &'static str {
        match (self.in_recovery, self.read_only) {
            (true, _) => "a standby (pg_is_in_recovery() is true)",
            (false, true) => "a primary whose sessions are read-only (transaction_read_only is on)",
            (false, false) => "a primary (pg_is_in_recovery() is false, transaction_read_only is off)",
        }
    }
}

/// Reads what the server is, in one round trip of the simple protocol (a pooler passes it).
pub(crate) async fn role(client: &Client) -> Result<Role, tokio_postgres::Error> {
    let rows = client
        .simple_query("SELECT pg_catalog.pg_is_in_recovery(), pg_catalog.current_setting('transaction_read_only')")
        .await?;
    let row = rows.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => Some((r.get(0) == Some("t"), r.get(1) == Some("on"))),
        _ => None,
    });
    let (in_recovery, read_only) = row.unwrap_or((false, false));
    Ok(Role { in_recovery, read_only })
}

/// How many hosts the settings name (a `hostaddr` list counts as hosts too); at least 1, so a
/// config without any still gets the driver's own error.
fn count(config: &Config) -> usize {
    config.get_hosts().len().max(config.get_hostaddrs().len()).max(1)
}

/// The order the hosts are tried in: as written, or shuffled under `load_balance_hosts=random`.
pub(crate) fn order(config: &Config) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count(config)).collect();
    if config.get_load_balance_hosts() == LoadBalanceHosts::Random {
        use rand::seq::SliceRandom;
        order.shuffle(&mut rand::rng());
    }
    order
}

/// The port of host `i`: its own, or the one port given for all (libpq's rule), or 5432.
fn port(config: &Config, i: usize) -> u16 {
    let ports = config.get_ports();
    ports.get(i).or(ports.first()).copied().unwrap_or(5432)
}

/// Host `i` alone, with every other setting of `config` (its own `target_session_attrs` left
/// at `any`: the check is [`role`]'s).
pub(crate) fn one(config: &Config, i: usize) -> Config {
    let mut one = Config::new();
    match config.get_hosts().get(i) {
        Some(Host::Tcp(name)) => {
            one.host(name);
        }
        Some(Host::Unix(path)) => {
            one.host_path(path);
        }
        None => {}
    }
    if let Some(addr) = config.get_hostaddrs().get(i) {
        one.hostaddr(*addr);
    }
    if !config.get_ports().is_empty() {
        one.port(port(config, i));
    }
    if let Some(u) = config.get_user() {
        one.user(u);
    }
    if let Some(p) = config.get_password() {
        one.password(p);
    }
    if let Some(d) = config.get_dbname() {
        one.dbname(d);
    }
    if let Some(o) = config.get_options() {
        one.options(o);
    }
    if let Some(a) = config.get_application_name() {
        one.application_name(a);
    }
    if let Some(t) = config.get_connect_timeout() {
        one.connect_timeout(*t);
    }
    if let Some(t) = config.get_tcp_user_timeout() {
        one.tcp_user_timeout(*t);
    }
    if let Some(i) = config.get_keepalives_interval() {
        one.keepalives_interval(i);
    }
    if let Some(r) = config.get_keepalives_retries() {
        one.keepalives_retries(r);
    }
    one.ssl_mode(config.get_ssl_mode())
        .ssl_negotiation(config.get_ssl_negotiation())
        .keepalives(config.get_keepalives())
        .keepalives_idle(config.get_keepalives_idle())
        .channel_binding(config.get_channel_binding());
    one
}

/// Host `i` as messages name it: `host:port`, or a Unix socket's file.
pub(crate) fn name(config: &Config, i: usize) -> String {
    let port = port(config, i);
    match (config.get_hosts().get(i), config.get_hostaddrs().get(i)) {
        (Some(Host::Unix(dir)), _) => dir.join(format!(".s.PGSQL.{port}")).display().to_string(),
        (Some(Host::Tcp(h)), _) if h.contains(':') => format!("[{h}]:{port}"),
        (Some(Host::Tcp(h)), _) => format!("{h}:{port}"),
        (None, Some(addr)) if addr.is_ipv6() => format!("[{addr}]:{port}"),
        (None, Some(addr)) => format!("{addr}:{port}"),
        (None, None) => format!("localhost:{port}"),
    }
}

/// No host could be used: what each one tried was.
#[derive(Debug)]
pub(crate) struct Failure {
    pub tried: Vec<Attempt>,
    /// Each attempt's bound ([`connect_timeout`]).
    pub limit: Duration,
    pub wanted: TargetSession,
}

/// One host's attempt.
#[derive(Debug)]
pub(crate) struct Attempt {
    pub host: String,
    pub outcome: Outcome,
}

/// Why a host was not used.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The driver's error (refused, authentication, TLS …).
    Failed(tokio_postgres::Error),
    /// No login within the bound.
    TimedOut,
    /// The server closed the connection during the check.
    Closed,
    /// It logged in, and is not what `target_session_attrs` asks for.
    Unfit(Role),
}

impl From<tokio_postgres::Error> for Outcome {
    fn from(e: tokio_postgres::Error) -> Outcome {
        Outcome::Failed(e)
    }
}

impl Failure {
    /// The driver's error when one host was tried and that is what it said (for the hints
    /// that read its SQLSTATE or its TLS failure); None otherwise.
    pub(crate) fn driver(&self) -> Option<&tokio_postgres::Error> {
        match self.tried.as_slice() {
            [Attempt { outcome: Outcome::Failed(e), .. }] => Some(e),
            _ => None,
        }
    }

    /// Did any host accept the connection and never finish the login?
    pub(crate) fn timed_out(&self) -> bool {
        self.tried.iter().any(|a| matches!(a.outcome, Outcome::TimedOut))
    }

    /// Did some host log in, but none was what `target_session_attrs` asks for?
    pub(crate) fn unfit(&self) -> bool {
        self.tried.iter().any(|a| matches!(a.outcome, Outcome::Unfit(_)))
    }
}

/// The message and SQLSTATE: the driver's own for one host's plain failure.
impl Failed for Failure {
    fn sql(&self) -> Sql {
        match self.driver() {
            Some(e) => e.sql(),
            None => Sql { message: self.to_string(), sqlstate: None },
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(e) = self.driver() {
            return f.write_str(&error_text(e));
        }
        let secs = self.limit.as_secs();
        let each = |a: &Attempt| match &a.outcome {
            Outcome::Failed(e) => format!("{}: {}", a.host, error_text(e)),
            Outcome::TimedOut => format!("{}: timed out after {secs} s without finishing the login", a.host),
            Outcome::Closed => format!("{}: closed the connection during the login", a.host),
            Outcome::Unfit(role) => {
                format!("{}: is {}, not {}", a.host, role.describe(), self.wanted.wanted())
            }
        };
        let lines: Vec<String> = self.tried.iter().map(each).collect();
        match lines.as_slice() {
            [one] => f.write_str(one)?,
            many => write!(f, "tried {} hosts in turn: {}", many.len(), many.join("; "))?,
        }
        if self.unfit() {
            write!(f, " (target_session_attrs={})", self.wanted.name())?;
        }
        if self.timed_out() {
            write!(f, " (connect_timeout: {secs} s per host, for the whole login)")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_libpq_value_of_target_session_attrs_is_taken_out_of_the_url() {
        for value in TARGET_SESSION_VALUES.split(", ") {
            let url = format!("postgres://u@a:1,b:2/db?connect_timeout=3&target_session_attrs={value}");
            let (rest, t) = TargetSession::take(&url, "--database-url").unwrap();
            assert_eq!(t.name(), value);
            assert_eq!(rest, "postgres://u@a:1,b:2/db?connect_timeout=3");
            // What is left is tokio-postgres's to parse, whatever the value was.
            let config: Config = rest.parse().unwrap();
            assert_eq!(config.get_ports(), [1, 2]);
            let kv = format!("host=a,b port=1,2 target_session_attrs={value} user=u");
            let (rest, t) = TargetSession::take(&kv, "--database-url").unwrap();
            assert_eq!((rest.as_str(), t.name()), ("host=a,b port=1,2 user=u", value));
        }
        let (rest, t) = TargetSession::take("postgres://u@a/db", "--database-url").unwrap();
        assert_eq!((rest.as_str(), t), ("postgres://u@a/db", TargetSession::Any));
    }

    #[test]
    fn another_value_is_refused_naming_the_accepted_ones() {
        let e = TargetSession::take("postgres://u@a/db?target_session_attrs=master", "--database-url").unwrap_err();
        let e = e.to_string();
        assert!(e.contains("`master`") && e.contains(TARGET_SESSION_VALUES), "{e}");
    }

    #[test]
    fn each_value_asks_for_its_kind_of_server() {
        let primary = Role { in_recovery: false, read_only: false };
        let standby = Role { in_recovery: true, read_only: true };
        let read_only_primary = Role { in_recovery: false, read_only: true };
        let fits = |t: &str, r: Role| r.fits(TargetSession::parse(t).unwrap());
        assert!(fits("primary", primary) && !fits("primary", standby) && fits("primary", read_only_primary));
        assert!(fits("standby", standby) && !fits("standby", primary));
        assert!(fits("read-write", primary) && !fits("read-write", read_only_primary));
        assert!(fits("read-only", standby) && fits("read-only", read_only_primary) && !fits("read-only", primary));
        assert!(fits("any", standby) && fits("prefer-standby", primary));
        assert_eq!(TargetSession::PreferStandby.passes(), [TargetSession::Standby, TargetSession::Any]);
    }

    #[test]
    fn one_host_keeps_its_own_port_and_every_other_setting() {
        let config: Config =
            "postgres://u:pw@a:1,b:2/db?connect_timeout=3&application_name=x&options=-c%20a%3Db".parse().unwrap();
        let second = one(&config, 1);
        assert_eq!(second.get_hosts(), [Host::Tcp("b".into())]);
        assert_eq!(second.get_ports(), [2]);
        assert_eq!(second.get_user(), Some("u"));
        assert_eq!(second.get_password(), Some(&b"pw"[..]));
        assert_eq!(second.get_dbname(), Some("db"));
        assert_eq!(second.get_options(), Some("-c a=b"));
        assert_eq!(second.get_application_name(), Some("x"));
        assert_eq!(second.get_connect_timeout(), Some(&Duration::from_secs(3)));
        assert_eq!(name(&config, 1), "b:2");
        // One port for all hosts (libpq's rule).
        let shared: Config = "host=a,b port=7 user=u".parse().unwrap();
        assert_eq!((name(&shared, 0), name(&shared, 1)), ("a:7".into(), "b:7".into()));
    }

    #[test]
    fn the_bound_is_libpqs_connect_timeout_at_least_2_s_and_30_s_without_one() {
        let bound = |url: &str| connect_timeout(&url.parse().unwrap());
        assert_eq!(bound("postgres://a/db?connect_timeout=5"), Duration::from_secs(5));
        assert_eq!(bound("postgres://a/db?connect_timeout=1"), Duration::from_secs(2));
        assert_eq!(bound("postgres://a/db?connect_timeout=0"), DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(bound("postgres://a/db"), DEFAULT_CONNECT_TIMEOUT);
    }

    #[test]
    fn a_failure_names_every_host_and_what_it_was() {
        let failure = Failure {
            tried: vec![
                Attempt { host: "127.0.0.1:1".into(), outcome: Outcome::TimedOut },
                Attempt {
                    host: "127.0.0.1:5432".into(),
                    outcome: Outcome::Unfit(Role { in_recovery: false, read_only: false }),
                },
            ],
            limit: Duration::from_secs(2),
            wanted: TargetSession::Standby,
        };
        let text = failure.to_string();
        for part in [
            "tried 2 hosts",
            "127.0.0.1:1: timed out after 2 s",
            "127.0.0.1:5432: is a primary",
            "not a standby",
            "target_session_attrs=standby",
            "connect_timeout: 2 s per host",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert!(failure.driver().is_none() && failure.sql().sqlstate.is_none());
    }
}
