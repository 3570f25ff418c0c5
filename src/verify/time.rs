//! How the checkers' words write a moment of the run: seconds since its start, to the millisecond.

/// `t_us` microseconds since the run's start, as the checks and `explain` write it: `1.234 s`.
pub(crate) fn secs(t_us: u64) -> String {
    format!("{:.3} s", t_us as f64 / 1e6)
}
