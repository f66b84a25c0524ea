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
}
