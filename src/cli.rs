//! Command line and environment configuration.
//!
//! Every flag can also be set through `CINDER_ATTACH_<FLAG>`; `.env.sample` lists them all.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

/// A block-storage control plane speaking the OpenStack Cinder v3 API.
#[derive(Debug, Parser)]
#[command(name = "cinder-attach", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub serve: ServeArgs,

    /// Log line format.
    #[arg(long, env = "CINDER_ATTACH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Default, Subcommand)]
pub enum Command {
    /// Run the API service (the default when no subcommand is given).
    #[default]
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Print the effective policy rules (defaults with --policy-file laid over) and exit.
    Policy,
    /// Check the database and the backends' storage for broken invariants (read-only).
    /// Exit status 0: none found, 1: findings, 2: the check could not run.
    Check(CheckArgs),
    /// Remove rows soft-deleted more than --older-than days ago, for good (Cinder's
    /// `cinder-manage db purge`); safe while the service runs.
    Purge(PurgeArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct PurgeArgs {
    /// Only rows deleted at least this many days ago (0: every deleted row).
    #[arg(long)]
    pub older_than: u32,
}

#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct DatabaseArgs {
    /// `sqlite://path/to/file.db` (embedded, the default) or `postgres://user@host/db`.
    #[arg(
        long,
        env = "CINDER_ATTACH_DATABASE_URL",
        default_value = "sqlite://data/cinder-attach.db",
        global = true
    )]
    pub database_url: String,

    /// Upper bound of the database connection pool.
    #[arg(
        long,
        env = "CINDER_ATTACH_DB_MAX_CONNECTIONS",
        default_value_t = 16,
        global = true
    )]
    pub db_max_connections: u32,

    /// Seconds to wait for a pooled connection before answering 503.
    #[arg(
        long,
        env = "CINDER_ATTACH_DB_ACQUIRE_TIMEOUT",
        default_value_t = 5,
        global = true
    )]
    pub db_acquire_timeout: u64,
}

impl DatabaseArgs {
    pub fn acquire_timeout(&self) -> Duration {
        Duration::from_secs(self.db_acquire_timeout.max(1))
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(
        long,
        env = "CINDER_ATTACH_LISTEN",
        default_value = "127.0.0.1:8776",
        global = true
    )]
    pub listen: SocketAddr,

    /// Serve Prometheus metrics at `/metrics` on this separate address (off when unset);
    /// keep it private, e.g. 127.0.0.1:9102.
    #[arg(long, env = "CINDER_ATTACH_METRICS_LISTEN", global = true)]
    pub metrics_listen: Option<SocketAddr>,

    /// Let several cinder-attach processes listen on the same address (Linux
    /// SO_REUSEPORT); the kernel spreads connections over them.
    #[arg(long, env = "CINDER_ATTACH_REUSE_PORT", global = true)]
    pub reuse_port: bool,

    /// How requests are authenticated.
    #[arg(long, env = "CINDER_ATTACH_AUTH_STRATEGY", value_enum, default_value_t = AuthStrategy::Noauth, global = true)]
    pub auth_strategy: AuthStrategy,

    #[command(flatten)]
    pub keystone: KeystoneArgs,

    /// Allow `noauth` on an address other than loopback (everyone becomes admin: never in production).
    #[arg(long, env = "CINDER_ATTACH_ALLOW_INSECURE_NOAUTH", global = true)]
    pub allow_insecure_noauth: bool,

    /// Base URL advertised in version documents and links, e.g. `https://volume.example.com`.
    /// Defaults to the URL the request came in on.
    #[arg(long, env = "CINDER_ATTACH_PUBLIC_ENDPOINT", global = true)]
    pub public_endpoint: Option<String>,

    /// Apply migrations at start-up (`auto`) or expect an already migrated database (`skip`).
    #[arg(long, env = "CINDER_ATTACH_MIGRATE", value_enum, default_value_t = MigrateMode::Auto, global = true)]
    pub migrate: MigrateMode,

