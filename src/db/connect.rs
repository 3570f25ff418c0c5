//! Opening a connection and driving it: the one way every task of a run connects.
//!
//! Over a Unix socket the connection waits for the server the way libpq (and so
//! pgbench) does: for input only. tokio's `UnixStream` registers the socket with
//! epoll for reads *and* writes, and Linux signals a Unix socket writable every
//! time the peer reads from it, so a client that sends a statement and sleeps
//! is woken once when the backend reads the statement and again when the
//! answer arrives. Measured at 2 connections, zero work (see README
//! "Performance"): 2.7 context switches per job against pgbench's 2.0, and
//! 0.72–0.88 of pgbench's jobs/s; over TCP, where no such wakeup exists, the
//! harness was at 1.08. [`ReadWait`] registers the socket for reads only and
//! writes without waiting; only a write that finds the socket's buffer full
//! registers a second descriptor of the socket for writability, until the
//! write goes through.
//!
//! Each host of the settings is tried on its own, in order (`db::hosts`): its whole login —
//! TCP or socket, TLS, startup, authentication, the `target_session_attrs` check and the
//! harness's `SET statement_timeout` — bounded by `connect_timeout` (30 s without one), the
//! next host tried on a timeout or an error. A Unix socket goes through [`ReadWait`]; TCP
//! through `Config::connect` for that one host. A Unix socket that cannot be reached at all
//! falls back to `Config::connect` too, so a missing server gets tokio-postgres's own error
//! and wording; a server that answers and refuses (authentication, too many clients,
//! starting up) is not asked twice.

use super::Endpoint;
use super::hosts::{self, Attempt, Failure, Outcome, TargetSession};
use super::tls::SslMode;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_postgres::config::Host;
use tokio_postgres::config::SslMode as DriverSslMode;
use tokio_postgres::{AsyncMessage, Client, Config, Connection, NoTls, Notification};

/// Connects like `Config::connect` with the endpoint's TLS (src/db/tls/: libpq's sslmode
/// rules; a Unix socket is always plain), host by host as the module docs say, and spawns
/// the task that drives the connection until it closes, handing every asynchronous message
/// (NOTIFY, NOTICE) to `on_message`. Aborting the task drops the socket without a
/// Terminate message, as a crashed process would. TLS costs only here, at connect: the
/// rustls configuration was built once when the target was opened.
pub(crate) async fn open<F>(endpoint: &Endpoint, on_message: F) -> Result<(Client, JoinHandle<()>), Failure>
where
    F: FnMut(AsyncMessage) + Send + 'static,
{
    find(endpoint, on_message).await.map(|(client, task, _)| (client, task))
}

/// The endpoint narrowed to the host a connection would use now ([`open`]'s choice), for a
/// client that knows one host only (the sqlx pool).
pub(crate) async fn choose(endpoint: &Endpoint) -> Result<Endpoint, Failure> {
    let (_client, _task, i) = find(endpoint, |_| {}).await?;
    let config = hosts::one(&endpoint.config, i);
    Ok(Endpoint { config, session: TargetSession::Any, ..endpoint.clone() })
}

/// [`open`], and which host (its index in the settings) the connection went to.
async fn find<F>(endpoint: &Endpoint, on_message: F) -> Result<(Client, JoinHandle<()>, usize), Failure>
where
    F: FnMut(AsyncMessage) + Send + 'static,
{
    let config = &endpoint.config;
    let limit = hosts::connect_timeout(config);
    let session = endpoint.session.or_driver(config.get_target_session_attrs());
    let mut on_message = Some(on_message);
    let mut tried = Vec::new();
    let opened = 'found: {
        // One pass, or two for prefer-standby: the second goes back to the hosts that logged
        // in and were not standbys.
        let mut hosts = hosts::order(config);
        for &want in session.passes() {
            let mut logged_in = Vec::new();
            for i in hosts {
                let one = hosts::one(config, i);
                match tokio::time::timeout(limit, attempt(endpoint, &one, want, &mut on_message)).await {
                    Ok(Ok((client, task))) => break 'found Ok((client, task, i)),
                    Ok(Err(outcome)) => {
                        if matches!(outcome, Outcome::Unfit(_)) {
                            logged_in.push(i);
                        }
                        tried.push(Attempt { host: hosts::name(config, i), outcome });
                    }
                    Err(_) => tried.push(Attempt { host: hosts::name(config, i), outcome: Outcome::TimedOut }),
                }
            }
            hosts = logged_in;
        }
        Err(Failure { tried, limit, wanted: session })
    };
    if tracing::enabled!(tracing::Level::DEBUG) {
        let server = super::password::display_url(config);
        match &opened {
            Ok(_) => tracing::debug!(%server, "connection opened"),
            Err(e) => tracing::debug!(%server, error = %e, "connection failed"),
        }
    }
    opened
}

