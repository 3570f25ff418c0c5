//! TLS with libpq's rules: `sslmode`, `sslrootcert`, `sslcert` and `sslkey`, from the URL or
//! from `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT` and `PGSSLKEY` (the URL wins), decided once
//! when the target is opened. Every connection of the run (workers, reaper, sampler, admin,
//! agents, the sqlx pool) gets the same [`Tls`] through [`super::Endpoint`]; the rustls
//! client configuration is built here once, so a connection only pays for its handshake.
//!
//! | sslmode | TLS | checks |
//! |---|---|---|
//! | disable | never | — |
//! | allow | plain first, TLS if the server refuses plain | nothing |
//! | prefer (default) | TLS if the server offers it, else plain | nothing |
//! | require | always | nothing; with a root certificate file (given, or `~/.postgresql/root.crt`), the chain, as verify-ca |
//! | verify-ca | always | the chain up to the root certificate file |
//! | verify-full | always | the chain and the host name |
//!
//! Over a Unix socket there is no TLS whatever the mode (as in libpq). The certificates are
//! rustls's (ring provider): verify-full checks the certificate's subject alternative names,
//! not its common name.

#[cfg(test)]
mod tests;
mod verifiers;

use crate::error::{TlsFailure, TlsSetting};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{CertificateError, ClientConfig, RootCertStore};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;
use verifiers::{ChainOnly, NoCheck};

/// libpq's `sslmode` values, in libpq's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    Disable,
    Allow,
    #[default]
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Every accepted `sslmode`, for the message that refuses another.
pub(crate) const MODES: &str = "disable, allow, prefer, require, verify-ca, verify-full";

impl SslMode {
    pub fn parse(value: &str) -> Option<SslMode> {
        Some(match value {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

/// A TLS parameter as libpq names it, with its environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Mode,
    RootCert,
    Cert,
    Key,
}

impl Param {
    const ALL: [Param; 4] = [Param::Mode, Param::RootCert, Param::Cert, Param::Key];

    pub fn key(self) -> &'static str {
        match self {
            Param::Mode => "sslmode",
            Param::RootCert => "sslrootcert",
            Param::Cert => "sslcert",
            Param::Key => "sslkey",
        }
    }

    pub fn env(self) -> &'static str {
        match self {
            Param::Mode => "PGSSLMODE",
            Param::RootCert => "PGSSLROOTCERT",
            Param::Cert => "PGSSLCERT",
            Param::Key => "PGSSLKEY",
        }
    }
}

/// Where a TLS setting came from, as messages say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Url(Param),
    Env(Param),
    /// libpq's default file under `~/.postgresql/`.
    Default(Param),
    /// The ephemeral cluster's own CA (`--tls`).
    Cluster,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Url(p) => write!(f, "{} in the URL", p.key()),
            Source::Env(p) => write!(f, "{} (environment)", p.env()),
            Source::Default(p) => write!(f, "libpq's default {} file", p.key()),
            Source::Cluster => f.write_str("the ephemeral cluster's own CA (--tls)"),
        }
    }
}

/// The TLS settings of a target, resolved once; cheap to clone (one Arc).
#[derive(Clone)]
pub struct Tls {
    pub mode: SslMode,
    /// The root certificate file the chain is checked against (None: the chain is not checked).
    pub root: Option<(PathBuf, Source)>,
    /// The client certificate and key files.
    pub client: Option<(PathBuf, PathBuf)>,
    /// Checks the chain only (verify-ca, or require with a root file), not the name.
    pub checks: Checks,
    /// Some setting was given (URL, environment, `--tls`): child processes are told them all.
    given: bool,
    connector: Option<MakeRustlsConnect>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").field("mode", &self.mode).field("root", &self.root).field("checks", &self.checks).finish()
    }
}

/// What the client checks of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    Nothing,
    Chain,
    ChainAndName,
}

impl Checks {
    pub fn name(self) -> &'static str {
        match self {
            Checks::Nothing => "none",
            Checks::Chain => "chain",
            Checks::ChainAndName => "chain and host name",
        }
    }
}

/// The TLS parameters pulled out of a connection string, the rest left for tokio-postgres.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Split {
    pub rest: String,
    pub params: Vec<(Param, String)>,
}

