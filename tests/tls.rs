//! TLS with libpq's sslmode rules, end to end against real servers (docs/production-postgres.md):
//! the machine's PostgreSQL at localhost:5432, which serves TLS with Debian's self-signed
//! certificate for `localhost` (`/etc/ssl/certs/ssl-cert-snakeoil.pem`), and an ephemeral
//! cluster started with `--tls` (its own CA, verify-full).
//!
//! The machine's server is required here, not replaced: these tests are about its certificate.
//! Where it does not let `root` in over TLS, they fail with that reason (they never pass
//! without having connected). Every run gets a HOME of its own, so libpq's default files
//! (`~/.postgresql/root.crt`, `postgresql.crt`) of whoever runs the tests play no part.

use crate::common;
use common::{queuebench_env, repo};
use std::path::Path;

const SNAKEOIL: &str = "/etc/ssl/certs/ssl-cert-snakeoil.pem";
const SMALL: [&str; 4] = ["--set", "jobs.preload=200", "--set", "expect={ \"jobs.completed\" = \"== 200\" }"];

/// The machine's server over TLS, or a failure that says why it cannot be used.
fn machine_server_with_tls() {
    let o = std::process::Command::new("psql")
        .args(["-X", "-A", "-t", "postgres://root@localhost:5432/postgres?sslmode=require", "-c", "SHOW ssl"])
        .env("PGCONNECT_TIMEOUT", "3")
        .output()
        .expect("psql is installed");
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "on" && Path::new(SNAKEOIL).is_file(),
        "these tests need the machine's PostgreSQL at localhost:5432 (trust for root) serving TLS with {SNAKEOIL}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `queuebench run skip-locked.toml` (200 jobs) against `url`, with a HOME of its own.
fn run_url(url: &str, extra: &[(&str, &str)]) -> (common::Run, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let s = repo("scenarios/skip-locked.toml");
    let mut args = vec!["run", s.to_str().unwrap(), "--database-url", url];
    args.extend(SMALL);
    let mut env = vec![("HOME", home.path().to_str().unwrap())];
    env.extend_from_slice(extra);
    (queuebench_env(&args, &env), home)
}

fn schema_errors(summary: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("schema/summary.schema.json")).unwrap()).unwrap();
    let mut errors = Vec::new();
    common::schema::validate(&schema, &schema, summary, "summary", &mut errors);
    errors
}

