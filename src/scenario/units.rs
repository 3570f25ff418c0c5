//! Durations as people write them in scenario files: `0ms`, `250us`, `1.5s`, `5m`, `1h`.

use crate::error::Invalid;
use std::time::Duration;

/// Why a duration does not parse. Each message shows the text and an example.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("`{0}` has no unit; write it as e.g. \"250ms\", \"30s\", \"5m\"")]
    NoUnit(String),
    #[error("`{0}` does not start with a number; write e.g. \"250ms\", \"30s\"")]
    NotANumber(String),
    #[error("`{text}` has an unknown unit `{unit}`; accepted units: us, ms, s, m, h")]
    UnknownUnit { text: String, unit: String },
    #[error("`{0}` is longer than a week")]
    TooLong(String),
}

impl From<DurationError> for Invalid {
    fn from(e: DurationError) -> Invalid {
        Invalid::new(e.to_string())
    }
}

/// Parses a human duration. A bare number is rejected: the unit is what
/// makes `lease = "90"` unambiguous.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let split =
        t.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(|| DurationError::NoUnit(text.to_string()))?;
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| DurationError::NotANumber(text.to_string()))?;
    let scale = match unit.trim() {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(DurationError::UnknownUnit { text: text.to_string(), unit: other.to_string() });
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 7.0 * 86400.0 {
        return Err(DurationError::TooLong(text.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats a duration the way `parse_duration` reads it back.
pub(crate) fn format_duration(d: Duration) -> String {
    let us = d.as_micros();
    if us == 0 {
        "0ms".into()
    } else if us.is_multiple_of(1_000_000) {
        format!("{}s", us / 1_000_000)
    } else if us.is_multiple_of(1000) {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("0ms").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration(" 2h ").unwrap(), Duration::from_secs(7200));
    }

    #[test]
    fn rejects_nonsense_with_a_hint() {
        assert!(parse_duration("90").unwrap_err().to_string().contains("no unit"));
        assert!(parse_duration("5 parsecs").unwrap_err().to_string().contains("accepted units"));
        assert_eq!(parse_duration("ms"), Err(DurationError::NotANumber("ms".into())));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1e400s").is_err());
        assert!(parse_duration("9999999h").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for s in ["0ms", "250us", "1500ms", "90s"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }
}
