//! Files queuebench reads and writes at its boundary, read and written as untrusted.
//!
//! Reads: every file queuebench reads (a scenario, an adapter, a baseline, a run folder's
//! summary, evidence and history) is a regular file, checked on the opened handle before a
//! byte is read: a FIFO (which would block), a device (`/dev/zero`), a socket, a folder and a
//! pseudo-file of /proc or /sys (`/proc/self/environ` holds every environment variable) are
//! refused with exit 2, naming their kind. Each has a size limit, checked while reading, so a
//! huge file (a doctored run folder, a gzip bomb) is refused instead of filling the machine's
//! memory. A run folder's files are read only inside the folder, never through a symbolic
//! link ([`read_in_folder`]). The refusals and limits are documented in docs/safety.md.
//!
//! Writes: [`write_new`] never follows a symlink. The file is written to a new temporary file
//! (created exclusively, so a planted link at that name is not followed) and renamed over the
//! target (a rename replaces a link, it does not write through it), and a folder on the way
//! that is a symlink is refused: a run folder downloaded from CI is somebody else's input.

use crate::error::{Access, Error, Result};
use std::io::Read;
use std::path::{Component, Path};

/// What a file is, with its limit: the limit and the words of its refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A scenario or adapter file (TOML), and a run folder's `scenario.toml`.
    Scenario,
    /// A `summary.json`, `evidence.json`, a saved baseline.
    Summary,
    /// `history.csv.gz`, `final_state.csv.gz`, and what they unpack to.
    History,
}

impl Kind {
    /// The most bytes read.
    pub(crate) const fn limit(self) -> u64 {
        match self {
            Kind::Scenario => 1 << 20,
            Kind::Summary => 256 << 20,
            Kind::History => 4 << 30,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Scenario => "a scenario or adapter file",
            Kind::Summary => "a summary, evidence or baseline file",
            Kind::History => "a run's history",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Kind::Scenario => "scenarios and adapters",
            Kind::Summary => "summaries, baselines and a run folder's files",
            Kind::History => "histories",
        }
    }
}

/// The limit as people say it (`1 MiB`, `4 GiB`).
pub(crate) fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

fn too_large(path: &Path, kind: Kind, unpacked: bool) -> Error {
    let what = if unpacked { "unpacks to more than" } else { "is larger than" };
    Error::Input {
        path: path.to_path_buf(),
        reason: format!(
            "{what} queuebench reads for {} ({}); is it the file you meant? (limits: docs/safety.md)",
            kind.what(),
            size(kind.limit())
        ),
    }
}

/// Reads at most `kind`'s limit from `from`; more is refused (naming `path`).
fn read_limited(from: impl Read, path: &Path, kind: Kind, unpacked: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    from.take(kind.limit() + 1).read_to_end(&mut out).map_err(|e| {
        if unpacked {
            Error::Input { path: path.to_path_buf(), reason: format!("not gzip: {e}") }
        } else {
            Error::path(Access::Read, path, e)
        }
    })?;
    if out.len() as u64 > kind.limit() {
        return Err(too_large(path, kind, unpacked));
    }
    Ok(out)
}

/// The bytes of `path`, a regular file, refused past `kind`'s limit without reading the rest.
/// A special file (a FIFO, a device, a socket, a folder, a /proc or /sys pseudo-file) is
/// refused before a byte is read ([`open_regular`]).
pub(crate) fn read(path: &Path, kind: Kind) -> Result<Vec<u8>> {
    let file = open_regular(path, kind, Links::Follow)?;
    read_limited(file, path, kind, false)
}

/// The bytes of the file `name` inside the run folder `dir`, never through a symbolic link:
/// neither `name` itself nor a folder on its way inside `dir` may be one (a run folder
/// downloaded from CI is somebody else's input, and report.html is made to be shared).
pub(crate) fn read_in_folder(dir: &Path, name: &str, kind: Kind) -> Result<Vec<u8>> {
    let path = dir.join(name);
    let mut at = dir.to_path_buf();
    for c in Path::new(name).parent().map(|p| p.components()).into_iter().flatten() {
        match c {
            Component::Normal(part) => at.push(part),
            _ => return Err(Error::Input { path, reason: "the name leaves the run folder".into() }),
        }
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(linked(&path, &at));
        }
    }
    let file = open_regular(&path, kind, Links::Refuse)?;
    read_limited(file, &path, kind, false)
}

/// The files of a run folder that `check`, `explain` and `report` read back.
const RUN_INPUTS: [&str; 7] = [
    "summary.json",
    "evidence.json",
    "history.csv.gz",
    "final_state.csv.gz",
    "scenario.toml",
    "timeseries.csv",
    "samples.csv",
];

/// Refuses a run folder in which one of the files queuebench reads back is a symbolic link or
/// a special file, even one the command at hand does not need: such a folder was made by hand,
/// and its files are not the run's. (Each file is checked again on its opened handle when read.)
pub(crate) fn refuse_special_inputs(dir: &Path) -> Result<()> {
    for name in RUN_INPUTS {
        let path = dir.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.file_type().is_symlink() {
            return Err(linked(&path, &path));
        }
        if let Some(what) = special(&meta.file_type()) {
            return Err(not_regular(&path, what, Kind::Summary));
        }
    }
    Ok(())
}

