//! Command line and environment configuration.
//!
//! Every flag can also be set through `CINDER_ATTACH_<FLAG>`; `.env.sample` lists them all.
//! Each subcommand takes only the options it uses; with no subcommand the service runs
//! with `serve`'s options.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

mod backup_args;
pub mod conf;
mod image_args;
mod key_args;
mod nova_args;

pub use backup_args::{BackupArgs, BackupDriver};
pub use conf::{ConfError, FileSettings};
pub use image_args::ImageArgs;
pub use key_args::{KeyArgs, KeyBackend};
pub use nova_args::NovaArgs;

/// What `--version` prints: the release and the commit it was built from.
pub static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let commit = option_env!("CINDER_ATTACH_BUILD_COMMIT").unwrap_or("unknown");
    format!("{} (commit {commit})", env!("CARGO_PKG_VERSION"))
});

/// A block-storage control plane speaking the OpenStack Cinder v3 API.
#[derive(Debug, Parser)]
#[command(
    name = "cinder-attach",
    version = VERSION.as_str(),
    about,
    args_conflicts_with_subcommands = true,
    after_help = "With no subcommand, cinder-attach runs `serve`; `cinder-attach serve --help` lists its options."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// `serve`'s options, for a start without a subcommand (hidden from this help).
    #[command(flatten)]
    pub serve: ServeArgs,

    /// Log line format.
    #[arg(long, env = "CINDER_ATTACH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,

    /// A Cinder configuration file (oslo.config INI, e.g. /etc/cinder/cinder.conf) to
    /// take settings from; repeat for several (a later file wins). Flags and
    /// CINDER_ATTACH_* variables override it. docs/operations.md lists the options read.
    #[arg(
        long,
        env = "CINDER_ATTACH_CONFIG_FILE",
        value_delimiter = ',',
        global = true
    )]
    pub config_file: Vec<std::path::PathBuf>,
}

impl Cli {
    /// The subcommand to run (`serve` when none was given).
    pub fn into_command(self) -> Command {
        self.command.unwrap_or(Command::Serve(self.serve))
    }
}

/// The command line as clap sees it: the top level shows the subcommands, each
/// subcommand its own options; values from configuration files are their defaults
/// (so a flag or the environment still wins).
pub fn command(file: &FileSettings) -> clap::Command {
    let top = Cli::command().mut_args(|arg| {
        if matches!(arg.get_id().as_str(), "log_format" | "config_file") {
            arg
        } else {
            arg.hide(true)
        }
    });
    with_file_defaults(top, file)
}

fn with_file_defaults(mut command: clap::Command, file: &FileSettings) -> clap::Command {
    for setting in &file.settings {
        if command.get_arguments().any(|a| a.get_id() == setting.arg) {
            // Parsed once at start-up: leaking these few strings is the simple way to
            // give clap the 'static defaults it wants.
            let values: Vec<&'static str> = setting
                .values
                .iter()
                .map(|v| &*Box::leak(v.clone().into_boxed_str()))
                .collect();
            command = command.mut_arg(setting.arg, |arg| arg.default_values(values));
        }
    }
    let names: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    for name in names {
        command = command.mut_subcommand(name, |sub| with_file_defaults(sub, file));
    }
    command
}

/// A command line that could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error(transparent)]
    Args(#[from] clap::Error),
    #[error("configuration file {0}")]
    File(#[from] ConfError),
}

/// The parsed command line with what the configuration files set.
#[derive(Debug)]
pub struct Parsed {
    pub cli: Cli,
    pub file: FileSettings,
    matches: clap::ArgMatches,
}

/// Parses the process's arguments; exits with a message on an error (status 2) or after
/// `--help`.
pub fn parse() -> Parsed {
    match try_parse_with_files(std::env::args_os()) {
        Ok(parsed) => parsed,
        Err(ParseError::Args(err)) => err.exit(),
        Err(err @ ParseError::File(_)) => {
            eprintln!("cinder-attach: {err}");
            std::process::exit(2);
        }
    }
}

pub fn try_parse_from<I, T>(args: I) -> Result<Cli, ParseError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Ok(try_parse_with_files(args)?.cli)
}

