use super::*;

fn serve_args(args: &[&str]) -> ServeArgs {
    match try_parse_from(args).expect("parses").into_command() {
        Command::Serve(serve) => serve,
        other => panic!("not serve: {other:?}"),
    }
}

#[test]
fn defaults_need_no_configuration() {
    let serve = serve_args(&["cinder-attach"]);
    assert_eq!(serve.listen.to_string(), "127.0.0.1:8776");
    assert_eq!(serve.auth_strategy, AuthStrategy::Noauth);
    assert!(serve.database.database_url.starts_with("sqlite://"));
    assert_eq!(serve.backends.backends.len(), 1);
    assert_eq!(serve.backends.backends[0].name, "file");
}

#[test]
fn several_backends() {
    let serve = serve_args(&[
        "cinder-attach",
        "--backend",
        "a=file,dir=/tmp/a",
        "--backend",
        "b=iscsi-sim,portal=10.0.0.1:3260",
    ]);
    let names: Vec<&str> = serve
        .backends
        .backends
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert!(try_parse_from(["cinder-attach", "--backend", "x=tape"]).is_err());
}

#[test]
fn serve_takes_its_options_after_the_subcommand_or_alone() {
    assert_eq!(
        serve_args(&["cinder-attach", "serve", "--listen", "127.0.0.1:0"])
            .listen
            .port(),
        0
    );
    assert_eq!(
        serve_args(&["cinder-attach", "--listen", "127.0.0.1:0"])
            .listen
            .port(),
        0
    );
    // Top-level serve options do not mix with another subcommand.
    assert!(try_parse_from(["cinder-attach", "--listen", "127.0.0.1:0", "migrate"]).is_err());
    // The options of every subcommand may come before its name, as the help shows.
    let cli = try_parse_from(["cinder-attach", "--log-format", "json", "migrate"]).expect("parses");
    assert_eq!(cli.log_format, LogFormat::Json);
    assert!(matches!(cli.command, Some(Command::Migrate(_))));
    let cli = try_parse_from(["cinder-attach", "--log-format=json", "check"]).expect("parses");
    assert_eq!(cli.log_format, LogFormat::Json);
    assert!(matches!(cli.command, Some(Command::Check(_))));
    let cli = try_parse_from(["cinder-attach", "migrate", "--log-format", "json"]).expect("parses");
    assert_eq!(cli.log_format, LogFormat::Json);
}

#[test]
fn each_subcommand_takes_only_its_options() {
    assert!(try_parse_from([
        "cinder-attach",
        "migrate",
        "--database-url",
        "sqlite://x.db"
    ])
    .is_ok());
    for (subcommand, foreign) in [
        ("migrate", "--keystone-url"),
        ("migrate", "--listen"),
        ("migrate", "--backend"),
        ("policy", "--database-url"),
        ("purge", "--listen"),
        ("check", "--auth-strategy"),
    ] {
        let parsed = try_parse_from(["cinder-attach", subcommand, foreign, "x"]);
        assert!(parsed.is_err(), "{subcommand} took {foreign}");
    }
}

fn help_of(subcommand: Option<&str>) -> String {
    let mut command = command(&FileSettings::default());
    let command = match subcommand {
        Some(name) => command.find_subcommand_mut(name).expect("subcommand"),
        None => &mut command,
    };
    command.render_long_help().to_string()
}

#[test]
fn help_fits_each_subcommand() {
    let migrate = help_of(Some("migrate"));
    assert!(migrate.contains("--database-url"));
    for foreign in ["--keystone", "--listen", "--backend", "--policy-file"] {
        assert!(
            !migrate.contains(foreign),
            "migrate --help shows {foreign}:\n{migrate}"
        );
    }
    let top = help_of(None);
    assert!(!top.contains("--listen"), "{top}");
    for subcommand in ["serve", "migrate", "policy", "check", "purge"] {
        assert!(top.contains(subcommand), "{top}");
    }
    assert!(help_of(Some("serve")).contains("--keystone-url"));
}

