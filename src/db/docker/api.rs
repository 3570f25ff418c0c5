//! The few calls to the engine's API that queuebench makes itself, beside testcontainers:
//! is an image in the engine's store (so a local image is never pulled), and remove a
//! container by name (a start that failed half-way, and the second Ctrl-C, which exits at
//! once and so cannot await testcontainers' own removal). Blocking, bounded, plain HTTP/1.0
//! (the engine closes the connection after its answer: no chunked bodies) over the socket of
//! `DOCKER_HOST` (`unix://…`, or `tcp://`/`http://` without TLS). Docker and podman's
//! Docker-compatible service answer these routes alike.

use std::io::{Read, Write};
use std::time::Duration;

/// What an engine call can fail with: the socket, or an answer that is not HTTP.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{host}: {source}")]
    Io { host: String, source: std::io::Error },
    #[error("{host} does not speak HTTP: {start:?}")]
    NotHttp { host: String, start: String },
    #[error("DOCKER_HOST {host}: only unix://, tcp:// and http:// are spoken here (not TLS)")]
    Scheme { host: String },
    #[error("{host}: {request}: {status} {body}")]
    Refused { host: String, request: String, status: u16, body: String },
}

/// The status code and body of one answer.
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// One request, bounded by `timeout` for the connection, the write and each read.
pub fn request(host: &str, method: &str, path: &str, timeout: Duration) -> Result<Answer, ApiError> {
    let io = |source| ApiError::Io { host: host.to_string(), source };
    let head = format!("{method} {path} HTTP/1.0\r\nHost: docker\r\nContent-Length: 0\r\n\r\n");
    let mut raw = Vec::new();
    if let Some(path) = host.strip_prefix("unix://") {
        let mut s = std::os::unix::net::UnixStream::connect(path).map_err(io)?;
        s.set_read_timeout(Some(timeout)).map_err(io)?;
        s.set_write_timeout(Some(timeout)).map_err(io)?;
        s.write_all(head.as_bytes()).map_err(io)?;
        s.read_to_end(&mut raw).map_err(io)?;
    } else if let Some(addr) = host.strip_prefix("tcp://").or_else(|| host.strip_prefix("http://")) {
        let addr = addr.trim_end_matches('/');
        let target = std::net::ToSocketAddrs::to_socket_addrs(addr)
            .map_err(io)?
            .next()
            .ok_or_else(|| io(std::io::Error::other("no address")))?;
        let mut s = std::net::TcpStream::connect_timeout(&target, timeout).map_err(io)?;
        s.set_read_timeout(Some(timeout)).map_err(io)?;
        s.set_write_timeout(Some(timeout)).map_err(io)?;
        s.write_all(head.as_bytes()).map_err(io)?;
        s.read_to_end(&mut raw).map_err(io)?;
    } else {
        return Err(ApiError::Scheme { host: host.to_string() });
    }
    parse(host, &raw)
}

/// `HTTP/1.x NNN …\r\n…\r\n\r\nbody` → the status and the body.
fn parse(host: &str, raw: &[u8]) -> Result<Answer, ApiError> {
    let text = String::from_utf8_lossy(raw);
    let not_http = || ApiError::NotHttp { host: host.to_string(), start: text.chars().take(40).collect() };
    let status = text
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(not_http)?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.trim().to_string()).unwrap_or_default();
    Ok(Answer { status, body })
}

/// Is `image` (NAME:TAG) in the engine's image store? (`GET /images/NAME:TAG/json`: 200 or 404.)
pub fn image_present(host: &str, image: &str) -> Result<bool, ApiError> {
    let answer = request(host, "GET", &format!("/images/{image}/json"), Duration::from_secs(10))?;
    Ok(answer.status == 200)
}

/// Stops and removes the container `name` (force, with its anonymous volumes): Ok(true)
/// removed, Ok(false) there was none.
pub fn remove(host: &str, name: &str) -> Result<bool, ApiError> {
    let path = format!("/containers/{name}?force=true&v=true");
    let answer = request(host, "DELETE", &path, Duration::from_secs(15))?;
    match answer.status {
        200..=299 => Ok(true),
        404 => Ok(false),
        status => Err(ApiError::Refused {
            host: host.to_string(),
            request: format!("DELETE {path}"),
            status,
            body: answer.body,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_into_status_and_body() {
        let a = parse(
            "unix:///s",
            b"HTTP/1.0 404 Not Found\r\nContent-Type: application/json\r\n\r\n{\"message\":\"no such image\"}\n",
        )
        .unwrap();
        assert_eq!((a.status, a.body.as_str()), (404, "{\"message\":\"no such image\"}"));
        let a = parse("unix:///s", b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
        assert_eq!((a.status, a.body.as_str()), (204, ""));
        assert!(parse("unix:///s", b"SSH-2.0-OpenSSH").is_err());
        assert!(parse("unix:///s", b"").is_err());
    }

    #[test]
    fn an_engine_that_is_not_there_is_an_error_naming_it() {
        let e = image_present("unix:///nonexistent/queuebench.sock", "x:1").unwrap_err().to_string();
        assert!(e.starts_with("unix:///nonexistent/queuebench.sock: "), "{e}");
        let e = remove("https://127.0.0.1:2376", "x").unwrap_err().to_string();
        assert!(e.contains("not TLS"), "{e}");
    }
}
