//! Counted nouns, so a message never says "1 jobs": `count(1, "job")` is `1 job`,
//! `count(3, "job")` is `3 jobs`. Irregular plurals are passed whole with [`count_as`].

/// `n` and the noun, plural unless `n` is 1 (the plural adds `s`).
pub(crate) fn count(n: impl Into<u128> + Copy, noun: &str) -> String {
    let v: u128 = n.into();
    if v == 1 { format!("1 {noun}") } else { format!("{v} {noun}s") }
}

/// `n` with the singular or the given plural.
pub(crate) fn count_as(n: impl Into<u128> + Copy, singular: &str, plural: &str) -> String {
    let v: u128 = n.into();
    format!("{v} {}", if v == 1 { singular } else { plural })
}

/// How far an explore search that found nothing went, in its own words (its answer, and the
/// tables `cargo xtask explore-*` build from explore.json).
pub fn explore_reached(depth: usize, exhausted: bool, timed_out: bool) -> String {
    if exhausted {
        format!(
            "in the whole space these bounds reach (no new state after depth {depth}; more sessions, jobs, ticks or \
             crashes reach more)"
        )
    } else if timed_out {
        format!("up to depth {depth} (the time limit stopped depth {})", depth + 1)
    } else {
        format!("up to depth {depth}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(1u64, "job"), "1 job");
        assert_eq!(count(0u64, "job"), "0 jobs");
        assert_eq!(count(2u32, "worker"), "2 workers");
        assert_eq!(
            count_as(1u64, "job with overlapping owners", "jobs with overlapping owners"),
            "1 job with overlapping owners"
        );
        assert_eq!(count_as(5usize as u64, "was", "were"), "5 were");
    }
}