#[test]
fn a_flag_beats_the_file_which_beats_the_default() {
    let dir = std::env::temp_dir().join(format!("cinder-attach-cli-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cinder.conf");
    std::fs::write(
        &path,
        "[DEFAULT]\nhost = from-file\nosapi_volume_listen_port = 18776\n\
         [database]\nconnection = sqlite:///from-file.db\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let serve = serve_args(&[
        "cinder-attach",
        "--config-file",
        file,
        "--host",
        "from-flag",
    ]);
    assert_eq!(serve.backends.host.as_deref(), Some("from-flag"));
    assert_eq!(serve.listen.to_string(), "127.0.0.1:18776");
    assert_eq!(serve.database.database_url, "sqlite://from-file.db");
    assert_eq!(
        serve.request_timeout, 60,
        "untouched options keep their defaults"
    );
    // Other subcommands take the options they have from the file too.
    let cli = try_parse_from(["cinder-attach", "migrate", &format!("--config-file={file}")])
        .expect("parses");
    match cli.into_command() {
        Command::Migrate(args) => {
            assert_eq!(args.database.database_url, "sqlite://from-file.db")
        }
        other => panic!("{other:?}"),
    }
    // Before the subcommand's name too, as the top-level help offers it.
    let cli = try_parse_from(["cinder-attach", "--config-file", file, "migrate"]).expect("parses");
    match cli.into_command() {
        Command::Migrate(args) => {
            assert_eq!(args.database.database_url, "sqlite://from-file.db")
        }
        other => panic!("{other:?}"),
    }
    let parsed =
        try_parse_with_files(["cinder-attach", "--config-file", file, "config"]).expect("parses");
    assert!(
        parsed.describe_settings().contains("sqlite://from-file.db"),
        "{}",
        parsed.describe_settings()
    );
    let parsed = try_parse_with_files([
        "cinder-attach",
        "config",
        "--config-file",
        file,
        "--host",
        "h",
    ])
    .expect("parses");
    let described = parsed.describe_settings();
    assert!(
        described.contains("--host = h    (command line)"),
        "{described}"
    );
    assert!(
        described.contains(&format!(
            "--database-url = sqlite://from-file.db    ({file} [database] connection)"
        )),
        "{described}"
    );
    assert!(
        described.contains("--request-timeout = 60    (default)"),
        "{described}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn clap_definition_is_consistent() {
    command(&FileSettings::default()).debug_assert();
}

#[test]
fn image_rules_come_from_flags_and_cinder_conf() {
    let rules = serve_args(&["cinder-attach", "serve"]).images.image_rules();
    assert_eq!(rules, crate::image::inspect::ImageRules::default());
    let flags = serve_args(&[
        "cinder-attach",
        "serve",
        "--vmdk-allowed-types",
        "monolithicSparse",
        "--image-conversion-disable",
        "--reserved-image-namespaces",
        "site_,corp_",
    ]);
    let rules = flags.images.image_rules();
    assert_eq!(rules.vmdk_allowed_types, ["monolithicSparse"]);
    assert!(rules.conversion_disabled);
    assert_eq!(rules.reserved_namespaces, ["site_", "corp_"]);
    let dir = std::env::temp_dir().join(format!("cinder-attach-cli-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cinder.conf");
    std::fs::write(
        &path,
        "[DEFAULT]\nvmdk_allowed_types =\nimage_conversion_disable = True\n\
         reserved_image_namespaces = a_, b_\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let rules = serve_args(&["cinder-attach", "--config-file", file, "serve"])
        .images
        .image_rules();
    assert!(
        rules.vmdk_allowed_types.is_empty(),
        "an empty list takes no VMDK"
    );
    assert!(rules.conversion_disabled);
    assert_eq!(rules.reserved_namespaces, ["a_", "b_"]);
    std::fs::remove_dir_all(dir).unwrap();
}