pub fn try_parse_with_files<I, T>(args: I) -> Result<Parsed, ParseError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = globals_after_subcommand(args.into_iter().map(Into::into).collect());
    let file = conf::load(&config_files(&args))?;
    let matches = command(&file).try_get_matches_from(args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    Ok(Parsed { cli, file, matches })
}

/// The options every subcommand takes (`--config-file`, `--log-format`), moved from before
/// the subcommand's name to after it, where clap takes them: the top level's help offers
/// them first (`cinder-attach --config-file F migrate`), but the serve options at the top
/// level do not mix with a subcommand, and clap counts these among them.
fn globals_after_subcommand(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    const GLOBALS: &[&str] = &["--config-file", "--log-format"];
    let subcommands: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .collect();
    let mut moved = Vec::new();
    let mut at = 1;
    while at < args.len() {
        let text = args[at].to_string_lossy().into_owned();
        let global = GLOBALS.iter().find(|g| {
            text == **g
                || text
                    .strip_prefix(**g)
                    .is_some_and(|rest| rest.starts_with('='))
        });
        match global {
            Some(name) => {
                let takes_value = text == *name && at + 1 < args.len();
                let end = if takes_value { at + 2 } else { at + 1 };
                moved.extend(args.drain(at..end));
            }
            None if subcommands.contains(&text) => {
                args.splice(at + 1..at + 1, moved);
                return args;
            }
            // Anything else before a subcommand is the top-level (serve) command line:
            // left as it was, with what was moved put back.
            None if text.starts_with('-') || text == "help" => at += 1,
            None => break,
        }
    }
    args.splice(1..1, moved);
    args
}

/// The `--config-file` paths on the command line, else in `CINDER_ATTACH_CONFIG_FILE`
/// (comma-separated). Read before clap, because their values become clap's defaults.
fn config_files(args: &[std::ffi::OsString]) -> Vec<std::path::PathBuf> {
    let mut paths = Vec::new();
    let mut args = args.iter().skip(1);
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--" {
            break;
        }
        if text == "--config-file" {
            if let Some(path) = args.next() {
                paths.push(std::path::PathBuf::from(path));
            }
        } else if let Some(path) = text.strip_prefix("--config-file=") {
            paths.push(std::path::PathBuf::from(path));
        }
    }
    if paths.is_empty() {
        if let Some(list) = std::env::var_os("CINDER_ATTACH_CONFIG_FILE") {
            let list = list.to_string_lossy().into_owned();
            paths.extend(
                list.split(',')
                    .filter(|p| !p.trim().is_empty())
                    .map(|p| std::path::PathBuf::from(p.trim())),
            );
        }
    }
    paths
}

/// Flags whose values are secrets, or may hold one.
const SECRET_ARGS: &[&str] = &[
    "keystone_password",
    "key_manager_fixed_key",
    "nova_password",
];

impl Parsed {
    /// The options of `serve` (as `config` received them): each value and where it came
    /// from, secrets masked.
    pub fn describe_settings(&self) -> String {
        let Some(("config", matches)) = self.matches.subcommand() else {
            return String::new();
        };
        let command = command(&self.file);
        let Some(config) = command.find_subcommand("config") else {
            return String::new();
        };
        let mut out = String::new();
        for arg in config.get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version" | "config_file") {
                continue;
            }
            let values: Vec<String> = matches
                .get_raw(id)
                .map(|raw| raw.map(|v| v.to_string_lossy().into_owned()).collect())
                .unwrap_or_default();
            let shown = if values.is_empty() {
                "(unset)".to_owned()
            } else if SECRET_ARGS.contains(&id) {
                "***".to_owned()
            } else {
                values
                    .iter()
                    .map(|v| crate::store::redact_password(v))
                    .collect::<Vec<_>>()
                    .join(";")
            };
            let source = match matches.value_source(id) {
                Some(clap::parser::ValueSource::CommandLine) => "command line".to_owned(),
                Some(clap::parser::ValueSource::EnvVariable) => arg
                    .get_env()
                    .map(|e| format!("environment {}", e.to_string_lossy()))
                    .unwrap_or_else(|| "environment".to_owned()),
                _ => match self.file.get(id) {
                    Some(setting) => setting.origin.clone(),
                    None => "default".to_owned(),
                },
            };
            let name = arg.get_long().unwrap_or(id);
            out.push_str(&format!("--{name} = {shown}    ({source})\n"));
        }
        out
    }
}

