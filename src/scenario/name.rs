//! A scenario's name: it names the run's folder, so it is checked like one.

use crate::error::Invalid;

/// A scenario name names a folder (`results/<name>/`): 1 to 64 ASCII letters, digits, `-`
/// and `_`, not starting with `-` (so no `.`, `..`, slash, space or control character).
pub(crate) fn check_name(name: &str) -> std::result::Result<(), Invalid> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        return Ok(());
    }
    Err(Invalid::new(format!(
        "{:?} is not accepted (it names the results folder results/<name>/): use 1 to 64 ASCII letters, \
         digits, - and _, not starting with - (e.g. \"skip-locked\"); no ., .., slash, space or control character",
        name
    )))
}
