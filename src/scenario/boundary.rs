//! The server settings a scenario may set: an allow-list of performance and behaviour settings
//! (docs/safety.md, "Server settings a scenario may set"). Everything else is refused before
//! anything starts, with one message shape that says why: a scenario (perhaps somebody else's,
//! a CI gate on a pull request) must not run programs as the cluster's operating-system user,
//! load libraries into the server, choose files it reads or writes, or open the cluster (which
//! trusts its own socket) to others. The same rule holds in URL mode, where the settings are
//! only reported: one list, whatever the target.

/// Settings allowed by name (PostgreSQL 14–18). Names are matched as PostgreSQL does, ignoring
/// case.
const ALLOWED: &[&str] = &[
    // Memory.
    "shared_buffers",
    "work_mem",
    "maintenance_work_mem",
    "autovacuum_work_mem",
    "logical_decoding_work_mem",
    "hash_mem_multiplier",
    "temp_buffers",
    "effective_cache_size",
    "huge_pages",
    "max_stack_depth",
    "temp_file_limit",
    "max_prepared_transactions",
    "max_locks_per_transaction",
    "max_pred_locks_per_transaction",
    "max_pred_locks_per_relation",
    "max_pred_locks_per_page",
    "min_dynamic_shared_memory",
    // Planner.
    "random_page_cost",
    "seq_page_cost",
    "cpu_tuple_cost",
    "cpu_index_tuple_cost",
    "cpu_operator_cost",
    "parallel_setup_cost",
    "parallel_tuple_cost",
    "min_parallel_table_scan_size",
    "min_parallel_index_scan_size",
    "effective_io_concurrency",
    "maintenance_io_concurrency",
    "default_statistics_target",
    "constraint_exclusion",
    "cursor_tuple_fraction",
    "from_collapse_limit",
    "join_collapse_limit",
    "plan_cache_mode",
    "recursive_worktable_factor",
    "jit",
    "jit_above_cost",
    "jit_inline_above_cost",
    "jit_optimize_above_cost",
    "parallel_leader_participation",
    "max_worker_processes",
    // Write-ahead log, checkpoints, durability.
    "fsync",
    "synchronous_commit",
    "full_page_writes",
    "wal_level",
    "wal_buffers",
    "wal_writer_delay",
    "wal_writer_flush_after",
    "wal_compression",
    "wal_init_zero",
    "wal_recycle",
    "wal_keep_size",
    "wal_sync_method",
    "wal_skip_threshold",
    "wal_log_hints",
    "commit_delay",
    "commit_siblings",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "checkpoint_flush_after",
    "checkpoint_warning",
    "max_wal_size",
    "min_wal_size",
    "backend_flush_after",
    "max_wal_senders",
    "max_replication_slots",
    "hot_standby",
    "hot_standby_feedback",
    "synchronous_standby_names",
    "old_snapshot_threshold",
    // Connections and timeouts.
    "max_connections",
    "superuser_reserved_connections",
    "reserved_connections",
    "tcp_keepalives_idle",
    "tcp_keepalives_interval",
    "tcp_keepalives_count",
    "tcp_user_timeout",
    "client_connection_check_interval",
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "idle_session_timeout",
    "transaction_timeout",
    "deadlock_timeout",
    // Behaviour.
    "default_transaction_isolation",
    "default_transaction_read_only",
    "default_transaction_deferrable",
    "stats_fetch_consistency",
    "compute_query_id",
    "client_min_messages",
    // Logging that chooses no file and no program (the server's log goes where queuebench puts it).
    "log_min_duration_statement",
    "log_min_duration_sample",
    "log_statement_sample_rate",
    "log_transaction_sample_rate",
    "log_min_messages",
    "log_min_error_statement",
    "log_statement",
    "log_duration",
    "log_lock_waits",
    "log_checkpoints",
    "log_connections",
    "log_disconnections",
    "log_autovacuum_min_duration",
    "log_line_prefix",
    "log_temp_files",
    "log_error_verbosity",
    "log_replication_commands",
    "log_parameter_max_length",
    "log_parameter_max_length_on_error",
    "log_recovery_conflict_waits",
    "log_startup_progress_interval",
];

/// Families allowed by prefix: the planner's `enable_*` switches, autovacuum and vacuum,
/// statistics tracking, parallelism, genetic query optimization and the background writer.
const ALLOWED_PREFIXES: &[&str] =
    &["enable_", "autovacuum", "vacuum_", "track_", "max_parallel_", "geqo", "bgwriter_", "max_sync_workers"];

