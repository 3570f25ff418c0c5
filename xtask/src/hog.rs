//! A CPU hog beside the runs (stress-ng), bounded twice: it stops by itself after its time
//! budget, and it is killed when dropped, however the task ends.

use crate::error::{Error, Result};
use std::process::{Child, Command, Stdio};

pub struct Hog(Child);

impl Hog {
    /// `stress-ng --cpu WORKERS --timeout SECONDSs`.
    pub fn start(workers: u32, seconds: u64) -> Result<Hog> {
        Command::new("stress-ng")
            .args(["--cpu", &workers.to_string(), "--timeout", &format!("{seconds}s"), "--quiet"])
            .stdin(Stdio::null())
            .spawn()
            .map(Hog)
            .map_err(|_| Error::Usage("stress-ng is not installed; install it with: apt-get install stress-ng".into()))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One CPU worker per core.
pub fn cores() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}