#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Run the API service (the default when no subcommand is given).
    Serve(ServeArgs),
    /// Apply pending database migrations and exit; with --check, only say which the
    /// database lacks.
    Migrate(MigrateArgs),
    /// Print the effective policy rules (defaults with --policy-file laid over) and exit.
    Policy(PolicyArgs),
    /// Check the database and the backends' storage for broken invariants (read-only).
    /// Exit status 0: none found, 1: findings, 2: the check could not run.
    Check(CheckArgs),
    /// Bring in what a Cinder 29 database holds (volume types and specs, QoS, quotas,
    /// volumes, snapshots, live attachments), listing what it cannot take. Exit status 0:
    /// everything taken, 1: some rows refused (listed), 2: the import could not run.
    ImportCinder(ImportCinderArgs),
    /// Remove rows soft-deleted more than --older-than days ago, for good (Cinder's
    /// `cinder-manage db purge`); safe while the service runs.
    Purge(PurgeArgs),
    /// Ask a running service's /healthcheck (exit 0 when it answers 200, else 1): for a
    /// container's HEALTHCHECK or a monitoring script.
    Healthcheck(HealthcheckArgs),
    /// Print recorded notification events (the audit trail), one JSON object per line,
    /// oldest first; read-only.
    Events(EventsArgs),
    /// Print the settings `serve` would run with, each with where it comes from (flag,
    /// environment, configuration file, default), secrets masked; then exit.
    Config(ServeArgs),
}

/// Notifications: the outbox every write records its events in, and the relay that
/// publishes them to the message bus (oslo.messaging's `messagingv2` format).
#[derive(Debug, Clone, clap::Args)]
pub struct NotifyArgs {
    /// The message bus to publish notifications to, `amqp://user:password@host:5672/vhost`
    /// (an empty vhost is `/`), or oslo.messaging's `rabbit://` URL, its hosts tried in turn
    /// (Cinder's `[oslo_messaging_notifications] transport_url`). Unset: events are
    /// recorded and kept, and nothing is published.
    #[arg(long, env = "CINDER_ATTACH_NOTIFY_URL", value_parser = crate::notify::bus_url)]
    pub notify_url: Option<String>,

    /// The notification topic; messages go out with routing key `<topic>.<priority>`.
    #[arg(
        long,
        env = "CINDER_ATTACH_NOTIFY_TOPIC",
        default_value = "notifications"
    )]
    pub notify_topic: String,

    /// The topic exchange published to (oslo.messaging's `control_exchange`).
    #[arg(
        long,
        env = "CINDER_ATTACH_NOTIFY_EXCHANGE",
        default_value = "openstack"
    )]
    pub notify_exchange: String,

    /// Declare the exchange and the topic's queue durable (oslo.messaging's
    /// `amqp_durable_queues`; it must match what the listeners declare).
    #[arg(long, env = "CINDER_ATTACH_NOTIFY_DURABLE")]
    pub notify_durable: bool,

    /// TLS to every broker host, as oslo's `[oslo_messaging_rabbit] ssl` (an `amqps://`
    /// URL, or `?ssl=1` in a `rabbit://` one, asks for it too).
    #[arg(long, env = "CINDER_ATTACH_NOTIFY_SSL")]
    pub notify_ssl: bool,

    /// PEM file of the CA(s) that sign the broker's certificate (default: the system's
    /// trusted roots); oslo's `ssl_ca_file`.
    #[arg(long, env = "CINDER_ATTACH_NOTIFY_SSL_CA_FILE")]
    pub notify_ssl_ca_file: Option<std::path::PathBuf>,

    /// PEM certificate shown to a broker that asks for one, and its key (oslo's
    /// `ssl_cert_file`, `ssl_key_file`).
    #[arg(long, env = "CINDER_ATTACH_NOTIFY_SSL_CERT_FILE")]
    pub notify_ssl_cert_file: Option<std::path::PathBuf>,
    #[arg(long, env = "CINDER_ATTACH_NOTIFY_SSL_KEY_FILE")]
    pub notify_ssl_key_file: Option<std::path::PathBuf>,

    /// Record events at all (`off` only to measure what the outbox costs).
    #[arg(long, env = "CINDER_ATTACH_EVENTS", value_enum, default_value_t = EventsMode::On)]
    pub events: EventsMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventsMode {
    On,
    Off,
}