#[test]
fn sslmode_require_encrypts_and_summary_json_says_so() {
    machine_server_with_tls();
    let (r, _home) = run_url("postgres://root@localhost:5432/postgres?sslmode=require", &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let s = r.summary();
    let tls = &s["database"]["tls"];
    assert_eq!(tls["used"], true, "{tls}");
    assert_eq!(tls["sslmode"], "require", "{tls}");
    assert_eq!(tls["checks"], "none", "{tls}");
    assert!(tls["version"].as_str().unwrap().starts_with("TLS"), "{tls}");
    assert!(r.stdout.contains("TLS") && r.stdout.contains("require"), "the database line says TLS: {}", r.stdout);
    assert!(s["database"]["url"].as_str().unwrap().contains("sslmode=require"), "{}", s["database"]["url"]);
    assert_eq!(s["fingerprint"]["tls"], "TLS", "a TLS run does not compare with a plain one");
    let errors = schema_errors(&s);
    assert!(errors.is_empty(), "summary.json does not match the schema:\n{}", errors.join("\n"));
}

#[test]
fn pgsslmode_from_the_environment_is_used_and_the_url_wins_over_it() {
    machine_server_with_tls();
    let (r, _home) = run_url("postgres://root@localhost:5432/postgres", &[("PGSSLMODE", "require")]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["database"]["tls"]["used"], true);
    let (r, _home) =
        run_url("postgres://root@localhost:5432/postgres?sslmode=disable", &[("PGSSLMODE", "verify-full")]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["database"]["tls"]["used"], false, "sslmode=disable in the URL wins over PGSSLMODE");
}

#[test]
fn verify_full_against_the_certificates_own_name_passes() {
    machine_server_with_tls();
    let (r, _home) =
        run_url(&format!("postgres://root@localhost:5432/postgres?sslmode=verify-full&sslrootcert={SNAKEOIL}"), &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let tls = &r.summary()["database"]["tls"];
    assert_eq!(tls["used"], true, "{tls}");
    assert_eq!(tls["sslmode"], "verify-full", "{tls}");
    assert_eq!(tls["checks"], "chain and host name", "{tls}");
    assert_eq!(tls["root_cert"], SNAKEOIL, "{tls}");
}

#[test]
fn verify_full_against_an_address_the_certificate_does_not_name_exits_3_naming_both() {
    machine_server_with_tls();
    let (r, _home) =
        run_url(&format!("postgres://root@127.0.0.1:5432/postgres?sslmode=verify-full&sslrootcert={SNAKEOIL}"), &[]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("certificate is for localhost") && r.stderr.contains("the host asked for is 127.0.0.1"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("is the server running"), "{}", r.stderr);
    // verify-ca checks the chain only: the same address passes.
    let (r, _home) =
        run_url(&format!("postgres://root@127.0.0.1:5432/postgres?sslmode=verify-ca&sslrootcert={SNAKEOIL}"), &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["database"]["tls"]["checks"], "chain");
}

/// A CA of its own that signed nothing the server has.
fn stranger_ca(dir: &Path) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, "a stranger's CA");
    let path = dir.join("stranger-ca.pem");
    std::fs::write(&path, params.self_signed(&key).unwrap().pem()).unwrap();
    path.display().to_string()
}

#[test]
fn a_root_that_did_not_sign_the_server_certificate_exits_3_not_trusted() {
    machine_server_with_tls();
    let dir = tempfile::tempdir().unwrap();
    let ca = stranger_ca(dir.path());
    for mode in ["verify-ca", "verify-full", "require"] {
        let (r, _home) =
            run_url(&format!("postgres://root@localhost:5432/postgres?sslmode={mode}&sslrootcert={ca}"), &[]);
        assert_eq!(r.code, 3, "{mode}: {}\n{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("certificate is not trusted") && r.stderr.contains(&ca),
            "{mode}: names the root file used: {}",
            r.stderr
        );
    }
}

#[test]
fn an_unknown_sslmode_exits_2_listing_the_accepted_values() {
    let (r, _home) = run_url("postgres://root@localhost:5432/postgres?sslmode=verify_full", &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("verify_full")
            && r.stderr.contains("disable, allow, prefer, require, verify-ca, verify-full"),
        "{}",
        r.stderr
    );
    let (r, _home) = run_url("postgres://root@localhost:5432/postgres", &[("PGSSLMODE", "strict")]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("PGSSLMODE"), "says where the value came from: {}", r.stderr);
}

#[test]
fn a_missing_certificate_file_exits_2_naming_it_and_its_parameter() {
    let (r, _home) =
        run_url("postgres://root@localhost:5432/postgres?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem", &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("/nonexistent/ca.pem") && r.stderr.contains("sslrootcert"), "{}", r.stderr);
    let (r, _home) =
        run_url("postgres://root@localhost:5432/postgres?sslmode=require", &[("PGSSLKEY", "/nonexistent/k")]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("/nonexistent/k") && r.stderr.contains("PGSSLKEY"), "{}", r.stderr);
    // A verifying mode needs a root file; with none anywhere, the message says where to put one.
    let (r, _home) = run_url("postgres://root@localhost:5432/postgres?sslmode=verify-ca", &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("sslrootcert") && r.stderr.contains(".postgresql/root.crt"), "{}", r.stderr);
}

#[test]
fn an_ephemeral_cluster_with_tls_runs_a_scenario_over_verify_full() {
    let s = repo("scenarios/skip-locked.toml");
    let mut args = vec!["run", s.to_str().unwrap(), "--tls"];
    args.extend(SMALL);
    let r = queuebench_env(&args, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let summary = r.summary();
    let tls = &summary["database"]["tls"];
    assert_eq!(tls["used"], true, "{tls}");
    assert_eq!(tls["sslmode"], "verify-full", "{tls}");
    assert_eq!(tls["checks"], "chain and host name", "{tls}");
    let errors = schema_errors(&summary);
    assert!(errors.is_empty(), "summary.json does not match the schema:\n{}", errors.join("\n"));
    no_key_material(&r.out);
    r.assert_clean();
    // The scenario key does the same.
    let mut args = vec!["run", s.to_str().unwrap(), "--set", "postgres.tls=true"];
    args.extend(SMALL);
    let r = queuebench_env(&args, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["database"]["tls"]["used"], true);
    r.assert_clean();
}

/// With `--tls` the cluster listens on localhost, where every user of the machine can reach
/// it: the port lets in only the run's client certificate (pg_hba `hostssl … cert`), never
/// `trust`. The URL `cluster --tls` hands its command carries the certificate and gets in; the
/// same server without it, or without TLS, is refused, and the sqlx pool presents it too.
#[test]
fn the_tls_cluster_lets_in_only_the_runs_client_certificate() {
    let script = r#"
        psql -X -At "$DATABASE_URL" -c "SELECT 'with the certificate: in'" || exit 10
        base=${DATABASE_URL%%\?*}
        root=$(printf '%s' "$DATABASE_URL" | sed -n 's/.*sslrootcert=\([^&]*\).*/\1/p')
        if psql -X -At "$base?sslmode=verify-full&sslrootcert=$root" -c 'SELECT 1' 2> without.txt; then exit 11; fi
        if psql -X -At "$base?sslmode=disable" -c 'SELECT 1' 2> plain.txt; then exit 12; fi
        cat without.txt plain.txt
    "#;
    let tmp = tempfile::tempdir().unwrap();
    let o = common::bin()
        .args(["cluster", "--tls", "--", "sh", "-c", script])
        .current_dir(tmp.path())
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("with the certificate: in"), "{text}");
    assert!(text.contains("certificate") && text.contains("no pg_hba.conf entry"), "{text}");
    let s = repo("scenarios/sqlx-pool-exhaustion.toml");
    let r =
        queuebench_env(&["run", s.to_str().unwrap(), "--tls", "--set", "jobs.preload=300", "--set", "expect={}"], &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["database"]["tls"]["used"], true);
    no_key_material(&r.out);
    r.assert_clean();
}

#[test]
fn tls_with_a_database_url_is_refused_with_exit_2() {
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench_env(
        &["run", s.to_str().unwrap(), "--tls", "--database-url", "postgres://root@localhost:5432/postgres"],
        &[],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--tls") && r.stderr.contains("sslmode"), "{}", r.stderr);
}

#[test]
fn the_sqlx_pool_connects_with_tls_too() {
    machine_server_with_tls();
    let home = tempfile::tempdir().unwrap();
    let s = repo("scenarios/sqlx-pool-exhaustion.toml");
    let url = format!("postgres://root@localhost:5432/postgres?sslmode=verify-full&sslrootcert={SNAKEOIL}");
    let r = queuebench_env(
        &[
            "run",
            s.to_str().unwrap(),
            "--database-url",
            &url,
            "--set",
            "jobs.preload=300",
            "--set",
            "expect={ \"jobs.completed\" = \"== 300\" }",
        ],
        &[("HOME", home.path().to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["database"]["tls"]["used"], true);
    // The pool's own connections (application_name names the run's schema) were encrypted:
    // checked through the server's view while the run was going is racy, so the pool is made to
    // fail instead when its TLS is wrong: sslmode=verify-full with a stranger's root is refused
    // before any worker starts (the admin connection fails first, exit 3).
    let dir = tempfile::tempdir().unwrap();
    let ca = stranger_ca(dir.path());
    let url = format!("postgres://root@localhost:5432/postgres?sslmode=verify-full&sslrootcert={ca}");
    let r = queuebench_env(
        &["run", s.to_str().unwrap(), "--database-url", &url, "--set", "jobs.preload=30", "--set", "expect={}"],
        &[("HOME", home.path().to_str().unwrap())],
    );
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
}

/// Every file of a run folder, as text.
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push((p.display().to_string(), String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()));
        }
    }
    out
}

fn no_key_material(run: &Path) {
    let all = files(run);
    assert!(all.len() > 5, "the run folder was written");
    for (path, text) in all {
        assert!(!text.contains("PRIVATE KEY") && !text.contains("-----BEGIN"), "PEM material in {path}");
    }
}

#[test]
fn a_password_in_a_tls_url_never_appears_and_no_key_material_is_written() {
    machine_server_with_tls();
    const PASSWORD: &str = "Tls-Sekr1t-qb-4Kq";
    let url = format!("postgres://root:{PASSWORD}@localhost:5432/postgres?sslmode=verify-full&sslrootcert={SNAKEOIL}");
    let (r, _home) = run_url(&url, &[("RUST_LOG", "debug")]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("root:***@localhost"), "{}", r.stdout);
    assert!(!r.stdout.contains(PASSWORD) && !r.stderr.contains(PASSWORD), "the password leaked to the terminal");
    for (path, text) in files(&r.out) {
        assert!(!text.contains(PASSWORD), "the password leaked into {path}");
    }
    no_key_material(&r.out);
    // A TLS failure's message does not carry it either.
    let url = format!("postgres://root:{PASSWORD}@127.0.0.1:5432/postgres?sslmode=verify-full&sslrootcert={SNAKEOIL}");
    let (r, _home) = run_url(&url, &[]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains(PASSWORD) && !r.stderr.contains(PASSWORD), "{}", r.stderr);
}

/// A real PostgreSQL on localhost without TLS (ssl = off): initdb into a temp dir and start
/// `postgres` on a free port, as the `postgres` user when running as root (initdb refuses root).
/// Stopped (and the directory removed) on drop.
struct PlainServer {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl PlainServer {
    fn start() -> PlainServer {
        let bindir = std::process::Command::new("pg_config").arg("--bindir").output().expect("pg_config is installed");
        let bindir = std::path::PathBuf::from(String::from_utf8_lossy(&bindir.stdout).trim());
        let dir = tempfile::Builder::new().prefix("qbt-plain").tempdir_in("/tmp").unwrap();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let id = |flag: &str| -> u32 {
            let o = std::process::Command::new("id").args([flag, "postgres"]).output().unwrap();
            String::from_utf8_lossy(&o.stdout).trim().parse().expect("a postgres system user")
        };
        let owner = root.then(|| (id("-u"), id("-g")));
        let as_owner = |program: &Path| {
            use std::os::unix::process::CommandExt;
            let mut c = std::process::Command::new(program);
            if let Some((uid, gid)) = owner {
                c.uid(uid).gid(gid);
            }
            c.current_dir(dir.path());
            c
        };
        if root {
            let ok = std::process::Command::new("chown").args(["postgres:", dir.path().to_str().unwrap()]).status();
            assert!(ok.unwrap().success(), "chown the plain server's directory to postgres");
        }
        let data = dir.path().join("data");
        let o = as_owner(&bindir.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "--no-instructions"])
            .output()
            .unwrap();
        assert!(o.status.success(), "initdb: {}", String::from_utf8_lossy(&o.stderr));
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = as_owner(&bindir.join("postgres"))
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(dir.path())
            .args(["-p", &port.to_string(), "-c", "listen_addresses=localhost", "-c", "ssl=off"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let server = PlainServer { child, port, _dir: dir };
        for _ in 0..200 {
            let ready = std::process::Command::new("pg_isready")
                .args(["-q", "-h", "localhost", "-p", &port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the plain server on port {port} did not start");
    }
}

impl Drop for PlainServer {
    fn drop(&mut self) {
        // SAFETY: SIGINT (fast shutdown) to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

#[test]
fn sslmode_require_against_a_server_without_tls_exits_3_saying_so() {
    let server = PlainServer::start();
    let base = format!("postgres://postgres@localhost:{}/postgres", server.port);
    let (r, _home) = run_url(&format!("{base}?sslmode=require"), &[]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("the server does not offer TLS") && r.stderr.contains("sslmode=require"), "{}", r.stderr);
    assert!(!r.stderr.contains("is the server running"), "{}", r.stderr);
    // prefer (the default) falls back to a plain connection, and summary.json says so.
    let (r, _home) = run_url(&base, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let tls = &r.summary()["database"]["tls"];
    assert_eq!(tls["used"], false, "{tls}");
    assert_eq!(tls["sslmode"], "prefer", "{tls}");
    assert!(r.summary()["fingerprint"].get("tls").is_none(), "a plain run's fingerprint has no tls");
    assert!(r.stdout.contains("no TLS (sslmode prefer)"), "{}", r.stdout);
}

/// Client certificates: `queuebench cluster --tls`, a client CA of the test's own that the
/// server trusts too (added to its `ssl_ca_file`), and a role that logs in by certificate only
/// (`hostssl … cert`).
const CLIENT_CERT_SCRIPT: &str = r#"
set -u
ROOT=$(printf '%s' "$DATABASE_URL" | sed -n 's/.*sslrootcert=\([^&]*\).*/\1/p')
DIR=$(dirname "$ROOT")
# The cluster's own URL carries the run's client certificate (CN postgres); alice brings her own.
BASE="${DATABASE_URL%%\?*}?sslmode=verify-full&sslrootcert=$ROOT"
HBA=$(psql -XAt "$DATABASE_URL" -c 'SHOW hba_file')
ssl() { openssl "$@" 2>/dev/null; }
ssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=client CA" -keyout "$OUT/client-ca.key" -out "$DIR/client-ca.crt" || exit 7
[ "$(id -u)" = 0 ] && chown postgres: "$DIR/client-ca.crt"
ssl req -newkey rsa:2048 -nodes -subj "/CN=alice" -keyout "$OUT/alice.key" -out "$OUT/alice.csr" || exit 7
printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n' > "$OUT/client.ext"
ssl x509 -req -days 1 -in "$OUT/alice.csr" -CA "$DIR/client-ca.crt" -CAkey "$OUT/client-ca.key" -CAcreateserial \
  -extfile "$OUT/client.ext" -out "$OUT/alice.crt" || exit 7
ssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=alice" -keyout "$OUT/stranger.key" -out "$OUT/stranger.crt" || exit 7
# The server trusts the cluster's CA (ssl_ca_file, set on its command line); the test's client
# CA joins that file, and the reload below makes the server read it again.
cat "$DIR/client-ca.crt" >> "$ROOT" || exit 8
psql -Xq "$DATABASE_URL" -v ON_ERROR_STOP=1 \
  -c "CREATE ROLE alice LOGIN" -c "GRANT CREATE ON DATABASE postgres TO alice" \
  -c "COPY (SELECT l FROM (VALUES (1, 'local all postgres trust'), (2, 'hostssl all postgres 127.0.0.1/32 trust'), (3, 'hostssl all postgres ::1/128 trust'), (4, 'hostssl all alice 127.0.0.1/32 cert'), (5, 'hostssl all alice ::1/128 cert')) v(n, l) ORDER BY n) TO '$HBA'" \
  -c "SELECT pg_reload_conf()" >/dev/null || exit 9
sleep 0.5
ALICE=${BASE/postgres@/alice@}
run() { # case, url
  mkdir -p "$OUT/$1"
  HOME="$OUT" "$QB" run "$S" --set jobs.preload=20 --set 'expect."jobs.completed"=== 20' --database-url "$2" \
    --out "$OUT/$1/run" >"$OUT/$1/stdout" 2>"$OUT/$1/stderr"
  echo $? > "$OUT/$1/code"
}
run cert "$ALICE&sslcert=$OUT/alice.crt&sslkey=$OUT/alice.key"
run none "$ALICE"
run stranger "$ALICE&sslcert=$OUT/stranger.crt&sslkey=$OUT/stranger.key"
exit 0
"#;

#[test]
fn a_client_certificate_is_presented_and_a_refused_one_is_named() {
    let out = tempfile::tempdir().unwrap();
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let o = common::bin()
        .args(["cluster", "--tls", "--", "bash", "-c", CLIENT_CERT_SCRIPT])
        .env("OUT", out.path())
        .env("QB", env!("CARGO_BIN_EXE_queuebench"))
        .env("S", repo("scenarios/skip-locked.toml"))
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let case = |c: &str, f: &str| std::fs::read_to_string(out.path().join(c).join(f)).unwrap_or_default();
    for (c, code) in [("cert", 0), ("none", 3), ("stranger", 3)] {
        assert_eq!(case(c, "code").trim(), code.to_string(), "{c}: {}{}", case(c, "stdout"), case(c, "stderr"));
    }
    let summary: serde_json::Value = serde_json::from_str(&case("cert", "run/summary.json")).unwrap();
    let tls = &summary["database"]["tls"];
    assert!(tls["client_cert"].as_str().unwrap().ends_with("alice.crt"), "{tls}");
    assert!(
        case("none", "stderr").contains("refused the client certificate (none was given)"),
        "{}",
        case("none", "stderr")
    );
    let stranger = case("stranger", "stderr");
    assert!(stranger.contains("refused the client certificate") && stranger.contains("stranger.crt"), "{stranger}");
    for c in ["cert", "none", "stranger"] {
        no_pem_in(&out.path().join(c));
    }
}

fn no_pem_in(dir: &Path) {
    for (path, text) in files(dir) {
        assert!(!text.contains("-----BEGIN"), "PEM material in {path}");
    }
}