    /// Seconds a connection has to send a complete request head, counted from connecting
    /// or from the previous response: slow senders and idle keep-alive connections are
    /// closed after it.
    #[arg(
        long,
        env = "CINDER_ATTACH_HEADER_READ_TIMEOUT",
        default_value_t = 10,
        global = true
    )]
    pub header_read_timeout: u64,

    /// Connections served at once; more wait in the listen backlog (keep it well under
    /// the open-file limit, which the database connections share).
    #[arg(
        long,
        env = "CINDER_ATTACH_MAX_CONNECTIONS",
        default_value_t = 768,
        global = true
    )]
    pub max_connections: usize,

    /// Seconds a request may take before it is answered with 503.
    #[arg(
        long,
        env = "CINDER_ATTACH_REQUEST_TIMEOUT",
        default_value_t = 60,
        global = true
    )]
    pub request_timeout: u64,

    /// On SIGTERM/SIGINT: seconds in-flight requests get to finish after the listener
    /// closes; whatever still runs then is cut off.
    #[arg(
        long,
        env = "CINDER_ATTACH_SHUTDOWN_GRACE",
        default_value_t = 30,
        global = true
    )]
    pub shutdown_grace: u64,

    /// A storage backend, `NAME=DRIVER[,key=value...]`; repeat for several. Drivers:
    /// `file` (options dir, nfs_export, capacity_gb) and `iscsi-sim` (dir, portal,
    /// iqn_prefix); both take pool, availability_zone, multiattach, shared_targets.
    #[arg(
        long = "backend",
        env = "CINDER_ATTACH_BACKENDS",
        value_delimiter = ';',
        default_value = "file=file",
        global = true
    )]
    pub backends: Vec<crate::backend::BackendSpec>,

    /// This service's host name, the first part of every volume's `host@backend#pool`.
    #[arg(long, env = "CINDER_ATTACH_HOST", global = true)]
    pub host: Option<String>,

    /// The volume type used when a create names none.
    #[arg(
        long,
        env = "CINDER_ATTACH_DEFAULT_VOLUME_TYPE",
        default_value = "__DEFAULT__",
        global = true
    )]
    pub default_volume_type: String,

    /// Most live attachments a volume may have when its type sets no
    /// `attach:max_attachments` (0: no cap).
    #[arg(
        long,
        env = "CINDER_ATTACH_MAX_ATTACHMENTS_PER_VOLUME",
        default_value_t = crate::service::DEFAULT_MAX_ATTACHMENTS,
        global = true
    )]
    pub max_attachments_per_volume: u32,

    /// An oslo.policy file (YAML or JSON) overriding Cinder's default rules; SIGHUP reloads it.
    #[arg(long, env = "CINDER_ATTACH_POLICY_FILE", global = true)]
    pub policy_file: Option<std::path::PathBuf>,

    /// Largest request body accepted, in bytes (larger ones get 413).
    #[arg(long, env = "CINDER_ATTACH_MAX_BODY_BYTES", default_value_t = 1024 * 1024, global = true)]
    pub max_body_bytes: usize,
}

impl ServeArgs {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout.max(1))
    }

    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs(self.header_read_timeout.max(1))
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace)
    }

    /// `--host`, else the machine's host name.
    pub fn host_name(&self) -> String {
        self.host.clone().unwrap_or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "localhost".to_owned())
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthStrategy {
    /// Cinder's noauth: `X-Auth-Token: user:project[:role,role]`; without roles everyone is admin.
    Noauth,
    /// Trust X-Identity-Status/X-User-Id/X-Project-Id/X-Roles set by an auth proxy.
    TrustedHeaders,
    /// Validate X-Auth-Token with Keystone (see the --keystone-* flags).
    Keystone,
}

/// How to reach Keystone for `--auth-strategy keystone`.
#[derive(Debug, Clone, clap::Args)]
pub struct KeystoneArgs {
    /// Keystone's v3 endpoint, e.g. http://127.0.0.1:5000/v3.
    #[arg(long, env = "CINDER_ATTACH_KEYSTONE_URL", global = true)]
    pub keystone_url: Option<String>,
    /// The service user that validates tokens.
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_USERNAME",
        default_value = "cinder",
        global = true
    )]
    pub keystone_username: String,
    /// Its password.
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_PASSWORD",
        hide_env_values = true,
        global = true
    )]
    pub keystone_password: Option<String>,
    /// The project the service user logs in to.
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_PROJECT",
        default_value = "service",
        global = true
    )]
    pub keystone_project: String,
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_USER_DOMAIN",
        default_value = "Default",
        global = true
    )]
    pub keystone_user_domain: String,
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_PROJECT_DOMAIN",
        default_value = "Default",
        global = true
    )]
    pub keystone_project_domain: String,
    /// Seconds a validated token is trusted without asking again (0: always ask).
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_CACHE_SECONDS",
        default_value_t = 300,
        global = true
    )]
    pub keystone_cache_seconds: u64,
    /// Seconds a token Keystone refused is refused again without asking (0: always ask).
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_NEGATIVE_CACHE_SECONDS",
        default_value_t = 60,
        global = true
    )]
    pub keystone_negative_cache_seconds: u64,
    /// Most tokens kept in each cache (valid and refused).
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_CACHE_SIZE",
        default_value_t = 10000,
        global = true
    )]
    pub keystone_cache_size: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MigrateMode {
    Auto,
    Skip,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_need_no_configuration() {
        let cli = Cli::try_parse_from(["cinder-attach"]).expect("parses");
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.listen.to_string(), "127.0.0.1:8776");
        assert_eq!(cli.serve.auth_strategy, AuthStrategy::Noauth);
        assert!(cli.database.database_url.starts_with("sqlite://"));
        assert_eq!(cli.serve.backends.len(), 1);
        assert_eq!(cli.serve.backends[0].name, "file");
    }

    #[test]
    fn several_backends() {
        let cli = Cli::try_parse_from([
            "cinder-attach",
            "--backend",
            "a=file,dir=/tmp/a",
            "--backend",
            "b=iscsi-sim,portal=10.0.0.1:3260",
        ])
        .expect("parses");
        let names: Vec<&str> = cli.serve.backends.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(Cli::try_parse_from(["cinder-attach", "--backend", "x=tape"]).is_err());
    }

    #[test]
    fn flags_follow_the_subcommand_too() {
        let cli = Cli::try_parse_from(["cinder-attach", "serve", "--listen", "127.0.0.1:0"])
            .expect("parses");
        assert!(matches!(cli.command, Some(Command::Serve)));
        assert_eq!(cli.serve.listen.port(), 0);
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