#[derive(Debug, Clone, clap::Args)]
pub struct EventsArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Only events about this volume.
    #[arg(long)]
    pub volume: Option<uuid::Uuid>,
    /// Only events about this attachment.
    #[arg(long)]
    pub attachment: Option<uuid::Uuid>,
    /// Only events about volumes of this project.
    #[arg(long)]
    pub project: Option<String>,
    /// Only this event type, e.g. `attachment.create.end`.
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// Only events at or after this time (RFC 3339, e.g. 2026-11-25T10:00:00Z).
    #[arg(long)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// Only events before this time (RFC 3339).
    #[arg(long)]
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    /// At most this many events (oldest first).
    #[arg(long, default_value_t = 1000)]
    pub limit: u32,
}

#[derive(Debug, Clone, clap::Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Apply nothing: list the migrations the database lacks and any a newer version
    /// applied. Exit status 0: nothing to apply, 1: migrations pending (listed), 2: the
    /// check could not run, 3: this version cannot serve the database (a newer version's
    /// contract step, or a migration changed or unfinished).
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Only rows deleted at least this many days ago (0: every deleted row); notification
    /// events recorded that long ago go too, once the broker confirmed them.
    #[arg(long)]
    pub older_than: u32,
    /// Remove old notification events the broker never confirmed as well (for a
    /// deployment that records events without publishing them).
    #[arg(long)]
    pub unsent_events: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub backends: BackendArgs,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ImportCinderArgs {
    /// Cinder's database: the `[database] connection` URL of its cinder.conf
    /// (`postgresql://` or `postgresql+psycopg2://`). Only read.
    #[arg(long = "from")]
    pub from: String,
    /// Work out and report everything, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// `CINDER=HERE`: the volumes of Cinder's backend CINDER (the part of their host
    /// after `@`) go to this service's backend HERE; repeat for several. Without it a
    /// Cinder backend goes to the backend of the same name.
    #[arg(long = "map-backend", value_parser = parse_backend_mapping)]
    pub map_backend: Vec<(String, String)>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub backends: BackendArgs,
}

fn parse_backend_mapping(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((from, to)) if !from.is_empty() && !to.is_empty() => {
            Ok((from.to_owned(), to.to_owned()))
        }
        _ => Err(format!("{text:?} is not CINDER_BACKEND=BACKEND_HERE")),
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct DatabaseArgs {
    /// `sqlite://path/to/file.db` (embedded, the default) or `postgres://user@host/db`.
    #[arg(
        long,
        env = "CINDER_ATTACH_DATABASE_URL",
        default_value = "sqlite://data/cinder-attach.db"
    )]
    pub database_url: String,

    /// Upper bound of the database connection pool.
    #[arg(long, env = "CINDER_ATTACH_DB_MAX_CONNECTIONS", default_value_t = 16)]
    pub db_max_connections: u32,

    /// Seconds to wait for a pooled connection before answering 503.
    #[arg(long, env = "CINDER_ATTACH_DB_ACQUIRE_TIMEOUT", default_value_t = 5)]
    pub db_acquire_timeout: u64,

    /// Tries at start to reach a PostgreSQL primary before giving up (-1: for ever), as
    /// oslo.db's `max_retries`.
    #[arg(long, env = "CINDER_ATTACH_DB_MAX_RETRIES", default_value_t = 10, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-1..))]
    pub db_max_retries: i64,

    /// Seconds between two of those tries, as oslo.db's `retry_interval`.
    #[arg(long, env = "CINDER_ATTACH_DB_RETRY_INTERVAL", default_value_t = 10)]
    pub db_retry_interval: u64,
}

