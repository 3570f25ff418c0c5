//! Passwords never leave the process: not on the terminal, not in any file
//! of the run folder, not in an error. An ephemeral cluster (started with
//! `queuebench cluster`) is switched to scram-sha-256 for a role `alice`, so
//! the password is really checked: it is given in the URL, in PGPASSWORD and
//! in a password file (PGPASSFILE), then wrong, then missing, then sent to a
//! port where nothing listens.

use crate::common;
use common::{bin, repo};
use std::path::Path;

const PASSWORD: &str = "Sekr1t-qb-7Hx";
const WRONG: &str = "Wr0ng-qb-9Pz";

/// Runs under `queuebench cluster`: turns on password auth, then one queuebench run per case,
/// each with its own --out folder and its stdout, stderr and exit code in files under $OUT/<case>.
const SCRIPT: &str = r#"
set -u
DIR=${DATABASE_URL#*host=}; DIR=${DIR%%&*}
HBA=$(psql -XAt "$DATABASE_URL" -c 'SHOW hba_file')
psql -Xq "$DATABASE_URL" -v ON_ERROR_STOP=1 \
  -c "CREATE ROLE alice LOGIN PASSWORD '$PW'" -c "GRANT CREATE ON DATABASE postgres TO alice" \
  -c "COPY (SELECT l FROM (VALUES (1, 'local all postgres trust'), (2, 'local all all scram-sha-256')) v(n, l) ORDER BY n) TO '$HBA'" \
  -c "SELECT pg_reload_conf()" >/dev/null || exit 9
for i in $(seq 100); do PGPASSWORD= psql -Xq "host=$DIR user=alice dbname=postgres" -c '' 2>/dev/null || break; sleep 0.05; done
BASE="postgresql://alice@/postgres?host=$DIR&port=5432"
WITH_PW="postgresql://alice:$PW@/postgres?host=$DIR&port=5432"
WITH_WRONG="postgresql://alice:$WRONG@/postgres?host=$DIR&port=5432"
printf 'localhost:5432:postgres:alice:%s\n' "$PW" > "$OUT/pgpass"; chmod 600 "$OUT/pgpass"
run() { # case, url, extra env...
  c=$1; u=$2; shift 2; mkdir -p "$OUT/$c"
  env -u PGPASSWORD PGPASSFILE=/nonexistent "$@" "$QB" run "$S" --set jobs.preload=20 --set 'expect."jobs.completed"=== 20' \
    --database-url "$u" --out "$OUT/$c/run" >"$OUT/$c/stdout" 2>"$OUT/$c/stderr"
  echo $? > "$OUT/$c/code"
}
# The other password sources through `prepare` (same connection code, no report to render: faster).
prepare() { # case, schema, extra env...
  c=$1; schema=$2; shift 2; mkdir -p "$OUT/$c"
  env -u PGPASSWORD PGPASSFILE=/nonexistent "$@" "$QB" prepare "$S" --set jobs.preload=20 --schema "$schema" \
    --database-url "$BASE" >"$OUT/$c/stdout" 2>"$OUT/$c/stderr"
  echo $? > "$OUT/$c/code"
}
run url "$WITH_PW"
prepare pgpassword from_env PGPASSWORD="$PW"
prepare pgpassfile from_file PGPASSFILE="$OUT/pgpass"
chmod 644 "$OUT/pgpass"
prepare pgpassfile_open from_open_file PGPASSFILE="$OUT/pgpass"
# Diagnostics at their most verbose (every statement with its parameters, the driver's own
# records), to a --log file and to stderr, and for a refused password.
mkdir -p "$OUT/traced_file"
env -u PGPASSWORD PGPASSFILE=/nonexistent RUST_LOG=trace "$QB" --log "$OUT/traced_file/queuebench.log" run "$S" \
  --set jobs.preload=20 --set 'expect."jobs.completed"=== 20' --database-url "$WITH_PW" --out "$OUT/traced_file/run" >"$OUT/traced_file/stdout" 2>"$OUT/traced_file/stderr"
echo $? > "$OUT/traced_file/code"
run traced_stderr "$WITH_PW" RUST_LOG=trace
run traced_wrong "$WITH_WRONG" RUST_LOG=trace
prepare traced_pgpassword traced_env PGPASSWORD="$PW" RUST_LOG=trace
run wrong "$WITH_WRONG"
run wrong_env "$BASE" PGPASSWORD="$WRONG"
run missing "$BASE"
run unreachable "postgresql://alice:$PW@127.0.0.1:1/postgres"
exit 0
"#;

/// Every file under `dir` (recursively), as text.
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

#[test]
fn passwords_from_url_env_and_pgpass_never_appear_in_output_files_or_errors() {
    let out = tempfile::tempdir().unwrap();
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let o = bin()
        .args(["cluster", "--", "bash", "-c", SCRIPT])
        .env("OUT", out.path())
        .env("QB", env!("CARGO_BIN_EXE_queuebench"))
        .env("S", repo("scenarios/skip-locked.toml"))
        .env("PW", PASSWORD)
        .env("WRONG", WRONG)
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .env_remove("PGPASSWORD")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let case = |c: &str, f: &str| std::fs::read_to_string(out.path().join(c).join(f)).unwrap_or_default();
    for (c, code) in [
        ("url", 0),
        ("pgpassword", 0),
        ("pgpassfile", 0),
        ("pgpassfile_open", 3),
        ("wrong", 3),
        ("wrong_env", 3),
        ("missing", 3),
        ("unreachable", 3),
        ("traced_file", 0),
        ("traced_stderr", 0),
        ("traced_wrong", 3),
        ("traced_pgpassword", 0),
    ] {
        assert_eq!(case(c, "code").trim(), code.to_string(), "{c}: {}{}", case(c, "stdout"), case(c, "stderr"));
    }
    let summary: serde_json::Value = serde_json::from_str(&case("url", "run/summary.json")).unwrap();
    let url = summary["database"]["url"].as_str().unwrap().to_string();
    assert!(
        url.starts_with("postgres://alice:***@/postgres?host="),
        "the report shows the URL, password replaced: {url}"
    );
    assert!(case("url", "run/report.html").contains("postgres://alice:***@"), "report.html shows the redacted URL");
    assert!(case("url", "stdout").contains("postgres://alice:***@"), "so does the terminal: {}", case("url", "stdout"));
    for (c, schema) in [("pgpassword", "from_env"), ("pgpassfile", "from_file")] {
        assert!(
            case(c, "stdout").contains(&format!("schema {schema} ready with 20 jobs")),
            "{c}: {}",
            case(c, "stdout")
        );
    }
    let open = case("pgpassfile_open", "stderr");
    assert!(open.contains("has group or world access and is ignored") && open.contains("chmod 0600"), "{open}");
    for c in ["wrong", "wrong_env"] {
        assert!(
            case(c, "stderr").contains("password authentication failed for user \"alice\""),
            "{}",
            case(c, "stderr")
        );
        assert!(case(c, "stderr").contains("PGPASSWORD"), "says where passwords come from: {}", case(c, "stderr"));
    }
    assert!(case("wrong", "stderr").contains("the password used came from the URL"), "{}", case("wrong", "stderr"));
    assert!(
        case("wrong_env", "stderr").contains("the password used came from PGPASSWORD"),
        "{}",
        case("wrong_env", "stderr")
    );
    assert!(case("missing", "stderr").contains("asks for a password"), "{}", case("missing", "stderr"));
    assert!(case("unreachable", "stderr").contains("127.0.0.1:1"), "{}", case("unreachable", "stderr"));
    // The diagnostics were really written (so their check below means something): connections
    // with the server's redacted URL, and statements with their parameters.
    let log = case("traced_file", "queuebench.log");
    for want in
        ["connected", "server=postgres://alice:***@", "step=\"claim\"", "params={:batch: 1", "step=\"complete\""]
    {
        assert!(log.contains(want), "the --log file lacks {want:?}:\n{}", &log[..log.len().min(3000)]);
    }
    assert!(!case("traced_file", "stderr").contains("TRACE"), "with --log the events go to the file only");
    let traced = case("traced_stderr", "stderr");
    assert!(traced.contains("step=\"complete\"") && traced.contains("alice:***@"), "RUST_LOG alone writes to stderr");
    assert!(case("traced_pgpassword", "stderr").contains("alice:***@"), "{}", case("traced_pgpassword", "stderr"));
    let mut checked = 0;
    for (path, text) in files(out.path()) {
        if path.ends_with("/pgpass") {
            continue;
        }
        assert!(!text.contains(PASSWORD) && !text.contains(WRONG), "a password leaked into {path}:\n{text}");
        checked += 1;
    }
    assert!(checked > 25, "the run folders were written ({checked} files checked)");
    let own = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!own.contains(PASSWORD) && !own.contains(WRONG), "{own}");
    common::queuebench(&["validate", repo("scenarios/skip-locked.toml").to_str().unwrap()]);
    assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none(), "the cluster's directory was removed");
}