/// Refused with a reason of their own (anything else not allowed is "not on the allow-list").
const RUNS_PROGRAMS: &[&str] = &[
    "archive_command",
    "archive_library",
    "restore_command",
    "archive_cleanup_command",
    "recovery_end_command",
    "ssl_passphrase_command",
];
const LOADS_LIBRARIES: &[&str] = &[
    "shared_preload_libraries",
    "session_preload_libraries",
    "local_preload_libraries",
    "dynamic_library_path",
    "jit_provider",
];
const CHOOSES_FILES: &[&str] = &[
    "log_directory",
    "log_filename",
    "log_destination",
    "logging_collector",
    "data_directory",
    "config_file",
    "include",
    "include_dir",
    "include_if_exists",
    "stats_temp_directory",
    "external_pid_file",
    "ssl_cert_file",
    "ssl_key_file",
    "ssl_ca_file",
    "ssl_crl_file",
    "ssl_crl_dir",
    "ssl_dh_params_file",
    "krb_server_keyfile",
    "data_directory_mode",
];
/// Who can reach the ephemeral cluster and how it authenticates them: the cluster trusts its
/// own socket, so it listens there only.
const OPENS_THE_CLUSTER: &[&str] = &[
    "listen_addresses",
    "port",
    "unix_socket_directories",
    "unix_socket_group",
    "unix_socket_permissions",
    "ssl",
    "hba_file",
    "ident_file",
    "password_encryption",
    "primary_conninfo",
    "primary_slot_name",
];

/// Where the allow-list is documented, named in every refusal.
const WHERE_LISTED: &str = "docs/safety.md, \"Server settings a scenario may set\"";

/// Is `name` (any case) a setting a scenario may set?
fn allowed_setting(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ALLOWED.contains(&lower.as_str()) || ALLOWED_PREFIXES.iter().any(|p| lower.starts_with(p))
}

/// Why `[postgres.settings]` may not hold `name`, when it may not.
pub(super) fn refused_setting(name: &str) -> Option<String> {
    if allowed_setting(name) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let is = |list: &[&str]| list.contains(&lower.as_str());
    let why = if is(RUNS_PROGRAMS) {
        "runs a program as the server's operating-system user".to_string()
    } else if is(LOADS_LIBRARIES) {
        "loads code into the server".to_string()
    } else if is(CHOOSES_FILES) {
        "chooses a file or folder the server reads or writes".to_string()
    } else if is(OPENS_THE_CLUSTER) {
        "decides who reaches the server and how it authenticates them: queuebench's ephemeral cluster trusts \
         every connection on its own socket, so it listens there only; to run against a server others can reach, \
         start it yourself with the authentication it needs and use --database-url"
            .to_string()
    } else {
        "is not on queuebench's allow-list of performance and behaviour settings".to_string()
    };
    Some(format!(
        "`{lower}` {why}. A scenario may set only performance and behaviour settings (memory, planner, \
         autovacuum, WAL and checkpoints, timeouts, statistics, logging that chooses no file): the list is in \
         {WHERE_LISTED}. Remove the setting"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_run_load_write_or_open_are_refused_in_any_case() {
        for (name, says) in [
            ("archive_command", "runs a program"),
            ("RESTORE_COMMAND", "runs a program"),
            ("shared_preload_libraries", "loads code"),
            ("dynamic_library_path", "loads code"),
            ("log_directory", "chooses a file"),
            ("include", "chooses a file"),
            ("listen_addresses", "--database-url"),
            ("LISTEN_ADDRESSES", "--database-url"),
            ("port", "--database-url"),
            ("hba_file", "--database-url"),
            ("unix_socket_permissions", "--database-url"),
            ("ssl", "--database-url"),
            ("search_path", "allow-list"),
            ("no_such_setting", "allow-list"),
        ] {
            let why = refused_setting(name).unwrap_or_else(|| panic!("{name} passed"));
            assert!(why.contains(says) && why.contains("docs/safety.md"), "{name}: {why}");
        }
    }

    #[test]
    fn performance_and_behaviour_settings_pass() {
        for name in [
            "fsync",
            "autovacuum",
            "autovacuum_naptime",
            "shared_buffers",
            "work_mem",
            "log_min_duration_statement",
            "log_line_prefix",
            "enable_seqscan",
            "max_parallel_workers_per_gather",
            "track_io_timing",
            "default_transaction_isolation",
            "Synchronous_Commit",
            "max_connections",
            "vacuum_cost_delay",
        ] {
            assert_eq!(refused_setting(name), None, "{name}");
        }
    }
}
