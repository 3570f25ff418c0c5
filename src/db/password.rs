//! Passwords, found the way libpq finds them and never shown.
//!
//! Order: the password in the URL; else `PGPASSWORD`; else the first
//! matching line of the password file (`PGPASSFILE`, default `~/.pgpass`,
//! ignored with a warning when group or others can read it, as libpq does).
//! A unix socket matches the host name `localhost`, as in libpq.
//!
//! Everything the harness prints, logs or writes names the server through
//! [`display_url`], which is built from the parsed settings and has `***`
//! where a password is: the password itself never reaches a string that
//! leaves this process.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// Where the password came from (for error messages), or None without one.
pub(crate) fn fill(config: &mut Config) -> Option<String> {
    if config.get_password().is_some() {
        return Some("the URL".into());
    }
    if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
        config.password(pw.as_encoded_bytes());
        return Some("PGPASSWORD".into());
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let meta = std::fs::metadata(&file).ok().filter(|m| m.is_file())?;
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "warning: password file {} has group or world access and is ignored; permissions should be u=rw (chmod 0600)",
            file.display()
        );
        return None;
    }
    let text = crate::files::read_text(&file, crate::files::Kind::Scenario).ok()?;
    let (host, port, db, user) = lookup_key(config);
    let pw = pgpass_lookup(&text, &host, port, &db, &user)?;
    config.password(pw);
    Some(format!("the password file {}", file.display()))
}

/// Host (sockets match `localhost`), port, database and user as libpq matches them.
fn lookup_key(config: &Config) -> (String, u16, String, String) {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().map(str::to_string).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    (host, port, db, user)
}

/// The password of the first line matching all four fields (`*` matches anything).
pub(crate) fn pgpass_lookup(text: &str, host: &str, port: u16, db: &str, user: &str) -> Option<String> {
    let port = port.to_string();
    text.lines().filter(|l| !l.trim_start().starts_with('#')).filter_map(fields).find_map(|f| {
        let ok = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        (ok(&f[0], host) && ok(&f[1], &port) && ok(&f[2], db) && ok(&f[3], user)).then(|| f[4].clone())
    })
}

/// `host:port:db:user:password` with `\:` and `\\` escapes; None unless five fields.
fn fields(line: &str) -> Option<[String; 5]> {
    let mut out: Vec<String> = vec![String::new()];
    let mut chars = line.trim_end_matches('\r').chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.last_mut()?.push(chars.next().unwrap_or('\\')),
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut()?.push(c),
        }
    }
    out.try_into().ok()
}

/// `postgres://user:***@host:port/db`: the server as the user named it, the password replaced.
pub(crate) fn display_url(config: &Config) -> String {
    url(config, false)
}

/// The URL with its real password, for a child process's environment only (a setup command,
/// a client's workers): never printed, never written to a file.
pub(crate) fn secret_url(config: &Config) -> String {
    url(config, true)
}

fn url(config: &Config, with_password: bool) -> String {
    let mut url = String::from("postgres://");
    if let Some(user) = config.get_user() {
        url.push_str(&encode(user));
    }
    match config.get_password() {
        Some(p) if with_password => url.push_str(&format!(":{}", encode(&String::from_utf8_lossy(p)))),
        Some(_) => url.push_str(":***"),
        None => {}
    }
    if config.get_user().is_some() || config.get_password().is_some() {
        url.push('@');
    }
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied();
    let mut query = Vec::new();
    match config.get_hosts() {
        // One socket: `postgres://u@/db?host=/dir&port=P`, as libpq's documents write it.
        [Host::Unix(path)] => {
            url.push('/');
            query.push(format!("host={}", encode(&path.display().to_string())));
            query.extend(port(0).map(|p| format!("port={p}")));
        }
        // Every host in the authority, each with its port (`a:1,%2Fdir:2`): libpq and
        // tokio-postgres both read a percent-encoded socket directory there.
        hosts => {
            let each = hosts.iter().enumerate().map(|(i, h)| {
                let name = match h {
                    Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
                    Host::Tcp(name) => name.clone(),
                    Host::Unix(path) => encode(&path.display().to_string()).replace('/', "%2F"),
                };
                match port(i) {
                    Some(p) => format!("{name}:{p}"),
                    None => name,
                }
            });
            url.push_str(&each.collect::<Vec<_>>().join(","));
            url.push('/');
        }
    }
    url.push_str(&encode(config.get_dbname().unwrap_or("")));
    let addrs: Vec<String> = config.get_hostaddrs().iter().map(|a| a.to_string()).collect();
    if !addrs.is_empty() {
        query.push(format!("hostaddr={}", addrs.join(",")));
    }
    if let Some(t) = config.get_connect_timeout() {
        query.push(format!("connect_timeout={}", t.as_secs()));
    }
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query.join("&"));
    }
    url
}

