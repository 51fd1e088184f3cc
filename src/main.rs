//! Binary entry point: parse the command line, set up logging, run the chosen subcommand.

use std::process::ExitCode;

use cinder_attach::cli::{self, Command};
use cinder_attach::commands;

#[tokio::main]
async fn main() -> ExitCode {
    let parsed = cli::parse();
    cinder_attach::telemetry::init(parsed.cli.log_format);
    if !parsed.file.ignored.is_empty() {
        tracing::debug!(options = %parsed.file.ignored.join(", "), "configuration file options not used here");
    }
    let settings = parsed.describe_settings();
    let result = match parsed.cli.into_command() {
        Command::Healthcheck(args) => match commands::healthcheck(&args).await {
            Ok(()) => return ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("cinder-attach: {err}");
                return ExitCode::FAILURE;
            }
        },
        Command::Config(_) => {
            print!("{settings}");
            Ok(())
        }
        Command::Serve(args) => commands::run(args).await,
        Command::Migrate(args) if args.check => return commands::check_migrations(&args).await,
        Command::Migrate(args) => commands::migrate(&args.database).await,
        Command::Policy(args) => commands::print_policy(&args),
        Command::Purge(args) => commands::purge(&args).await,
        Command::Events(args) => commands::print_events(&args).await,
        Command::Check(args) => match commands::check::check(&args).await {
            Ok(true) => return ExitCode::SUCCESS,
            Ok(false) => return ExitCode::from(1),
            Err(err) => {
                eprintln!("cinder-attach: {err}");
                return ExitCode::from(2);
            }
        },
        Command::ImportCinder(args) => match commands::import_cinder::import_cinder(&args).await {
            Ok(true) => return ExitCode::SUCCESS,
            Ok(false) => return ExitCode::from(1),
            Err(err) => {
                eprintln!("cinder-attach: {err}");
                return ExitCode::from(2);
            }
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("cinder-attach: {err}");
            ExitCode::FAILURE
        }
    }
}