/// The TLS variant: `queuebench cluster --tls` (verify-full against the cluster's own CA), a role
/// `alice` whose password is checked (scram-sha-256) and a pg_hba.conf that takes only TLS
/// (`hostssl`). The run's outputs carry neither the password nor key material.
const TLS_SCRIPT: &str = r#"
set -u
HBA=$(psql -XAt "$DATABASE_URL" -c 'SHOW hba_file')
psql -Xq "$DATABASE_URL" -v ON_ERROR_STOP=1 \
  -c "CREATE ROLE alice LOGIN PASSWORD '$PW'" -c "GRANT CREATE ON DATABASE postgres TO alice" \
  -c "COPY (SELECT l FROM (VALUES (1, 'local all postgres trust'), (2, 'hostssl all postgres 127.0.0.1/32 trust'), (3, 'hostssl all postgres ::1/128 trust'), (4, 'hostssl all alice 127.0.0.1/32 scram-sha-256'), (5, 'hostssl all alice ::1/128 scram-sha-256')) v(n, l) ORDER BY n) TO '$HBA'" \
  -c "SELECT pg_reload_conf()" >/dev/null || exit 9
sleep 0.5
WITH_PW=${DATABASE_URL/postgres@/alice:$PW@}
WITH_WRONG=${DATABASE_URL/postgres@/alice:$WRONG@}
run() { # case, url, extra env...
  c=$1; u=$2; shift 2; mkdir -p "$OUT/$c"
  env -u PGPASSWORD PGPASSFILE=/nonexistent "$@" "$QB" run "$S" --set jobs.preload=20 --set 'expect."jobs.completed"=== 20' \
    --database-url "$u" --out "$OUT/$c/run" >"$OUT/$c/stdout" 2>"$OUT/$c/stderr"
  echo $? > "$OUT/$c/code"
}
run tls "$WITH_PW"
run tls_traced "$WITH_PW" RUST_LOG=trace
run tls_wrong "$WITH_WRONG"
run plain "${WITH_PW/sslmode=verify-full/sslmode=disable}"
run allow "${WITH_PW/sslmode=verify-full/sslmode=allow}"
exit 0
"#;

