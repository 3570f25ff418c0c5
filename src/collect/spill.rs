//! An append-only list that keeps at most `CHUNK` items in memory and
//! writes the rest to an unlinked temp file, so what a worker or producer
//! records grows on disk, not in the harness's memory, however long the run.
//! `into_vec` reads everything back once, at the end, for the checkers.
//!
//! The file is created in `TMPDIR` and unlinked at once: it vanishes with the
//! process, even after a SIGKILL, and nothing is left in the results folder.
//! Writes are a few hundred KiB at a time into the page cache. If the file
//! cannot be created or written, items simply stay in memory (a warning says
//! so once): spilling is an optimisation, never a reason to lose evidence.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

/// Items kept in memory before a write.
const CHUNK: usize = 1024;

/// A fixed-size binary form for a record.
pub trait Record: Sized {
    const SIZE: usize;
    fn encode(&self, out: &mut Vec<u8>);
    fn decode(bytes: &[u8]) -> Self;
}

#[derive(Debug)]
pub struct Spill<T> {
    tail: Vec<T>,
    file: Option<File>,
    spilled: usize,
    /// Spilling failed once: keep everything in memory from then on.
    in_memory: bool,
}

impl<T> Default for Spill<T> {
    fn default() -> Self {
        Spill { tail: Vec::new(), file: None, spilled: 0, in_memory: false }
    }
}

impl<T: Record> Spill<T> {
    pub fn new() -> Spill<T> {
        Spill::default()
    }

    pub fn push(&mut self, item: T) {
        self.tail.push(item);
        if self.tail.len() >= CHUNK && !self.in_memory {
            self.flush();
        }
    }

    pub fn len(&self) -> usize {
        self.spilled + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn flush(&mut self) {
        let mut bytes = Vec::with_capacity(self.tail.len() * T::SIZE);
        for item in &self.tail {
            item.encode(&mut bytes);
        }
        let written = match self.file.as_mut() {
            Some(f) => f.write_all(&bytes),
            None => anonymous_file().and_then(|mut f| {
                f.write_all(&bytes)?;
                self.file = Some(f);
                Ok(())
            }),
        };
        match written {
            Ok(()) => {
                self.spilled += self.tail.len();
                self.tail.clear();
            }
            Err(e) => {
                eprintln!("warning: cannot spill run records to TMPDIR ({e}); keeping them in memory");
                self.in_memory = true;
            }
        }
    }

    /// Everything pushed, in order.
    pub fn into_vec(mut self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len());
        if let Some(f) = self.file.as_mut() {
            let mut bytes = Vec::with_capacity(self.spilled * T::SIZE);
            let read = f.seek(SeekFrom::Start(0)).and_then(|_| f.read_to_end(&mut bytes));
            if let Err(e) = read {
                eprintln!("warning: cannot read back spilled run records: {e}");
            }
            out.extend(bytes.chunks_exact(T::SIZE).map(T::decode));
        }
        out.append(&mut self.tail);
        out
    }
}

/// A temp file with no name: removed by the kernel when the handle closes.
fn anonymous_file() -> std::io::Result<File> {
    let dir = std::env::temp_dir();
    for _ in 0..10 {
        let path = dir.join(format!("queuebench-spill-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        match File::options().read(true).write(true).create_new(true).open(&path) {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no unique spill file name"))
}

impl Record for super::Sample {
    const SIZE: usize = 8;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.at_ms.to_le_bytes());
        out.extend_from_slice(&self.us.to_le_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        let word = |r: std::ops::Range<usize>| u32::from_le_bytes(b[r].try_into().unwrap());
        super::Sample { at_ms: word(0..4), us: word(4..8) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_in_order_across_chunks() {
        let mut s = Spill::new();
        let n = CHUNK * 2 + 17;
        for i in 0..n as u32 {
            s.push(super::super::Sample { at_ms: i, us: i * 3 });
        }
        assert_eq!(s.len(), n);
        assert!(s.tail.len() < CHUNK, "most of it went to the file");
        let v = s.into_vec();
        assert_eq!(v.len(), n);
        assert!(v.iter().enumerate().all(|(i, s)| s.at_ms == i as u32 && s.us == s.at_ms * 3));
    }

    #[test]
    fn nothing_pushed_is_nothing_back() {
        assert!(Spill::<super::super::Sample>::new().into_vec().is_empty());
    }
}
