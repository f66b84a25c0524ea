//! The command line of DESIGN §1.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "hookgate",
    version,
    about = "A webhook-verifying reverse proxy"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Json,
    Text,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve: verify, dedupe and forward webhooks.
    Run {
        #[arg(long, env = "HOOKGATE_CONFIG")]
        config: PathBuf,
        /// `json` lines (default) or `text` for humans.
        #[arg(long, value_enum, default_value = "json")]
        log_format: LogFormat,
    },
    /// Validate the config and its secrets; exit 0, or 1 listing every problem.
    Check {
        #[arg(long, env = "HOOKGATE_CONFIG")]
        config: PathBuf,
    },
    /// Print the headers that make a valid request for a source.
    Sign {
        #[arg(long, env = "HOOKGATE_CONFIG")]
        config: PathBuf,
        /// The `[[source]]` name.
        #[arg(long)]
        source: String,
        /// The body to sign (default: standard input).
        #[arg(long)]
        body_file: Option<PathBuf>,
        /// The event id, where the scheme carries it in a header.
        #[arg(long)]
        id: Option<String>,
        /// The signed time, unix seconds (default: now).
        #[arg(long, allow_negative_numbers = true)]
        timestamp: Option<i64>,
    },
    /// Inspect and replay dead letters (events the app could not take).
    Dlq {
        #[arg(long, env = "HOOKGATE_CONFIG", global = true)]
        config: Option<PathBuf>,
        /// Only the dead letters of this `[[source]]` (list and replay --all).
        #[arg(long, global = true)]
        source: Option<String>,
        #[command(subcommand)]
        action: DlqAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum DlqAction {
    /// One line per dead letter: id, source, event id, type, attempts, age, last error.
    List,
    /// One dead letter in full: its metadata, headers and body.
    Show {
        /// The entry id `list` prints.
        id: String,
    },
    /// Send dead letters to the app again; each is removed on a 2xx.
    #[command(group = clap::ArgGroup::new("which").required(true).args(["id", "all"]))]
    Replay {
        /// The entry id `list` prints.
        id: Option<String>,
        /// Every dead letter (of `--source`, when given).
        #[arg(long)]
        all: bool,
    },
}
