//! The command line of DESIGN §1.

pub mod filter;

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
    /// The event trail: what happened to each recent event (newest first).
    Events {
        #[arg(long, env = "HOOKGATE_CONFIG", global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        action: EventsAction,
    },
    /// Try a source's `[[source.filter]]` rules on a body, offline.
    Filter {
        /// The config file (also from $HOOKGATE_CONFIG).
        #[arg(long, env = "HOOKGATE_CONFIG", global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        action: FilterAction,
    },
    /// Delivery state per source; pause and resume a queue source's delivery
    /// (beside a running server: the state is kept in the store).
    Sources {
        #[arg(long, env = "HOOKGATE_CONFIG", global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        action: SourcesAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum FilterAction {
    /// Which rule the body meets (each rule's verdict in order) and what
    /// hookgate would answer, e.g.
    /// `hookgate filter test --config hookgate.toml --source stripe --body-file evt.json`.
    Test {
        /// The `[[source]]` name.
        #[arg(long)]
        source: String,
        /// The request body, as the sender signs it (a JSON or form file).
        #[arg(long)]
        body_file: PathBuf,
        /// A request header, `"Name: value"`, repeatable: the event type's
        /// header for schemes that carry it there (`X-GitHub-Event: push`).
        #[arg(long = "header")]
        headers: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SourcesAction {
    /// One line per source: delivery mode, paused or not (by whom, since, why), queue depth.
    List,
    /// Stop delivering a queue source's events to the app; they wait in the queue.
    Pause {
        /// The `[[source]]` name.
        name: String,
        /// Why, for whoever looks next (`sources list`, the console, the log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Deliver again; the backlog drains oldest first.
    Resume {
        /// The `[[source]]` name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum EventsAction {
    /// One line per event: received, source, event id, type, state, attempts, duplicates.
    List {
        /// Only this `[[source]]`'s events.
        #[arg(long)]
        source: Option<String>,
        /// Only events in this state: in_flight, delivered, released,
        /// waiting, dropped, dead_letter.
        #[arg(long)]
        state: Option<String>,
        /// At most this many (1 to 1000).
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// One event's story: every attempt, and what the store holds for it now.
    Show { source: String, event_id: String },
}

/// Rows under a header, each column as wide as its widest cell, two spaces
/// apart; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
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