/// Whether opening a path follows a symbolic link at its end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Links {
    Follow,
    Refuse,
}

/// `path` (or `link`, a folder on its way) is a symbolic link.
fn linked(path: &Path, link: &Path) -> Error {
    let which = if link == path { String::new() } else { format!("{} ", link.display()) };
    Error::Input {
        path: path.to_path_buf(),
        reason: format!(
            "{which}is a symbolic link; queuebench reads a run folder's files only as regular files inside the \
             folder, never through a link (put the file itself there)"
        ),
    }
}

/// Opens `path` for reading and checks, on the opened handle (fstat and fstatfs, not a second
/// look at the path), that it is a regular file and not a pseudo-file of /proc or /sys. It is
/// opened non-blocking, so a FIFO without a writer is refused instead of waiting forever; a
/// regular file is then set back to blocking reads.
fn open_regular(path: &Path, kind: Kind, links: Links) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    // A device is refused before it is opened too (opening some has effects: a watchdog
    // starts); what decides is the check on the opened handle below, not this look at the path.
    let look = if links == Links::Follow { std::fs::metadata(path) } else { std::fs::symlink_metadata(path) };
    if let Ok(meta) = look
        && let Some(what) = special(&meta.file_type()).filter(|w| w.ends_with("device"))
    {
        return Err(not_regular(path, what, kind));
    }
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(file) => file,
        Err(e) if links == Links::Refuse && e.raw_os_error() == Some(libc::ELOOP) => return Err(linked(path, path)),
        Err(e) => return Err(Error::path(Access::Read, path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::path(Access::Read, path, e))?;
    if let Some(what) = special(&meta.file_type()).or_else(|| pseudo(&file)) {
        return Err(not_regular(path, what, kind));
    }
    // SAFETY: fcntl on a descriptor this function owns, with flags it read from it.
    let fd = file.as_raw_fd();
    let blocking = unsafe {
        let now = libc::fcntl(fd, libc::F_GETFL);
        now >= 0 && libc::fcntl(fd, libc::F_SETFL, now & !libc::O_NONBLOCK) == 0
    };
    if !blocking {
        return Err(Error::path(Access::Read, path, std::io::Error::last_os_error()));
    }
    Ok(file)
}

fn not_regular(path: &Path, what: &str, kind: Kind) -> Error {
    Error::Input {
        path: path.to_path_buf(),
        reason: format!("is {what}, not a regular file; queuebench reads {} only from regular files", kind.plural()),
    }
}

/// What a file that is not a regular one is, in words (`a FIFO (named pipe)`).
fn special(t: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a special file"
    })
}

/// Kernel pseudo-filesystems: their files say they are regular (of size 0) but hold the state
/// of the system or of a process (`/proc/self/environ` holds every environment variable).
const PSEUDO: [(i64, &str); 10] = [
    (0x9fa0, "a /proc pseudo-file (the kernel's view of a process or of the system)"),
    (0x6265_6572, "a /sys pseudo-file (the kernel's view of the system)"),
    (0x6462_6720, "a debugfs pseudo-file"),
    (0x7472_6163, "a tracefs pseudo-file"),
    (0x0027_e0eb, "a cgroup pseudo-file"),
    (0x6367_7270, "a cgroup pseudo-file"),
    (0x7363_6673, "a securityfs pseudo-file"),
    (0x6e73_6673, "a namespace pseudo-file"),
    (0xcafe_4a11, "a bpf pseudo-file"),
    (0x6265_6570, "a configfs pseudo-file"),
];

/// Whether the opened `file` lives on a kernel pseudo-filesystem (by fstatfs), or its real
/// path is under /proc or /sys (where fstatfs cannot say).
fn pseudo(file: &std::fs::File) -> Option<&'static str> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: fstatfs fills a statfs this function owns, for a descriptor it borrows.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) } == 0 {
        #[allow(clippy::unnecessary_cast)] // f_type's type differs between architectures
        let magic = fs.f_type as i64;
        if let Some((_, what)) = PSEUDO.iter().find(|(m, _)| *m == magic) {
            return Some(what);
        }
    }
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    if real.starts_with("/proc") {
        Some(PSEUDO[0].1)
    } else if real.starts_with("/sys") {
        Some(PSEUDO[1].1)
    } else {
        None
    }
}

/// The text of `path` (UTF-8), refused past `kind`'s limit.
pub fn read_text(path: &Path, kind: Kind) -> Result<String> {
    let bytes = read(path, kind)?;
    String::from_utf8(bytes)
        .map_err(|e| Error::Input { path: path.to_path_buf(), reason: format!("not UTF-8 text: {e}") })
}

/// Unpacks gzip bytes (read from `path`), refused when they unpack past `kind`'s limit.
pub(crate) fn gunzip(gz: &[u8], path: &Path, kind: Kind) -> Result<Vec<u8>> {
    read_limited(flate2::read::GzDecoder::new(gz), path, kind, true)
}

