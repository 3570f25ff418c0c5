//! A PgBouncer of "the user's own" (`--pooler-url`) on 127.0.0.1, in front of the machine's
//! PostgreSQL at 127.0.0.1:5432, in the pool mode a test asks for; stopped when dropped.

use std::time::{Duration, Instant};

/// The machine's PostgreSQL at 127.0.0.1:5432 (trust for root), as tests/tls.rs uses it.
pub const MACHINE: &str = "postgres://root@127.0.0.1:5432/postgres";

/// Runs SQL on [`MACHINE`] with psql; its output, trimmed.
pub fn machine_sql(sql: &str) -> String {
    let o = std::process::Command::new("psql").args(["-X", "-q", "-A", "-t", MACHINE, "-c", sql]).output().unwrap();
    assert!(
        o.status.success(),
        "this test needs the machine's PostgreSQL at 127.0.0.1:5432 (trust for root): {sql}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A running PgBouncer: database `qb` on its port is the machine's `postgres` database,
/// logged in to as the role it was started with.
pub struct OwnPooler {
    child: std::process::Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl OwnPooler {
    /// PgBouncer in `mode` pooling (session, transaction or statement), 4 server connections,
    /// logging in to the server as `role`.
    pub fn start(role: &str, mode: &str) -> OwnPooler {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let ini = format!(
            "[databases]\nqb = host=127.0.0.1 port=5432 dbname=postgres user={role}\n[pgbouncer]\n\
             listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\nauth_type = trust\n\
             auth_file = {d}/userlist.txt\npool_mode = {mode}\ndefault_pool_size = 4\n\
             ignore_startup_parameters = extra_float_digits\n",
            d = dir.path().display()
        );
        std::fs::write(dir.path().join("pgbouncer.ini"), ini).unwrap();
        std::fs::write(dir.path().join("userlist.txt"), "\"root\" \"\"\n").unwrap();
        let ini = dir.path().join("pgbouncer.ini");
        // PgBouncer refuses root, as queuebench's own does: as root it runs as postgres.
        let program = if unsafe { libc::geteuid() } == 0 { "/usr/sbin/pgbouncer" } else { "pgbouncer" };
        let log_path = dir.path().join("pgbouncer.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let mut cmd = super::as_postgres(program);
        let mut child =
            cmd.arg(&ini).current_dir(dir.path()).stdout(log.try_clone().unwrap()).stderr(log).spawn().unwrap();
        // A generous bound: a loaded machine starts it late, which is no failure.
        let limit = Duration::from_secs(60);
        let until = Instant::now() + limit;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "the test's own PgBouncer exited ({status}) before it listened; its log:\n{}",
                    super::log_tail(&log_path, 40)
                );
            }
            assert!(
                Instant::now() < until,
                "the test's own PgBouncer did not listen on 127.0.0.1:{port} within {} s; its log:\n{}",
                limit.as_secs(),
                super::log_tail(&log_path, 40)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        OwnPooler { child, port, _dir: dir }
    }

    /// Its URL for `--pooler-url`, declaring `declared` as its pool mode.
    pub fn url(&self, declared: &str) -> String {
        format!("postgres://root@127.0.0.1:{}/qb?pool_mode={declared}", self.port)
    }
}

impl Drop for OwnPooler {
    fn drop(&mut self) {
        // runuser passes SIGTERM on to pgbouncer.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}