/// A key in hex, as ConfKeyManager reads `fixed_key`.
pub(crate) fn hex_key(text: &str) -> Result<String, String> {
    if !text.is_empty()
        && text.len().is_multiple_of(2)
        && text.bytes().all(|b| b.is_ascii_hexdigit())
    {
        Ok(text.to_owned())
    } else {
        Err("a key is an even number of hex digits".to_owned())
    }
}

impl DatabaseArgs {
    pub fn acquire_timeout(&self) -> Duration {
        Duration::from_secs(self.db_acquire_timeout.max(1))
    }

    /// How long to wait at start for a primary (oslo.db counts 0 tries as one).
    pub fn start_wait(&self) -> crate::store::StartWait {
        crate::store::StartWait {
            attempts: u32::try_from(self.db_max_retries).ok().map(|n| n.max(1)),
            interval: Duration::from_secs(self.db_retry_interval),
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct HealthcheckArgs {
    /// The service's listen address (an unspecified IP is asked on loopback).
    #[arg(long, env = "CINDER_ATTACH_LISTEN", default_value = "127.0.0.1:8776")]
    pub listen: SocketAddr,
    /// Ask the database and the notification relay too (`/healthcheck?detailed`): a relay
    /// that cannot deliver fails the check although the API serves.
    #[arg(long)]
    pub detailed: bool,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 5)]
    pub timeout: u64,
}

/// The oslo.policy file.
#[derive(Debug, Clone, clap::Args)]
pub struct PolicyArgs {
    /// An oslo.policy file (YAML or JSON) overriding Cinder's default rules; SIGHUP reloads it.
    #[arg(long, env = "CINDER_ATTACH_POLICY_FILE")]
    pub policy_file: Option<std::path::PathBuf>,
}

/// The storage backends and the host name their volumes carry.
#[derive(Debug, Clone, clap::Args)]
pub struct BackendArgs {
    /// A storage backend, `NAME=DRIVER[,key=value...]`; repeat for several. Drivers:
    /// `file` (options dir, nfs_export, capacity_gb), `iscsi-sim` (dir, portal,
    /// iqn_prefix), `tgt` and `rbd` (conf, pool, user, keyring, secret_uuid, ...: see
    /// docs/backends.md); all take pool, availability_zone, multiattach, shared_targets.
    #[arg(
        long = "backend",
        env = "CINDER_ATTACH_BACKENDS",
        value_delimiter = ';',
        default_value = "file=file"
    )]
    pub backends: Vec<crate::backend::BackendSpec>,

    /// This service's host name, the first part of every volume's `host@backend#pool`.
    #[arg(long, env = "CINDER_ATTACH_HOST")]
    pub host: Option<String>,
}

impl BackendArgs {
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

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub backends: BackendArgs,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub notify: NotifyArgs,

    #[command(flatten)]
    pub images: ImageArgs,

    #[command(flatten)]
    pub backups: BackupArgs,

    #[command(flatten)]
    pub nova: NovaArgs,

    /// Address to listen on.
    #[arg(long, env = "CINDER_ATTACH_LISTEN", default_value = "127.0.0.1:8776")]
    pub listen: SocketAddr,

    /// Serve Prometheus metrics at `/metrics` on this separate address (off when unset);
    /// keep it private, e.g. 127.0.0.1:9102.
    #[arg(long, env = "CINDER_ATTACH_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Let several cinder-attach processes listen on the same address (Linux
    /// SO_REUSEPORT); the kernel spreads connections over them.
    #[arg(long, env = "CINDER_ATTACH_REUSE_PORT")]
    pub reuse_port: bool,

    /// How requests are authenticated.
    #[arg(long, env = "CINDER_ATTACH_AUTH_STRATEGY", value_enum, default_value_t = AuthStrategy::Noauth)]
    pub auth_strategy: AuthStrategy,