/// Writes `bytes` to `dir/rel` without following a symlink: a symlinked folder on the way is
/// refused, and the file goes through a temporary file created exclusively and renamed over
/// the target (which replaces a link there instead of writing through it).
pub(crate) fn write_new(dir: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
    let path = dir.join(rel);
    let parent = path.parent().unwrap_or(dir);
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(Access::Create, dir, e))?;
    }
    let mut at = dir.to_path_buf();
    for c in Path::new(rel).parent().map(|p| p.components()).into_iter().flatten() {
        match c {
            Component::Normal(name) => at.push(name),
            _ => return Err(Error::path(Access::Write, &path, "the name leaves the output folder")),
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::path(
                    Access::Write,
                    &path,
                    format!("{} is a symbolic link; queuebench writes no file through one", at.display()),
                ));
            }
            Ok(m) if !m.is_dir() => {
                return Err(Error::io(Access::Create, &at, "a file of that name is in the way"));
            }
            Ok(_) => {}
            Err(_) => std::fs::create_dir(&at).map_err(|e| Error::io(Access::Create, &at, e))?,
        }
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = parent.join(format!(".{name}.tmp-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    let written = (|| -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.flush()
    })();
    let result = written
        .map_err(|e| Error::io(Access::Write, &tmp, e))
        .and_then(|()| std::fs::rename(&tmp, &path).map_err(|e| Error::io(Access::RenameTo(path.clone()), &tmp, e)));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_its_limit_is_refused_after_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.toml");
        std::fs::File::create(&big).unwrap().set_len(2 << 20).unwrap();
        let e = read(&big, Kind::Scenario).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Usage);
        let text = e.to_string();
        assert!(text.contains("big.toml") && text.contains("1 MiB"), "{text}");
    }

    #[test]
    fn special_files_are_refused_before_a_read_naming_their_kind() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path of ours.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let link = dir.path().join("environ");
        std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
        for (path, kind) in [
            (fifo.as_path(), "a FIFO (named pipe)"),
            (Path::new("/dev/zero"), "a character device"),
            (Path::new("/proc/self/environ"), "a /proc pseudo-file"),
            (link.as_path(), "a /proc pseudo-file"),
            (Path::new("/sys/kernel/mm/transparent_hugepage/enabled"), "a /sys pseudo-file"),
            (dir.path(), "a folder"),
        ] {
            if !path.exists() {
                continue;
            }
            let e = read(path, Kind::Scenario).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::ExitCode::Usage);
            let text = e.to_string();
            assert!(text.contains(&format!("is {kind}")) && text.contains("not a regular file"), "{text}");
        }
        std::fs::write(dir.path().join("ok.toml"), "a = 1").unwrap();
        assert_eq!(read(&dir.path().join("ok.toml"), Kind::Scenario).unwrap(), b"a = 1");
    }

    #[test]
    fn a_run_folder_file_is_never_read_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
        std::fs::write(dir.path().join("summary.json"), "{}").unwrap();
        assert_eq!(read_in_folder(dir.path(), "summary.json", Kind::Summary).unwrap(), b"{}");
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("scenario.toml")).unwrap();
        let e = read_in_folder(dir.path(), "scenario.toml", Kind::Scenario).unwrap_err().to_string();
        assert!(e.contains("scenario.toml") && e.contains("symbolic link") && !e.contains("s3cret"), "{e}");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("repeat-1")).unwrap();
        let e = read_in_folder(dir.path(), "repeat-1/secret", Kind::Scenario).unwrap_err().to_string();
        assert!(e.contains("repeat-1 is a symbolic link"), "{e}");
    }

    #[test]
    fn a_gzip_bomb_is_refused_while_unpacking() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..3 {
            enc.write_all(&zeros).unwrap();
        }
        let gz = enc.finish().unwrap();
        assert!(gz.len() < 1 << 20);
        let e = gunzip(&gz, Path::new("h.csv.gz"), Kind::Scenario).unwrap_err().to_string();
        assert!(e.contains("unpacks to more than") && e.contains("h.csv.gz"), "{e}");
        assert_eq!(gunzip(&gz, Path::new("h"), Kind::Summary).unwrap().len(), 3 << 20);
    }

    #[test]
    fn writes_replace_a_link_and_refuse_a_linked_folder() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("precious");
        std::fs::write(&target, "mine").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("report.html")).unwrap();
        write_new(dir.path(), "report.html", b"report").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(dir.path().join("report.html")).unwrap(), "report");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("charts")).unwrap();
        let e = write_new(dir.path(), "charts/a.svg", b"x").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!outside.path().join("a.svg").exists());
        write_new(dir.path(), "sub/deeper/b.txt", b"b").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("sub/deeper/b.txt")).unwrap(), "b");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().contains(".tmp-")), "{left:?}");
    }

    #[test]
    fn sizes_are_said_in_binary_units() {
        assert_eq!(size(Kind::Scenario.limit()), "1 MiB");
        assert_eq!(size(Kind::History.limit()), "4 GiB");
    }
}