/// Takes `sslmode`, `sslrootcert`, `sslcert` and `sslkey` out of a URL's query
/// (`postgres://…?sslmode=require`) or a key=value string (`host=… sslmode=require`): tokio-postgres
/// knows only three sslmodes and none of the file parameters.
pub(crate) fn split(url: &str) -> Split {
    let (rest, params) = split_by(url, |k| Param::ALL.into_iter().find(|p| p.key() == k));
    Split { rest, params }
}

/// The parameters `ours` knows taken out of a URL's query or a key=value string (values
/// decoded), and the rest of it; also `db::hosts`'s, for `target_session_attrs`.
pub(crate) fn split_by<P>(url: &str, ours: impl Fn(&str) -> Option<P>) -> (String, Vec<(P, String)>) {
    let mut params = Vec::new();
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((head, query)) = url.split_once('?') else { return (url.into(), params) };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match ours(k) {
                Some(p) => params.push((p, decode(v))),
                None => kept.push(pair),
            }
        }
        let rest = if kept.is_empty() { head.to_string() } else { format!("{head}?{}", kept.join("&")) };
        return (rest, params);
    }
    // key=value words (values with spaces or quotes are left to tokio-postgres's parser).
    let mut kept = Vec::new();
    for word in url.split_whitespace() {
        match word.split_once('=').and_then(|(k, v)| Some((ours(k)?, v))) {
            Some((p, v)) => params.push((p, v.trim_matches('\'').to_string())),
            None => kept.push(word),
        }
    }
    (kept.join(" "), params)
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `~/.postgresql/NAME`, where libpq looks by default (`home`: `$HOME`).
fn default_file(home: Option<&str>, name: &str) -> Option<PathBuf> {
    home.map(|h| PathBuf::from(h).join(".postgresql").join(name))
}

impl Tls {
    /// No TLS at all (an ephemeral cluster on its Unix socket).
    pub fn disabled() -> Tls {
        Tls { mode: SslMode::Disable, root: None, client: None, checks: Checks::Nothing, given: false, connector: None }
    }

    /// Resolves the URL's TLS parameters over the environment's, libpq's way (`env` reads an
    /// environment variable: the PGSSL* ones and HOME, for libpq's default files).
    pub fn resolve(url_params: &[(Param, String)]) -> Result<Tls, TlsSetting> {
        Tls::resolve_with(url_params, |name| std::env::var(name).ok())
    }