    #[command(flatten)]
    pub keystone: KeystoneArgs,

    /// Allow `noauth` on an address other than loopback (everyone becomes admin: never in production).
    #[arg(long, env = "CINDER_ATTACH_ALLOW_INSECURE_NOAUTH")]
    pub allow_insecure_noauth: bool,

    /// Base URL advertised in version documents and links, e.g. `https://volume.example.com`.
    /// Defaults to the URL the request came in on.
    #[arg(long, env = "CINDER_ATTACH_PUBLIC_ENDPOINT")]
    pub public_endpoint: Option<String>,

    /// Apply migrations at start-up (`auto`) or expect an already migrated database (`skip`).
    #[arg(long, env = "CINDER_ATTACH_MIGRATE", value_enum, default_value_t = MigrateMode::Auto)]
    pub migrate: MigrateMode,

    /// Seconds a connection has to send a complete request head, counted from connecting
    /// or from the previous response: slow senders and idle keep-alive connections are
    /// closed after it.
    #[arg(long, env = "CINDER_ATTACH_HEADER_READ_TIMEOUT", default_value_t = 10)]
    pub header_read_timeout: u64,

    /// Connections served at once; more wait in the listen backlog (keep it well under
    /// the open-file limit, which the database connections share).
    #[arg(long, env = "CINDER_ATTACH_MAX_CONNECTIONS", default_value_t = 768)]
    pub max_connections: usize,

    /// Seconds a request may take before it is answered with 503.
    #[arg(long, env = "CINDER_ATTACH_REQUEST_TIMEOUT", default_value_t = 60)]
    pub request_timeout: u64,

    /// On SIGTERM/SIGINT: seconds in-flight requests get to finish after the listener
    /// closes; whatever still runs then is cut off.
    #[arg(long, env = "CINDER_ATTACH_SHUTDOWN_GRACE", default_value_t = 30)]
    pub shutdown_grace: u64,

    /// The volume type used when a create names none.
    #[arg(
        long,
        env = "CINDER_ATTACH_DEFAULT_VOLUME_TYPE",
        default_value = "__DEFAULT__"
    )]
    pub default_volume_type: String,

    /// Most live attachments a volume may have when its type sets no
    /// `attach:max_attachments` (0: no cap).
    #[arg(
        long,
        env = "CINDER_ATTACH_MAX_ATTACHMENTS_PER_VOLUME",
        default_value_t = crate::service::DEFAULT_MAX_ATTACHMENTS
    )]
    pub max_attachments_per_volume: u32,

    #[command(flatten)]
    pub keys: KeyArgs,

    /// Default quota of volumes per project (-1: none), under the `default` quota class.
    #[arg(long, env = "CINDER_ATTACH_QUOTA_VOLUMES", default_value_t = 10, allow_negative_numbers = true, value_parser = quota_limit)]
    pub quota_volumes: i64,

    /// Default quota of snapshots per project (-1: none).
    #[arg(long, env = "CINDER_ATTACH_QUOTA_SNAPSHOTS", default_value_t = 10, allow_negative_numbers = true, value_parser = quota_limit)]
    pub quota_snapshots: i64,

    /// Default quota of GiB (volumes and snapshots) per project (-1: none).
    #[arg(long, env = "CINDER_ATTACH_QUOTA_GIGABYTES", default_value_t = 1000, allow_negative_numbers = true, value_parser = quota_limit)]
    pub quota_gigabytes: i64,

    /// Default quota of backups per project (-1: none).
    #[arg(long, env = "CINDER_ATTACH_QUOTA_BACKUPS", default_value_t = 10, allow_negative_numbers = true, value_parser = quota_limit)]
    pub quota_backups: i64,

    /// Default quota of backup GiB per project (-1: none).
    #[arg(long, env = "CINDER_ATTACH_QUOTA_BACKUP_GIGABYTES", default_value_t = 1000, allow_negative_numbers = true, value_parser = quota_limit)]
    pub quota_backup_gigabytes: i64,

    /// Default quota of groups per project (-1: none).
    #[arg(long, env = "CINDER_ATTACH_QUOTA_GROUPS", default_value_t = 10, allow_negative_numbers = true, value_parser = quota_limit)]
    pub quota_groups: i64,

    /// Default largest volume in GiB (-1: none): `per_volume_gigabytes`.
    #[arg(long, env = "CINDER_ATTACH_PER_VOLUME_SIZE_LIMIT", default_value_t = -1, allow_negative_numbers = true, value_parser = quota_limit)]
    pub per_volume_size_limit: i64,

    /// Largest request body accepted, in bytes (larger ones get 413).
    #[arg(long, env = "CINDER_ATTACH_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,
}

