//! Each process's clock against the server's: several `clock_timestamp()` round trips, the
//! tightest kept (as NTP keeps its best sample). The offset is this clock minus the server's,
//! within ± the bound (half that round trip). Times in a run are aligned to the server's clock
//! through it: every process starts its clock at the same server instant.

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_postgres::Client;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Clock {
    /// This clock minus the server's, µs.
    pub offset_us: i64,
    /// The offset is right within ± this many µs.
    pub bound_us: u64,
}

fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

const SERVER_CLOCK: &str = include_str!("sql/server_clock.sql");
/// `rounds` round trips (at least one), the tightest kept.
pub(crate) async fn measure(client: &Client, rounds: u32) -> Result<Clock, tokio_postgres::Error> {
    let query = client.prepare(SERVER_CLOCK).await?;
    let mut best: Option<Clock> = None;
    for _ in 0..rounds.max(1) {
        let sent = now_us();
        let server: i64 = client.query_one(&query, &[]).await?.get(0);
        let back = now_us();
        let clock =
            Clock { offset_us: (sent + back) / 2 - server, bound_us: ((back - sent).max(0) as u64).div_ceil(2) };
        if best.is_none_or(|b| clock.bound_us < b.bound_us) {
            best = Some(clock);
        }
    }
    Ok(best.expect("at least one round"))
}

impl Clock {
    /// The instant on this machine's monotonic clock when the server's clock reads `server_us`
    /// (µs since the epoch). In the past if that time has gone by.
    pub(crate) fn instant_of(&self, server_us: i64) -> Instant {
        let here_us = server_us + self.offset_us;
        let (now, now_us) = (Instant::now(), now_us());
        let delta = here_us - now_us;
        if delta >= 0 {
            now + Duration::from_micros(delta as u64)
        } else {
            now.checked_sub(Duration::from_micros(delta.unsigned_abs())).unwrap_or(now)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_in_the_future_and_in_the_past() {
        let c = Clock { offset_us: 0, bound_us: 0 };
        let soon = c.instant_of(now_us() + 200_000);
        assert!(soon > Instant::now() + Duration::from_millis(100));
        let ago = c.instant_of(now_us() - 200_000);
        assert!(ago < Instant::now() - Duration::from_millis(100));
        // A clock 1 s ahead of the server reaches the server's "now + 1 s" about 2 s from now.
        let ahead = Clock { offset_us: 1_000_000, bound_us: 0 };
        assert!(ahead.instant_of(now_us() + 1_000_000) > Instant::now() + Duration::from_millis(1500));
    }
}