/// A URL component percent-encoded (unreserved characters and `/` kept); also `db::tls`'s.
pub(super) fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_url_carries_the_password_and_the_shown_one_does_not() {
        let c: Config = "postgres://al%40ice:p%3Ass@127.0.0.1:5433/db".parse().unwrap();
        assert_eq!(display_url(&c), "postgres://al%40ice:***@127.0.0.1:5433/db");
        assert_eq!(secret_url(&c), "postgres://al%40ice:p%3Ass@127.0.0.1:5433/db");
    }

    #[test]
    fn pgpass_lines_match_like_libpq() {
        let text = "# comment\n\
                    db.example.com:5432:*:alice:first\n\
                    localhost:5433:app:bob:with\\:colon\\\\\n\
                    *:*:*:bob:fallback\n\
                    short:line\n";
        assert_eq!(pgpass_lookup(text, "db.example.com", 5432, "x", "alice").as_deref(), Some("first"));
        assert_eq!(pgpass_lookup(text, "db.example.com", 5433, "x", "alice"), None);
        assert_eq!(pgpass_lookup(text, "localhost", 5433, "app", "bob").as_deref(), Some("with:colon\\"));
        assert_eq!(pgpass_lookup(text, "localhost", 5432, "app", "bob").as_deref(), Some("fallback"));
        assert_eq!(pgpass_lookup(text, "short", 5432, "line", "x"), None);
    }

    #[test]
    fn display_url_replaces_the_password_and_keeps_the_rest() {
        let c: Config = "postgres://alice:s3cr%40t@db.example.com:6543/app?sslmode=disable".parse().unwrap();
        assert_eq!(display_url(&c), "postgres://alice:***@db.example.com:6543/app");
        let c: Config = "host=/tmp/sock port=5433 user=postgres password='x y' dbname=postgres".parse().unwrap();
        assert_eq!(display_url(&c), "postgres://postgres:***@/postgres?host=/tmp/sock&port=5433");
        let c: Config = "postgres://127.0.0.1/db".parse().unwrap();
        assert_eq!(display_url(&c), "postgres://127.0.0.1:5432/db");
    }

    /// What a child process (an agent, a client's workers) is handed keeps every host, each
    /// with its own port, in order, and the connect_timeout: a standby cluster's two sockets
    /// (one folder, two ports) came out as one port, and the agents could not join.
    #[test]
    fn a_multi_host_url_reaches_a_child_whole() {
        let mut sockets = Config::new();
        sockets.host_path("/tmp/qb dir").host_path("/tmp/qb dir").port(5433).port(5434);
        sockets.user("postgres").dbname("postgres").connect_timeout(std::time::Duration::from_secs(4));
        let tcp: Config =
            "postgres://u:pw@10.0.0.1:5432,db2:6543,[::1]:7/app?hostaddr=10.0.0.1,10.0.0.2,::1".parse().unwrap();
        for config in [sockets, tcp] {
            let url = secret_url(&config);
            let back: Config = url.parse().unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(back.get_hosts(), config.get_hosts(), "{url}");
            assert_eq!(back.get_ports(), config.get_ports(), "{url}");
            assert_eq!(back.get_hostaddrs(), config.get_hostaddrs(), "{url}");
            assert_eq!(back.get_connect_timeout(), config.get_connect_timeout(), "{url}");
            assert_eq!((back.get_user(), back.get_password()), (config.get_user(), config.get_password()));
            assert_eq!(back.get_dbname(), config.get_dbname());
        }
        let two = Config::new().host_path("/run/pg").host_path("/run/pg").port(1).port(2).clone();
        assert_eq!(display_url(&two), "postgres://%2Frun%2Fpg:1,%2Frun%2Fpg:2/");
    }

    /// No parse error, connection error text or display form contains the password.
    #[test]
    fn the_driver_never_echoes_a_password() {
        let pw = "Pw-9f3kq";
        for url in [
            format!("postgres://alice:{pw}@127.0.0.1:1/db"),
            format!("postgres://alice:{pw}@127.0.0.1:1/db?sslmode=nonsense"),
            format!("postgres://alice:{pw}%ZZ@127.0.0.1:1/db"),
            format!("postgres://alice:{pw}@127.0.0.1:port/db"),
            format!("host=127.0.0.1 password={pw} user=alice bogus"),
            format!("host=127.0.0.1 password='{pw} user=alice"),
            format!("host=127.0.0.1 password={pw} nosuchoption=1"),
        ] {
            match url.parse::<Config>() {
                Ok(c) => assert!(!display_url(&c).contains(pw), "{url}"),
                Err(e) => {
                    let text = format!("{e} {e:?} {}", crate::db::error_text(&e));
                    assert!(!text.contains(&pw[..4]), "{url}: {text}");
                }
            }
        }
        let c: Config = format!("postgres://alice:{pw}@127.0.0.1:1/db").parse().unwrap();
        assert!(!format!("{c:?}").contains(pw));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let e = rt.block_on(c.connect(tokio_postgres::NoTls)).err().expect("nothing listens on port 1");
        let text = format!("{e} {e:?} {}", crate::db::error_text(&e));
        assert!(!text.contains(pw), "{text}");
    }
}
