//! Binary entry point: parse the command line, set up logging, run the chosen subcommand.

use std::process::ExitCode;

use clap::Parser;

use cinder_attach::cli::{Cli, Command};
use cinder_attach::commands;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    cinder_attach::telemetry::init(cli.log_format);
    let result = match cli.command.unwrap_or_default() {
        Command::Serve => commands::run(&cli.database, cli.serve).await,
        Command::Migrate => commands::migrate(&cli.database).await,
        Command::Policy => commands::print_policy(&cli.serve),
        Command::Purge(args) => commands::purge(&cli.database, &args).await,
        Command::Check(args) => {
            match commands::check::check(&cli.database, &cli.serve, &args).await {
                Ok(true) => return ExitCode::SUCCESS,
                Ok(false) => return ExitCode::from(1),
                Err(err) => {
                    eprintln!("cinder-attach: {err}");
                    return ExitCode::from(2);
                }
            }
        }
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
