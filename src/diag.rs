//! Diagnostics: what the harness does, as `tracing` events, for a run that behaves oddly.
//!
//! Off by default: without `RUST_LOG` (and without `--log`) no subscriber is installed, so
//! every event is one relaxed load of tracing's global maximum level and a branch — nothing
//! is formatted, nothing is allocated. The events that would cost more to build (a statement's
//! parameters) are behind `tracing::enabled!` as well. `RUST_LOG` takes tracing-subscriber's
//! `EnvFilter` syntax (`debug`, `queuebench=trace`, `queuebench::run::reaper=debug`); `--log
//! FILE` writes the events to FILE instead of stderr (at `info` when `RUST_LOG` is not set).
//! The driver's own `log` records (tokio-postgres: `preparing query`, `executing statement`
//! with its parameters, at `debug`) come through the same filter.
//!
//! What is logged, and at which level (docs/diagnostics.md): connections opened, lost and
//! re-opened; the reaper's passes; the sampler's stretched intervals; fault firings; at
//! `trace`, every statement of an adapter step with its parameters.
//!
//! Passwords: events name a server only through `db::password::display_url`, and, as a
//! second line of defence, every line is passed through [`redact`] on its way out, which
//! replaces the password of any URL (`scheme://user:PASSWORD@`) and any `password=` setting
//! (conninfo, URL query, `PGPASSWORD=`) with `***`.

use crate::error::{Access, Error, Result};
use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the subscriber when `RUST_LOG` is set or `log` names a file; otherwise nothing.
pub fn init(log: Option<&Path>) -> Result<()> {
    let rust_log = std::env::var("RUST_LOG").ok().filter(|s| !s.trim().is_empty());
    if rust_log.is_none() && log.is_none() {
        return Ok(());
    }
    let filter = match &rust_log {
        Some(spec) => EnvFilter::try_new(spec).map_err(|e| Error::Flag {
            flag: "RUST_LOG".into(),
            reason: format!("{e} (e.g. RUST_LOG=debug or RUST_LOG=queuebench=trace)"),
        })?,
        None => EnvFilter::new("info"),
    };
    let (sink, ansi) = match log {
        Some(path) => (Sink::File(Arc::new(Mutex::new(open(path)?)), Arc::new(path.to_path_buf())), false),
        None => (Sink::Stderr, std::io::IsTerminal::is_terminal(&std::io::stderr())),
    };
    // A second init (in-process tests) keeps the first subscriber.
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(sink).with_ansi(ansi).finish().try_init();
    Ok(())
}

/// The `--log` file, appended to (a path the user gave: exit 2 when it cannot be opened), with
/// a first line that proves it can be written: a file that takes no bytes (`/dev/full`, a full
/// disk) is an error here (exit 3), not a log that silently stays empty.
fn open(path: &Path) -> Result<std::fs::File> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::path(Access::WriteLog, path, e))?;
    let first = format!(
        "queuebench {} diagnostics, started {} (pid {})\n",
        crate::model::VERSION,
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        std::process::id()
    );
    file.write_all(first.as_bytes()).and_then(|()| file.flush()).map_err(|e| Error::io(Access::WriteLog, path, e))?;
    Ok(file)
}

/// Said once when a `--log` write fails after the start (the disk filled): the events after it
/// are lost, and the run goes on.
fn warn_lost(path: &Path, e: &std::io::Error) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("warning: --log {}: cannot write: {e}; diagnostics after this point are lost", path.display());
    }
}

/// Where events go: each formatted event is redacted, then written whole.
#[derive(Clone)]
enum Sink {
    Stderr,
    /// The `--log` file and its path (for the warning when a write fails).
    File(Arc<Mutex<std::fs::File>>, Arc<std::path::PathBuf>),
}

impl<'a> MakeWriter<'a> for Sink {
    type Writer = Sink;

    fn make_writer(&'a self) -> Sink {
        self.clone()
    }
}

