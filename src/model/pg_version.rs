//! The PostgreSQL majors queuebench runs besides the machine's own, one exact version pinned
//! for each (`queuebench postgres fetch N`, `--pg-version N`; docs/postgres-versions.md), and
//! the major of a version string as a server reports it.

use crate::error::Invalid;

/// One exact version per major: the package version and the tarball's integrity (sha512, as
/// npm's metadata gives it: `npm view PACKAGE@VERSION dist.integrity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pin {
    pub major: u32,
    /// The server's version, as `postgres --version` prints it (`14.23`): the cache folder's name.
    pub version: &'static str,
    /// The package's version (`14.23.0-beta.17`).
    pub package: &'static str,
    pub integrity: &'static str,
}

/// The pinned versions, read from npm's metadata on 4 December 2026.
pub(crate) const PINS: &[Pin] = &[
    Pin {
        major: 14,
        version: "14.23",
        package: "14.23.0-beta.17",
        integrity: "sha512-WlG1LDcOwA+V0uYSdSGCwqk/aDPiMX/X23cgNdYY5YcBprXjOH3IFoeCrgeXsct4Ep8LL8UsBP9/Ho2mpoea1w==",
    },
    Pin {
        major: 15,
        version: "15.18",
        package: "15.18.0-beta.17",
        integrity: "sha512-TC0kHcDMAusLbQXRc+9KMz1BLJY+ntfPNbwFP79f9IURSxPRgFLy0Ig8oF1J8Wy9Wnj0XdZkMItV3Nov/LwqhA==",
    },
    Pin {
        major: 16,
        version: "16.13",
        package: "16.13.0-beta.17",
        integrity: "sha512-NKvxtem0CyJY2AEK7zYtoUaE54gO1i1O8lDlafUK9dLY+RKqZOyX9VcYCcCeI7ne507An2sjlwTE0nx37KpO/Q==",
    },
    Pin {
        major: 17,
        version: "17.10",
        package: "17.10.0-beta.17",
        integrity: "sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg==",
    },
    Pin {
        major: 18,
        version: "18.4",
        package: "18.4.0-beta.17",
        integrity: "sha512-jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA==",
    },
];

/// The majors accepted, for messages: `14, 15, 16, 17, 18`.
pub(crate) fn accepted() -> String {
    PINS.iter().map(|p| p.major.to_string()).collect::<Vec<_>>().join(", ")
}

/// A major as given (`16`; `16.13` names the pinned version of 16 too): its pin, or what is
/// accepted.
pub(crate) fn parse_major(text: &str) -> std::result::Result<&'static Pin, Invalid> {
    let t = text.trim();
    let major = t.split('.').next().and_then(|m| m.parse::<u32>().ok());
    match major.and_then(|m| PINS.iter().find(|p| p.major == m)) {
        Some(pin) if !t.contains('.') || t == pin.version => Ok(pin),
        Some(pin) => Err(Invalid::new(format!(
            "`{t}`: queuebench pins one version per major ({} for {}); give the major, e.g. {}",
            pin.version, pin.major, pin.major
        ))),
        None => {
            Err(Invalid::new(format!("`{t}` is not a PostgreSQL major queuebench knows; accepted: {}", accepted())))
        }
    }
}

/// The major of a version string: `14` of `14.23`, `15` of `15.20 (Debian 15.20-0+deb12u1)`.
pub(crate) fn major_of(version: &str) -> Option<u32> {
    version.trim().split(['.', ' ']).next()?.parse().ok().filter(|m| *m >= 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_is_the_first_number_of_the_version() {
        assert_eq!(major_of("14.23"), Some(14));
        assert_eq!(major_of("15.20 (Debian 15.20-0+deb12u1)"), Some(15));
        assert_eq!(major_of("18beta1"), None);
        assert_eq!(major_of(""), None);
    }

    #[test]
    fn a_major_is_one_of_the_pins_and_anything_else_names_them() {
        assert_eq!(parse_major("16").unwrap().version, "16.13");
        assert_eq!(parse_major("14.23").unwrap().major, 14);
        let e = parse_major("13").unwrap_err().reason;
        assert!(e.contains("accepted: 14, 15, 16, 17, 18"), "{e}");
        assert!(parse_major("16.2").unwrap_err().reason.contains("16.13 for 16"));
        assert!(parse_major("x").is_err());
    }
}