#[test]
fn a_password_in_a_tls_url_is_checked_over_tls_and_never_appears() {
    let out = tempfile::tempdir().unwrap();
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let o = bin()
        .args(["cluster", "--tls", "--", "bash", "-c", TLS_SCRIPT])
        .env("OUT", out.path())
        .env("QB", env!("CARGO_BIN_EXE_queuebench"))
        .env("S", repo("scenarios/skip-locked.toml"))
        .env("PW", PASSWORD)
        .env("WRONG", WRONG)
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .env_remove("PGPASSWORD")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let case = |c: &str, f: &str| std::fs::read_to_string(out.path().join(c).join(f)).unwrap_or_default();
    for (c, code) in [("tls", 0), ("tls_traced", 0), ("tls_wrong", 3), ("plain", 3), ("allow", 0)] {
        assert_eq!(case(c, "code").trim(), code.to_string(), "{c}: {}{}", case(c, "stdout"), case(c, "stderr"));
    }
    let summary: serde_json::Value = serde_json::from_str(&case("tls", "run/summary.json")).unwrap();
    assert_eq!(summary["database"]["tls"]["used"], true, "{}", summary["database"]);
    assert_eq!(summary["database"]["tls"]["sslmode"], "verify-full");
    let url = summary["database"]["url"].as_str().unwrap();
    assert!(url.starts_with("postgres://alice:***@localhost:") && url.contains("sslmode=verify-full"), "{url}");
    assert!(case("tls_wrong", "stderr").contains("password authentication failed"), "{}", case("tls_wrong", "stderr"));
    // pg_hba.conf takes only TLS: the plain login is turned away (by the server, not by a TLS
    // check), and allow gets in with TLS after it.
    assert!(case("plain", "stderr").contains("no encryption"), "{}", case("plain", "stderr"));
    let allow: serde_json::Value = serde_json::from_str(&case("allow", "run/summary.json")).unwrap();
    assert_eq!(allow["database"]["tls"]["used"], true, "allow retried with TLS: {}", allow["database"]);
    let mut checked = 0;
    for (path, text) in files(out.path()) {
        assert!(!text.contains(PASSWORD) && !text.contains(WRONG), "a password leaked into {path}:\n{text}");
        assert!(!text.contains("PRIVATE KEY") && !text.contains("-----BEGIN"), "PEM material in {path}");
        checked += 1;
    }
    assert!(checked > 20, "the run folders were written ({checked} files checked)");
    let own = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!own.contains(PASSWORD) && !own.contains(WRONG), "{own}");
    assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none(), "the cluster's directory was removed");
}