    pub fn resolve_with(
        url_params: &[(Param, String)],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Tls, TlsSetting> {
        let get = |p: Param| -> Option<(String, Source)> {
            let from_url = url_params.iter().rev().find(|(q, _)| *q == p).map(|(_, v)| (v.clone(), Source::Url(p)));
            from_url.or_else(|| env(p.env()).filter(|v| !v.is_empty()).map(|v| (v, Source::Env(p))))
        };
        let mode = match get(Param::Mode) {
            None => SslMode::Prefer,
            Some((value, from)) => SslMode::parse(&value).ok_or(TlsSetting::UnknownMode {
                value,
                from: from.to_string(),
                accepted: MODES,
            })?,
        };
        let given = Param::ALL.into_iter().any(|p| get(p).is_some());
        let home = env("HOME");
        if mode == SslMode::Disable {
            return Ok(Tls { given, ..Tls::disabled() });
        }
        let existing = |p: Param| -> Result<Option<(PathBuf, Source)>, TlsSetting> {
            match get(p) {
                Some((path, from)) => {
                    let path = PathBuf::from(path);
                    if path.is_file() {
                        Ok(Some((path, from)))
                    } else {
                        Err(TlsSetting::MissingFile { path, from: from.to_string() })
                    }
                }
                None => Ok(None),
            }
        };
        let mut root = existing(Param::RootCert)?;
        let default_root = default_file(home.as_deref(), "root.crt");
        if root.is_none()
            && matches!(mode, SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull)
            && let Some(d) = default_root.as_ref().filter(|d| d.is_file())
        {
            root = Some((d.clone(), Source::Default(Param::RootCert)));
        }
        if mode.verifies() && root.is_none() {
            return Err(TlsSetting::NoRootCert {
                mode: mode.name(),
                default: default_root.unwrap_or_else(|| "~/.postgresql/root.crt".into()),
            });
        }
        // Prefer and allow never check (libpq checks there too when a root file exists, and then
        // falls back to plain on a failed check; queuebench keeps those two modes simple).
        if matches!(mode, SslMode::Prefer | SslMode::Allow) {
            root = None;
        }
        let checks = match (mode, &root) {
            (SslMode::VerifyFull, _) => Checks::ChainAndName,
            (_, Some(_)) => Checks::Chain,
            (_, None) => Checks::Nothing,
        };
        let client = match (existing(Param::Cert)?, existing(Param::Key)?) {
            (Some((c, _)), Some((k, _))) => Some((c, k)),
            (Some((_, from)), None) => {
                return Err(TlsSetting::HalfPair {
                    given: from.to_string(),
                    missing: Param::Key.key(),
                    missing_env: Param::Key.env(),
                });
            }
            (None, Some((_, from))) => {
                return Err(TlsSetting::HalfPair {
                    given: from.to_string(),
                    missing: Param::Cert.key(),
                    missing_env: Param::Cert.env(),
                });
            }
            (None, None) => {
                let (c, k) =
                    (default_file(home.as_deref(), "postgresql.crt"), default_file(home.as_deref(), "postgresql.key"));
                match (c, k) {
                    (Some(c), Some(k)) if c.is_file() && k.is_file() => Some((c, k)),
                    _ => None,
                }
            }
        };
        let mut tls = Tls { mode, root, client, checks, given, connector: None };
        tls.connector = Some(MakeRustlsConnect::new(tls.client_config()?));
        Ok(tls)
    }

    /// The ephemeral cluster's TLS (`--tls`): verify-full against its own CA, and the run's
    /// client certificate, the only way in over TCP (`db::ephemeral::TlsFiles`).
    pub fn own_ca(ca: PathBuf, client_cert: PathBuf, client_key: PathBuf) -> Result<Tls, TlsSetting> {
        let mut tls = Tls {
            mode: SslMode::VerifyFull,
            root: Some((ca, Source::Cluster)),
            client: Some((client_cert, client_key)),
            checks: Checks::ChainAndName,
            given: true,
            connector: None,
        };
        tls.connector = Some(MakeRustlsConnect::new(tls.client_config()?));
        Ok(tls)
    }

    /// The connector handed to tokio-postgres (None with sslmode=disable).
    pub fn connector(&self) -> Option<MakeRustlsConnect> {
        self.connector.clone()
    }

    /// The root file's path, for messages.
    pub fn root_path(&self) -> Option<&Path> {
        self.root.as_ref().map(|(p, _)| p.as_path())
    }

    /// `url` with these settings as query parameters (`sslmode`, `sslrootcert`, `sslcert`,
    /// `sslkey`: paths, never what the files hold), so a child process (a client's workers, a
    /// setup command) connects as the run does, and the shown URL says how the run connected.
    /// Nothing is added without TLS settings (a Unix socket cluster).
    pub fn add_to(&self, url: String) -> String {
        if !self.given {
            return url;
        }
        let params: Vec<String> =
            self.url_params().into_iter().map(|(k, v)| format!("{k}={}", super::password::encode(&v))).collect();
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}{}", params.join("&"))
    }

    fn url_params(&self) -> Vec<(String, String)> {
        let mut out = vec![("sslmode".to_string(), self.effective_mode().name().to_string())];
        if let Some((root, _)) = &self.root {
            out.push(("sslrootcert".into(), root.display().to_string()));
        }
        if let Some((cert, key)) = &self.client {
            out.push(("sslcert".into(), cert.display().to_string()));
            out.push(("sslkey".into(), key.display().to_string()));
        }
        out
    }

    /// The mode as another libpq client should be told it (require with a root file is verify-ca).
    pub fn effective_mode(&self) -> SslMode {
        match (self.mode, self.checks) {
            (SslMode::Require, Checks::Chain) => SslMode::VerifyCa,
            (mode, _) => mode,
        }
    }

