//! The path from an agent's network namespace to PostgreSQL: a TCP forwarder the coordinator
//! runs on the host end of the agent's veth pair, relaying each connection to the server (its
//! TCP address or unix socket, so it works with the ephemeral cluster and with a
//! `--database-url` alike). It also adds the `latency` network fault: every chunk each way
//! waits `delay ± jitter` and leaves in the order it came, while reading goes on (a pipelined
//! stream is delayed, not slowed to one chunk per delay).

use crate::error::{Error, Result};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_postgres::config::Host;

/// The added latency of one agent's path, each way (0: none). Read once per chunk.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    delay_us: AtomicU64,
    jitter_us: AtomicU64,
}

impl Shape {
    pub(crate) fn set(&self, delay: Duration, jitter: Duration) {
        self.jitter_us.store(jitter.as_micros() as u64, Ordering::Relaxed);
        self.delay_us.store(delay.as_micros() as u64, Ordering::Relaxed);
    }

    /// This chunk's delay: uniform in delay ± jitter.
    fn sample(&self, rng: &mut StdRng) -> Duration {
        let (d, j) = (self.delay_us.load(Ordering::Relaxed), self.jitter_us.load(Ordering::Relaxed));
        if d == 0 {
            return Duration::ZERO;
        }
        let spread = if j == 0 { 0 } else { rng.random_range(0..=2 * j) };
        Duration::from_micros(d - j + spread)
    }
}

/// Where the server is, as the coordinator reaches it.
#[derive(Debug, Clone)]
enum Server {
    Tcp(String, u16),
    Unix(PathBuf),
}

impl Server {
    fn of(config: &tokio_postgres::Config) -> Server {
        let port = config.get_ports().first().copied().unwrap_or(5432);
        match config.get_hosts().first() {
            Some(Host::Tcp(h)) => Server::Tcp(h.clone(), port),
            Some(Host::Unix(dir)) => Server::Unix(dir.join(format!(".s.PGSQL.{port}"))),
            None => Server::Unix(PathBuf::from(format!("/var/run/postgresql/.s.PGSQL.{port}"))),
        }
    }
}

/// One agent's forwarder; its connections close when it is dropped.
pub(crate) struct Forwarder {
    pub addr: SocketAddr,
    pub shape: Arc<Shape>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Forwarder {
    /// Listens on `ip` (a free port) and relays to the server `config` names.
    pub(crate) async fn start(ip: Ipv4Addr, config: &tokio_postgres::Config, seed: u64) -> Result<Forwarder> {
        let server = Server::of(config);
        let listener = TcpListener::bind((ip, 0))
            .await
            .map_err(|e| Error::machine(format!("listening on {ip} for an agent's connections"), e))?;
        let addr = listener.local_addr().map_err(|e| Error::machine("reading the forwarder's address", e))?;
        let shape = Arc::new(Shape::default());
        let task = tokio::spawn(accept(listener, server, shape.clone(), seed));
        Ok(Forwarder { addr, shape, task })
    }
}

async fn accept(listener: TcpListener, server: Server, shape: Arc<Shape>, seed: u64) {
    // Owned here: aborting this task drops the set, which aborts every relay.
    let mut relays = JoinSet::new();
    let mut n = 0u64;
    loop {
        tokio::select! {
            Ok((client, _)) = listener.accept() => {
                n += 1;
                let _ = client.set_nodelay(true);
                relays.spawn(relay(client, server.clone(), shape.clone(), seed ^ n.wrapping_mul(0x9E37_79B9)));
            }
            Some(_) = relays.join_next(), if !relays.is_empty() => {}
        }
    }
}

/// One connection, both ways, until either side closes.
async fn relay(client: TcpStream, server: Server, shape: Arc<Shape>, seed: u64) {
    let (cr, cw) = client.into_split();
    match server {
        Server::Tcp(host, port) => {
            let Ok(s) = TcpStream::connect((host.as_str(), port)).await else { return };
            let _ = s.set_nodelay(true);
            let (sr, sw) = s.into_split();
            both(cr, cw, sr, sw, shape, seed).await;
        }
        Server::Unix(path) => {
            let Ok(s) = UnixStream::connect(&path).await else { return };
            let (sr, sw) = s.into_split();
            both(cr, cw, sr, sw, shape, seed).await;
        }
    }
}

async fn both<A, B, C, D>(cr: A, cw: B, sr: C, sw: D, shape: Arc<Shape>, seed: u64)
where
    A: AsyncRead + Unpin + Send + 'static,
    B: AsyncWrite + Unpin + Send + 'static,
    C: AsyncRead + Unpin + Send + 'static,
    D: AsyncWrite + Unpin + Send + 'static,
{
    let up = pump(cr, sw, shape.clone(), seed);
    let down = pump(sr, cw, shape, seed ^ 1);
    // Either way closing ends the connection.
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// One direction. Without latency (and nothing still held) a chunk is written on as soon as
/// it is read, from one buffer: a plain copy. With latency each chunk is held until it is due
/// (read time + delay ± jitter, never before the chunk ahead of it, as TCP delivers), while
/// reading goes on.
async fn pump<R, W>(mut from: R, mut to: W, shape: Arc<Shape>, seed: u64)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut rng = StdRng::seed_from_u64(seed);
    let mut held: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut open = true;
    while open || !held.is_empty() {
        let next_due = held.front().map(|(due, _)| *due);
        tokio::select! {
            read = from.read(&mut buf), if open => {
                let n = match read {
                    Ok(0) | Err(_) => { open = false; continue; }
                    Ok(n) => n,
                };
                let delay = shape.sample(&mut rng);
                if delay.is_zero() && held.is_empty() {
                    if to.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                } else {
                    let last = held.back().map_or(Instant::now(), |(due, _)| *due);
                    held.push_back(((Instant::now() + delay).max(last), buf[..n].to_vec()));
                }
            }
            _ = tokio::time::sleep_until(next_due.unwrap_or_else(Instant::now)), if next_due.is_some() => {
                let (_, chunk) = held.pop_front().expect("a chunk is due");
                if to.write_all(&chunk).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}
