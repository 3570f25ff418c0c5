//! What a run ran against: the database, the pooler in front of it, TLS, the settings read
//! back, and the machine.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DatabaseInfo {
    /// `ephemeral` or `url`.
    pub kind: String,
    /// Host, port, user and database; never a password.
    pub target: String,
    /// URL mode: the URL with its password replaced by `***`; empty for an ephemeral cluster.
    pub url: String,
    pub schema: String,
    pub server_version: String,
    /// The major of `server_version` (`16`); absent when the version was not read, and in
    /// summaries from before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_major: Option<u32>,
    /// Scenario settings passed to the ephemeral cluster.
    pub settings_applied: BTreeMap<String, String>,
    /// In URL mode: each scenario setting and the server's actual value (not changed).
    pub settings_reported: BTreeMap<String, SettingReport>,
    /// Whether the run's connections used TLS, and with which sslmode (docs/production-postgres.md).
    pub tls: TlsInfo,
    /// The pooler the workers and producers went through (`[postgres.pgbouncer]`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pooler: Option<PoolerInfo>,
    /// The role the scenario's SQL ran as: workers, producers, the adapter's statements and
    /// setup, clients (docs/safety.md, "Who runs what"). Empty in summaries from before it.
    pub sql_role: String,
    /// Whether that role is a superuser (`rolsuper`): in URL mode the URL's role; in an
    /// ephemeral cluster only with `[postgres] superuser_sql = true`. Absent when not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superuser: Option<bool>,
}

/// A pooler between the workers and the server (docs/production-postgres.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct PoolerInfo {
    /// `pgbouncer`.
    pub kind: String,
    /// `session`, `transaction` or `statement`.
    pub pool_mode: String,
    /// Server connections in the pool.
    pub pool_size: u32,
    /// The workers keep no named prepared statements (transaction and statement pooling).
    pub unnamed_statements: bool,
}

impl PoolerInfo {
    /// `, through pgbouncer (transaction pooling, 8 server connections)`, for the database line.
    pub fn shown(pooler: &Option<PoolerInfo>) -> String {
        match pooler {
            Some(p) if p.pool_size == 0 => format!(", through a pooler of your own ({} pooling)", p.pool_mode),
            Some(p) => format!(", through {} ({} pooling, {} server connections)", p.kind, p.pool_mode, p.pool_size),
            None => String::new(),
        }
    }
}

/// The TLS of the run's connections: the settings, and what the server reports for the setup
/// connection (`pg_stat_ssl`). Never a key or a certificate's content.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct TlsInfo {
    /// The connections were encrypted (the server's `pg_stat_ssl.ssl` for the setup connection).
    pub used: bool,
    /// libpq's sslmode the run connected with (`disable` … `verify-full`; `require` with a root
    /// certificate file reads `verify-ca`, as it behaves).
    pub sslmode: String,
    /// What the client checked of the server's certificate: `none`, `chain`, `chain and host name`.
    pub checks: String,
    /// The root certificate file the chain was checked against (a path; empty when not checked).
    pub root_cert: String,
    /// A client certificate was presented (its path; empty without one).
    pub client_cert: String,
    /// The protocol and cipher the server reports (`TLSv1.3`, `TLS_AES_256_GCM_SHA384`); empty without TLS.
    pub version: String,
    pub cipher: String,
}

impl TlsInfo {
    /// `TLS TLSv1.3 verify-full` or `no TLS (sslmode prefer)`, for the terminal's database line.
    pub fn shown(&self) -> String {
        if self.used {
            format!("TLS {} {}", self.version, self.sslmode)
        } else {
            format!("no TLS (sslmode {})", if self.sslmode.is_empty() { "prefer" } else { &self.sslmode })
        }
    }
}

impl DatabaseInfo {
    /// How the terminal and report.html name the server: the redacted URL, else the target.
    pub fn shown(&self) -> &str {
        if self.url.is_empty() { &self.target } else { &self.url }
    }

    /// ` (role alice is a superuser: …)` for the database line when the scenario's SQL ran with
    /// every privilege; empty otherwise.
    pub fn superuser_notice(&self) -> String {
        match self.superuser {
            Some(true) => format!(
                " (role {} is a superuser: the scenario's SQL runs with every privilege)",
                if self.sql_role.is_empty() { "?" } else { &self.sql_role }
            ),
            _ => String::new(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SettingReport {
    pub wanted: String,
    pub actual: String,
}

/// The machine and server, recorded once.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    pub cores: u64,
    pub memory_gib: f64,
    pub os: String,
    /// Settings whose source is not the default (from pg_settings).
    pub pg_settings: BTreeMap<String, String>,
}