    fn client_config(&self) -> Result<ClientConfig, TlsSetting> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions");
        let verifier: Arc<dyn ServerCertVerifier> = match &self.root {
            None => Arc::new(NoCheck(provider.clone())),
            Some((path, from)) => {
                let mut roots = RootCertStore::empty();
                let bad = |reason: String| TlsSetting::BadFile { path: path.clone(), from: from.to_string(), reason };
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| bad(format!("cannot read it: {e}")))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| bad(format!("not a PEM certificate file: {e}")))?;
                if certs.is_empty() {
                    return Err(bad("holds no PEM certificate".into()));
                }
                for c in certs {
                    roots.add(c).map_err(|e| bad(format!("not a usable certificate: {e}")))?;
                }
                let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| bad(format!("not a usable root: {e}")))?;
                match self.checks {
                    Checks::ChainAndName => webpki,
                    _ => Arc::new(ChainOnly(webpki)),
                }
            }
        };
        let builder = builder.dangerous().with_custom_certificate_verifier(verifier);
        match &self.client {
            None => Ok(builder.with_no_client_auth()),
            Some((cert, key)) => {
                let bad = |path: &Path, p: Param, reason: String| TlsSetting::BadFile {
                    path: path.to_path_buf(),
                    from: p.key().to_string(),
                    reason,
                };
                let chain = CertificateDer::pem_file_iter(cert)
                    .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| bad(cert, Param::Cert, format!("not a PEM certificate file: {e}")))?;
                let key_der = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| bad(key, Param::Key, format!("not a PEM private key: {e}")))?;
                builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                    bad(cert, Param::Cert, format!("cannot be used with the key {} (sslkey): {e}", key.display()))
                })
            }
        }
    }

    /// What failed, when a connection error is a TLS one (None otherwise).
    pub fn diagnose(&self, e: &tokio_postgres::Error, host: &str) -> Option<TlsFailure> {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
        let mut tls_kind = false;
        while let Some(err) = source {
            let text = err.to_string();
            if text == "server does not support TLS" {
                return Some(TlsFailure::NotOffered { mode: self.mode.name() });
            }
            if text.starts_with("error performing TLS handshake") {
                tls_kind = true;
            }
            let inner = err.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
            let rustls =
                err.downcast_ref::<rustls::Error>().or_else(|| inner.and_then(|i| i.downcast_ref::<rustls::Error>()));
            if let Some(r) = rustls {
                return Some(self.failure(r, host));
            }
            source = err.source();
        }
        if let Some(db) = e.as_db_error() {
            let m = db.message();
            if m.contains("certificate") {
                return Some(TlsFailure::ClientCertRefused {
                    cert: self.client.as_ref().map(|(c, _)| c.clone()),
                    detail: m.to_string(),
                });
            }
        }
        tls_kind.then(|| TlsFailure::Handshake { detail: super::error_text(e) })
    }

    fn failure(&self, e: &rustls::Error, host: &str) -> TlsFailure {
        use rustls::AlertDescription as A;
        match e {
            rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { presented, .. }) => {
                TlsFailure::NameMismatch {
                    host: host.to_string(),
                    names: presented.iter().map(|n| clean_name(n)).collect(),
                }
            }
            rustls::Error::InvalidCertificate(CertificateError::NotValidForName) => {
                TlsFailure::NameMismatch { host: host.to_string(), names: Vec::new() }
            }
            rustls::Error::InvalidCertificate(c) => {
                TlsFailure::Untrusted { root: self.root_path().map(Path::to_path_buf), detail: format!("{c:?}") }
            }
            rustls::Error::AlertReceived(
                A::BadCertificate
                | A::UnknownCA
                | A::CertificateRequired
                | A::CertificateUnknown
                | A::CertificateRevoked
                | A::CertificateExpired
                | A::UnsupportedCertificate
                | A::AccessDenied,
            ) => TlsFailure::ClientCertRefused {
                cert: self.client.as_ref().map(|(c, _)| c.clone()),
                detail: e.to_string(),
            },
            other => TlsFailure::Handshake { detail: other.to_string() },
        }
    }
}

/// `DnsName("localhost")` (how rustls lists a presented name) as `localhost`.
fn clean_name(n: &str) -> String {
    match n.split_once('(') {
        Some((_, rest)) => rest.trim_end_matches(')').trim_matches('"').to_string(),
        None => n.to_string(),
    }
}
