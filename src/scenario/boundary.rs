//! The scenario's reach beyond queuebench's own things, refused where it would widen the
//! ephemeral cluster's boundary (see docs/safety.md, "Refusals").

/// Server settings that decide who can reach the ephemeral cluster and how it authenticates
/// them. The cluster trusts every connection as a superuser (`initdb -A trust`), so it listens
/// only on its own socket, where queuebench puts it: a scenario (perhaps somebody else's, a CI
/// gate on a pull request) may not widen that. Names are matched as PostgreSQL does, ignoring
/// case.
pub(super) const BOUNDARY_SETTINGS: &[&str] = &[
    "listen_addresses",
    "port",
    "unix_socket_directories",
    "unix_socket_group",
    "unix_socket_permissions",
    "hba_file",
    "ident_file",
    "config_file",
    "data_directory",
    "external_pid_file",
    "ssl",
    "ssl_cert_file",
    "ssl_key_file",
    "ssl_ca_file",
    "ssl_crl_file",
    "ssl_crl_dir",
    "ssl_passphrase_command",
    "krb_server_keyfile",
];

/// Why `[postgres.settings]` may not hold `name`, when it may not.
pub(super) fn boundary_setting(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    BOUNDARY_SETTINGS.contains(&lower.as_str()).then(|| {
        format!(
            "queuebench decides where its ephemeral cluster listens and how it authenticates: the cluster trusts \
             every connection as a superuser with no password, so it listens only on its own socket in its own \
             folder, and `{lower}` may not change that (refused: {}). To run against a server that others can \
             reach, start it yourself with the authentication it needs and use --database-url",
            BOUNDARY_SETTINGS.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_widen_the_cluster_are_refused_in_any_case() {
        for name in ["listen_addresses", "LISTEN_ADDRESSES", "port", "hba_file", "unix_socket_permissions", "ssl"] {
            let why = boundary_setting(name).unwrap_or_else(|| panic!("{name} passed"));
            assert!(why.contains("--database-url") && why.contains("superuser"), "{why}");
        }
        for name in ["fsync", "autovacuum", "shared_buffers", "log_min_duration_statement"] {
            assert_eq!(boundary_setting(name), None, "{name}");
        }
    }
}