impl Write for Sink {
    /// The formatter hands over one whole event per call; it is redacted and written at once.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let clean = redact(&text);
        match self {
            Sink::Stderr => std::io::stderr().lock().write_all(clean.as_bytes())?,
            Sink::File(f, path) => {
                if let Err(e) = f.lock().unwrap_or_else(|p| p.into_inner()).write_all(clean.as_bytes()) {
                    warn_lost(path, &e);
                    return Err(e);
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stderr => std::io::stderr().flush(),
            Sink::File(f, _) => f.lock().unwrap_or_else(|p| p.into_inner()).flush(),
        }
    }
}

/// `text` with every password replaced by `***`: the userinfo password of a URL
/// (`postgres://alice:PASSWORD@host`) and the value of any `password=` setting, quoted or not,
/// in any case (`password=x`, `password = 'a b'`, `?password=x&`, `PGPASSWORD=x`).
pub fn redact(text: &str) -> Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("://") && !lower.contains("password") {
        return Cow::Borrowed(text);
    }
    let mut spans = url_passwords(text);
    spans.extend(setting_passwords(text, &lower));
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            at = at.max(end);
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str("***");
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// Byte spans of URL passwords: between the first `:` of the userinfo and its last `@`.
fn url_passwords(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    for (i, _) in text.match_indices("://") {
        let start = i + 3;
        let end = text[start..]
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"' || c == '\'')
            .map_or(text.len(), |n| start + n);
        let authority = &text[start..end];
        let Some(at) = authority.rfind('@') else { continue };
        let Some(colon) = authority[..at].find(':') else { continue };
        if &authority[colon + 1..at] != "***" {
            spans.push((start + colon + 1, start + at));
        }
    }
    spans
}

/// Byte spans of `password=VALUE` values (`lower` is `text` in ASCII lower case).
fn setting_passwords(text: &str, lower: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    for (i, key) in lower.match_indices("password") {
        let mut j = i + key.len();
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if j >= bytes.len() || bytes[j] != b'=' {
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let start = j;
        let end = if bytes.get(j) == Some(&b'\'') {
            quoted_end(bytes, j)
        } else {
            let stop = |b: &u8| b.is_ascii_whitespace() || matches!(b, b'&' | b';' | b',' | b'"' | b'}' | b')');
            bytes[j..].iter().position(stop).map_or(bytes.len(), |n| j + n)
        };
        if end > start && &text[start..end] != "***" {
            spans.push((start, end));
        }
    }
    spans
}

/// The end of a conninfo value in single quotes starting at `open` (`\'` and `\\` escaped).
fn quoted_end(bytes: &[u8], open: usize) -> usize {
    let mut k = open + 1;
    while k < bytes.len() {
        match bytes[k] {
            b'\\' => k += 2,
            b'\'' => return k + 1,
            _ => k += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_in_urls_and_settings_are_replaced() {
        let cases = [
            ("postgres://alice:s3cr%40t@db:5432/app", "postgres://alice:***@db:5432/app"),
            (
                "url=postgresql://al:pw@/postgres?host=/tmp&port=5432 next",
                "url=postgresql://al:***@/postgres?host=/tmp&port=5432 next",
            ),
            ("postgres://a:b:c@h/db", "postgres://a:***@h/db"),
            ("host=/tmp user=alice password=Pw-9f3kq dbname=x", "host=/tmp user=alice password=*** dbname=x"),
            ("host=h password = 'x y\\' z' user=u", "host=h password = *** user=u"),
            (
                "postgres://h/db?user=u&password=hunter2&sslmode=disable",
                "postgres://h/db?user=u&password=***&sslmode=disable",
            ),
            ("env PGPASSWORD=topsecret psql", "env PGPASSWORD=*** psql"),
            ("Password=X;", "Password=***;"),
            ("{\"conninfo\":\"password=abc\"}", "{\"conninfo\":\"password=***\"}"),
        ];
        for (text, want) in cases {
            assert_eq!(redact(text), want, "{text}");
        }
    }

    #[test]
    fn text_without_passwords_is_left_alone() {
        for text in [
            "postgres://alice:***@db:5432/app",
            "postgres://alice@db/app",
            "https://example.com/a:b@c",
            "the password file ~/.pgpass is ignored",
            "password authentication failed for user \"alice\"",
            "password=*** already",
            "",
        ] {
            assert_eq!(redact(text), text);
        }
    }
}
