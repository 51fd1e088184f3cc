//! How the service reaches Nova (cinder.conf's `[nova]` and `[service_user]`): the user it
//! calls as, where Nova is, and how long a call it owes Nova is tried.

use std::path::PathBuf;

/// `[nova]` in cinder.conf.
#[derive(Debug, Clone, clap::Args)]
pub struct NovaArgs {
    /// Keystone's v3 endpoint the `[nova]` user logs in to (`[nova] auth_url`). Unset: the
    /// service's own Keystone login (--keystone-*) calls Nova, when it has one; without
    /// either, Nova is not told of extends and re-images (as Cinder without Nova).
    #[arg(long, env = "CINDER_ATTACH_NOVA_AUTH_URL")]
    pub nova_auth_url: Option<String>,
    /// The user Nova is called as (`[nova] username`): it needs Nova's `service` role.
    #[arg(long, env = "CINDER_ATTACH_NOVA_USERNAME", default_value = "nova")]
    pub nova_username: String,
    /// Its password (`[nova] password`).
    #[arg(long, env = "CINDER_ATTACH_NOVA_PASSWORD", hide_env_values = true)]
    pub nova_password: Option<String>,
    /// Its project (`[nova] project_name`).
    #[arg(long, env = "CINDER_ATTACH_NOVA_PROJECT", default_value = "service")]
    pub nova_project: String,
    #[arg(
        long,
        env = "CINDER_ATTACH_NOVA_USER_DOMAIN",
        default_value = "Default"
    )]
    pub nova_user_domain: String,
    #[arg(
        long,
        env = "CINDER_ATTACH_NOVA_PROJECT_DOMAIN",
        default_value = "Default"
    )]
    pub nova_project_domain: String,
    /// The catalog region Nova is taken from (`[nova] region_name`; default: any).
    #[arg(long, env = "CINDER_ATTACH_NOVA_REGION_NAME")]
    pub nova_region_name: Option<String>,
    /// The catalog interface (`[nova] interface`).
    #[arg(
        long,
        env = "CINDER_ATTACH_NOVA_INTERFACE",
        default_value = "public",
        value_parser = ["public", "internal", "admin"]
    )]
    pub nova_interface: String,
    /// Nova's compute endpoint, instead of the catalog's (e.g. http://nova:8774/v2.1).
    #[arg(long, env = "CINDER_ATTACH_NOVA_ENDPOINT")]
    pub nova_endpoint: Option<String>,
    /// PEM CA(s) of an https:// Nova and of the `[nova]` user's Keystone (`[nova] cafile`).
    #[arg(long, env = "CINDER_ATTACH_NOVA_CAFILE")]
    pub nova_cafile: Option<PathBuf>,
    /// Do not check their certificates (`[nova] insecure`; a test bed only).
    #[arg(long, env = "CINDER_ATTACH_NOVA_INSECURE")]
    pub nova_insecure: bool,
    /// Seconds one call to Nova may take (`[nova] timeout`).
    #[arg(long, env = "CINDER_ATTACH_NOVA_TIMEOUT", default_value_t = 30)]
    pub nova_timeout: u64,
    /// Send the service's own token beside the `[nova]` user's (`X-Service-Token`;
    /// `[service_user] send_service_user_token`).
    #[arg(long, env = "CINDER_ATTACH_NOVA_SEND_SERVICE_TOKEN")]
    pub nova_send_service_token: bool,
    /// Seconds a call owed to Nova is tried again while Nova does not answer, before it is
    /// given up (a user message then says so).
    #[arg(long, env = "CINDER_ATTACH_NOVA_RETRY_FOR", default_value_t = 600)]
    pub nova_retry_for: u64,
}