/// One host (`config` names only it): log in, check it is `want`, set the endpoint's
/// statement_timeout; then the driving task takes `on_message`.
async fn attempt<F>(
    endpoint: &Endpoint,
    config: &Config,
    want: TargetSession,
    on_message: &mut Option<F>,
) -> Result<(Client, JoinHandle<()>), Outcome>
where
    F: FnMut(AsyncMessage) + Send + 'static,
{
    let settle = Settle { want, statement_timeout: endpoint.statement_timeout };
    if let Some(path) = unix_socket(config)
        && let Ok(stream) = ReadWait::connect(&path).await
    {
        let mut plain = config.clone();
        plain.ssl_mode(DriverSslMode::Disable);
        let (client, connection) = plain.connect_raw(stream, NoTls).await?;
        return settle.then_drive(client, connection, on_message).await;
    }
    let Some(tls) = endpoint.tls.connector() else {
        let (client, connection) = config.connect(NoTls).await?;
        return settle.then_drive(client, connection, on_message).await;
    };
    if endpoint.tls.mode == SslMode::Allow {
        // libpq's allow: plain first; TLS only when the server turned the plain login away.
        match config.connect(NoTls).await {
            Ok((client, connection)) => return settle.then_drive(client, connection, on_message).await,
            Err(e) if e.as_db_error().is_none() => return Err(Outcome::Failed(e)),
            Err(_) => {
                let mut with_tls = config.clone();
                with_tls.ssl_mode(DriverSslMode::Require);
                let (client, connection) = with_tls.connect(tls).await?;
                return settle.then_drive(client, connection, on_message).await;
            }
        }
    }
    let (client, connection) = config.connect(tls).await?;
    settle.then_drive(client, connection, on_message).await
}

/// What is done on a fresh connection before it is handed out.
struct Settle {
    want: TargetSession,
    statement_timeout: Option<Duration>,
}

impl Settle {
    /// Checks the server and sets the statement_timeout, polling the connection meanwhile
    /// (nothing drives it yet); then spawns its driving task.
    async fn then_drive<S, T, F>(
        self,
        client: Client,
        mut connection: Connection<S, T>,
        on_message: &mut Option<F>,
    ) -> Result<(Client, JoinHandle<()>), Outcome>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        F: FnMut(AsyncMessage) + Send + 'static,
    {
        let work = async {
            if self.want != TargetSession::Any {
                let role = hosts::role(&client).await?;
                if !role.fits(self.want) {
                    return Err(Outcome::Unfit(role));
                }
            }
            if let Some(t) = self.statement_timeout {
                client.batch_execute(&format!("SET statement_timeout = {}", t.as_millis().max(1))).await?;
            }
            Ok(())
        };
        tokio::select! {
            done = work => done?,
            ended = &mut connection => return Err(ended.err().map_or(Outcome::Closed, Outcome::Failed)),
        }
        let on_message = on_message.take().expect("only the connection that settles takes it");
        Ok((client, tokio::spawn(drive(connection, on_message))))
    }
}

/// An `on_message` for [`open`] that forwards every NOTIFY to the returned receiver (for a
/// connection that LISTENs); other messages are dropped, and so are notifications once the
/// receiver is gone.
pub(crate) fn notifications() -> (impl FnMut(AsyncMessage) + Send + 'static, UnboundedReceiver<Notification>) {
    let (tx, rx) = unbounded_channel();
    let forward = move |m| {
        if let AsyncMessage::Notification(n) = m {
            let _ = tx.send(n);
        }
    };
    (forward, rx)
}

/// Polls a connection until it closes or fails.
async fn drive<S, T, F>(mut connection: Connection<S, T>, mut on_message: F)
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
    F: FnMut(AsyncMessage),
{
    loop {
        match futures_util::future::poll_fn(|cx| connection.poll_message(cx)).await {
            Some(Ok(message)) => on_message(message),
            Some(Err(e)) => {
                tracing::debug!(error = %super::error_text(&e), "connection ended");
                return;
            }
            None => {
                tracing::debug!("connection closed");
                return;
            }
        }
    }
}

