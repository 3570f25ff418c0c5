//! A PostgreSQL server for URL-mode tests: a scratch database per test, dropped when it goes
//! out of scope, and psql to look inside it. `server()` says which server.

use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// The machine's own server, as on the development machines (trust auth, superuser `root`).
const MACHINE: &str = "postgres://root@127.0.0.1:5432";

/// The server, as a URL without a database: `QUEUEBENCH_TEST_SERVER` (`own` forces the private
/// cluster); else the machine's own at 127.0.0.1:5432 when it lets `root` in as a superuser; else
/// a private cluster this test binary starts once, which stops when the binary exits.
pub fn server() -> String {
    static SERVER: OnceLock<String> = OnceLock::new();
    SERVER
        .get_or_init(|| match std::env::var("QUEUEBENCH_TEST_SERVER") {
            Ok(s) if s != "own" => s,
            Ok(_) => own_cluster(),
            Err(_) if machine_server_usable() => MACHINE.into(),
            Err(_) => own_cluster(),
        })
        .clone()
}

fn machine_server_usable() -> bool {
    let sql = "SELECT rolsuper FROM pg_roles WHERE rolname = current_user";
    Command::new("psql")
        .args(["-X", "-q", "-A", "-t", &format!("{MACHINE}/postgres"), "-c", sql])
        .env("PGCONNECT_TIMEOUT", "3")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "t")
}

/// Starts an ephemeral cluster (queuebench's own code) from a thread that never ends, so the
/// postmaster's parent-death signal fires only when the test binary exits; at exit the cluster
/// is stopped and its directory removed.
fn own_cluster() -> String {
    extern "C" fn stop_own_cluster() {
        queuebench::db::emergency_cleanup();
    }
    // SAFETY: registers a plain function to run at process exit.
    unsafe { libc::atexit(stop_own_cluster) };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        match rt.block_on(queuebench::db::Database::open(None, &[], "public".into(), false, true)) {
            Ok(db) => {
                tx.send(Ok(db.url_for_tools().expect("an ephemeral cluster has a socket"))).unwrap();
                loop {
                    std::thread::park();
                    let _ = &db;
                }
            }
            Err(e) => tx.send(Err(e.to_string())).unwrap(),
        }
    });
    let url =
        rx.recv().unwrap().unwrap_or_else(|e| panic!("no usable server at {MACHINE}, and none could be started: {e}"));
    let host = url.split("host=").nth(1).and_then(|h| h.split('&').next()).expect("socket dir in the URL");
    format!("postgresql://postgres@{}:5432", host.replace('/', "%2F"))
}

/// Runs SQL with psql (unaligned, tuples only, stop on the first error); returns stdout.
pub fn psql(url: &str, sql: &str) -> String {
    let o = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url, "-c", sql])
        .env_remove("PGPASSWORD")
        .output()
        .expect("psql is installed");
    assert!(o.status.success(), "psql {url} -c {sql}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A database of its own on the 5432 server, `qb_<tag>_<random>`, dropped on drop.
pub struct ScratchDb {
    pub name: String,
    pub url: String,
}

impl ScratchDb {
    pub fn new(tag: &str) -> ScratchDb {
        let name = format!("qb_{tag}_{:08x}", rand_u32());
        let server = server();
        let o = Command::new("psql")
            .args(["-X", "-q", &format!("{server}/postgres"), "-c", &format!("CREATE DATABASE {name}")])
            .output()
            .expect("psql is installed");
        assert!(
            o.status.success(),
            "could not create a scratch database on {server} (set QUEUEBENCH_TEST_SERVER to a superuser's \
             URL to use another server): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        ScratchDb { url: format!("{server}/{name}"), name }
    }

    /// The database's URL for another user (no password: the server trusts).
    pub fn url_as(&self, user: &str) -> String {
        let server = server();
        let rest = server.split_once("://").map_or(server.as_str(), |(_, r)| r);
        let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        format!("postgres://{user}@{host}/{}", self.name)
    }

    pub fn sql(&self, sql: &str) -> String {
        psql(&self.url, sql)
    }

    /// Schemas named queuebench_* or `extra` in this database.
    pub fn harness_schemas(&self, extra: &str) -> String {
        self.sql(&format!(
            "SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace \
             WHERE nspname LIKE 'queuebench%' OR nspname = '{extra}'"
        ))
        .trim()
        .to_string()
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .args([
                "-X",
                "-q",
                &format!("{}/postgres", server()),
                "-c",
                &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
            ])
            .output();
    }
}

pub fn rand_u32() -> u32 {
    let mut b = [0u8; 4];
    use std::io::Read;
    std::fs::File::open("/dev/urandom").unwrap().read_exact(&mut b).unwrap();
    u32::from_ne_bytes(b)
}

/// A `queuebench run` in the background whose stderr is watched: the receiver gets a
/// message once the progress lines show a job done. Stdout is discarded.
pub fn spawn_watched(mut cmd: Command) -> (Child, Receiver<()>, std::sync::Arc<std::sync::Mutex<String>>) {
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let keep = text.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let done = line.split(" · ").find_map(|p| {
                p.strip_suffix(" completions accepted")
                    .or_else(|| p.strip_suffix(" completion accepted"))?
                    .trim()
                    .parse::<u64>()
                    .ok()
            });
            keep.lock().unwrap().push_str(&format!("{line}\n"));
            if done.is_some_and(|d| d > 0) {
                let _ = tx.send(());
            }
        }
        keep.lock().unwrap().push_str(EOF_MARK);
    });
    (child, rx, text)
}

const EOF_MARK: &str = "\n<end of stderr>";

/// Everything the run printed on stderr, once the process has closed it (waits up to 10 s).
pub fn all_stderr(stderr: &std::sync::Mutex<String>) -> String {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !stderr.lock().unwrap().ends_with(EOF_MARK) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    stderr.lock().unwrap().clone()
}

/// Waits for the run's first completed job (panics after 60 s with what it printed).
pub fn wait_for_progress(rx: &Receiver<()>, stderr: &std::sync::Mutex<String>) {
    assert!(
        rx.recv_timeout(Duration::from_secs(60)).is_ok(),
        "the run never reported jobs done:\n{}",
        stderr.lock().unwrap()
    );
}

pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}