/// A quota limit: an integer from -1 (none) to Cinder's largest.
fn quota_limit(text: &str) -> Result<i64, String> {
    let limit: i64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not an integer"))?;
    if !(crate::domain::quota::UNLIMITED..=crate::domain::quota::MAX_LIMIT).contains(&limit) {
        return Err(format!("{limit} is not from -1 to 2147483647"));
    }
    Ok(limit)
}

impl ServeArgs {
    /// The quota defaults these flags configure.
    pub fn quota_defaults(&self) -> crate::domain::quota::QuotaDefaults {
        crate::domain::quota::QuotaDefaults::default()
            .with("volumes", self.quota_volumes)
            .with("snapshots", self.quota_snapshots)
            .with("gigabytes", self.quota_gigabytes)
            .with("backups", self.quota_backups)
            .with("backup_gigabytes", self.quota_backup_gigabytes)
            .with("groups", self.quota_groups)
            .with("per_volume_gigabytes", self.per_volume_size_limit)
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout.max(1))
    }

    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs(self.header_read_timeout.max(1))
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace)
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
    #[arg(long, env = "CINDER_ATTACH_KEYSTONE_URL")]
    pub keystone_url: Option<String>,
    /// The service user that validates tokens.
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_USERNAME",
        default_value = "cinder"
    )]
    pub keystone_username: String,
    /// Its password.
    #[arg(long, env = "CINDER_ATTACH_KEYSTONE_PASSWORD", hide_env_values = true)]
    pub keystone_password: Option<String>,
    /// The project the service user logs in to.
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_PROJECT",
        default_value = "service"
    )]
    pub keystone_project: String,
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_USER_DOMAIN",
        default_value = "Default"
    )]
    pub keystone_user_domain: String,
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_PROJECT_DOMAIN",
        default_value = "Default"
    )]
    pub keystone_project_domain: String,
    /// PEM file of the CA(s) that sign an https:// Keystone's certificate (default: the
    /// system's trusted roots).
    #[arg(long, env = "CINDER_ATTACH_KEYSTONE_CAFILE")]
    pub keystone_cafile: Option<std::path::PathBuf>,
    /// Do not check an https:// Keystone's certificate (a test bed only: logged as a warning).
    #[arg(long, env = "CINDER_ATTACH_KEYSTONE_INSECURE")]
    pub keystone_insecure: bool,
    /// PEM certificate (chain) shown to an https:// Keystone that asks for a client
    /// certificate; its key in --keystone-keyfile (or in this same file).
    #[arg(long, env = "CINDER_ATTACH_KEYSTONE_CERTFILE")]
    pub keystone_certfile: Option<std::path::PathBuf>,
    /// PEM private key of --keystone-certfile.
    #[arg(long, env = "CINDER_ATTACH_KEYSTONE_KEYFILE")]
    pub keystone_keyfile: Option<std::path::PathBuf>,
    /// Seconds a validated token is trusted without asking again (0: always ask).
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_CACHE_SECONDS",
        default_value_t = 300
    )]
    pub keystone_cache_seconds: u64,
    /// Seconds a token Keystone refused is refused again without asking (0: always ask).
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_NEGATIVE_CACHE_SECONDS",
        default_value_t = 60
    )]
    pub keystone_negative_cache_seconds: u64,
    /// Most tokens kept in each cache (valid and refused).
    #[arg(
        long,
        env = "CINDER_ATTACH_KEYSTONE_CACHE_SIZE",
        default_value_t = 10000
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
mod tests;