/// The socket file of one host's config (`hosts::one`) when it is a Unix socket directory
/// without a `hostaddr`. Such a connection's cancel token has no socket to send a cancel
/// request to.
fn unix_socket(config: &Config) -> Option<PathBuf> {
    let [Host::Unix(dir)] = config.get_hosts() else { return None };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    config.get_hostaddrs().is_empty().then(|| dir.join(format!(".s.PGSQL.{port}")))
}

/// A Unix stream that waits on epoll for reads only (see the module comment).
pub(crate) struct ReadWait {
    io: AsyncFd<StdUnixStream>,
    /// A second descriptor of the socket, registered for writability only while a write
    /// is blocked on a full buffer.
    write_wait: Option<AsyncFd<OwnedFd>>,
}

impl ReadWait {
    pub(crate) async fn connect(path: &std::path::Path) -> io::Result<ReadWait> {
        let stream = tokio::net::UnixStream::connect(path).await?.into_std()?;
        stream.set_nonblocking(true)?;
        Ok(ReadWait { io: register(stream, Interest::READABLE)?, write_wait: None })
    }
}

/// Registers a descriptor that the value owns for its whole life.
fn register<T: std::os::fd::AsRawFd>(owner: T, interest: Interest) -> io::Result<AsyncFd<T>> {
    // SAFETY: `owner` (a std UnixStream or an OwnedFd) owns an open descriptor, never replaced,
    // closed only when the AsyncFd drops it, and `as_raw_fd` always returns that descriptor.
    Ok(unsafe { AsyncFd::register_with_interest(owner, interest) }?)
}

impl AsyncRead for ReadWait {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.io.poll_read_ready(cx))?;
            let wanted = buf.remaining();
            match guard.try_io(|io| read_into(io.get_ref(), buf)) {
                Ok(Ok(n)) => {
                    // A short read drained the socket: wait for the next edge rather than
                    // learn it from one more read that fails (what tokio's own streams do).
                    if n > 0 && n < wanted {
                        guard.clear_ready();
                    }
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => {}
            }
        }
    }
}

/// One `read(2)` straight into the buffer's unfilled part. The codec hands over
/// kilobytes of uninitialized capacity each time; zeroing them first (as the safe
/// `initialize_unfilled` does) cost more instructions than the rest of a job.
fn read_into(stream: &StdUnixStream, buf: &mut ReadBuf<'_>) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: `unfilled_mut` is only written by read(2), which writes at most `len` bytes
    // and reports how many; exactly those are marked initialized and filled.
    let n = unsafe {
        let unfilled = buf.unfilled_mut();
        let n = libc::read(stream.as_raw_fd(), unfilled.as_mut_ptr().cast(), unfilled.len());
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.assume_init(n as usize);
        n as usize
    };
    buf.advance(n);
    Ok(n)
}

impl AsyncWrite for ReadWait {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            match this.io.get_ref().write(buf) {
                Ok(n) => {
                    this.write_wait = None;
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if this.write_wait.is_none() {
                        let fd = this.io.get_ref().as_fd().try_clone_to_owned()?;
                        this.write_wait = Some(register(fd, Interest::WRITABLE)?);
                    }
                    let wait = this.write_wait.as_ref().expect("registered above");
                    ready!(wait.poll_write_ready(cx))?.clear_ready();
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.io.get_ref().shutdown(std::net::Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A write larger than the socket's buffer blocks, waits for writability
    /// on the second descriptor and completes once the peer reads.
    #[tokio::test]
    async fn a_write_past_a_full_buffer_waits_and_completes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let mut client = ReadWait::connect(&path).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let payload: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
        let expect = payload.clone();
        let reader = tokio::spawn(async move {
            let mut got = vec![0; expect.len()];
            server.read_exact(&mut got).await.unwrap();
            assert!(got == expect, "the bytes arrived changed");
            server.write_all(b"done").await.unwrap();
        });
        client.write_all(&payload).await.unwrap();
        let mut answer = [0; 4];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"done");
        reader.await.unwrap();
        assert!(client.write_wait.is_none(), "the write registration is dropped once the write went through");
    }

    #[tokio::test]
    async fn end_of_stream_reads_zero() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let mut client = ReadWait::connect(&path).await.unwrap();
        drop(listener.accept().await.unwrap());
        let mut buf = [0; 8];
        assert_eq!(client.read(&mut buf).await.unwrap(), 0);
    }
}
