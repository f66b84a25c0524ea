//! The command line of DESIGN §1.

pub mod check;
pub mod dlq;
pub mod events;
pub mod filter;
pub mod rejections;
pub mod sign;
pub mod sources;
pub mod store;

use std::path::{Path, PathBuf};

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
        /// The config file, e.g. `--config /etc/hookgate/hookgate.toml`
        /// (also from $HOOKGATE_CONFIG).
        #[arg(long, env = "HOOKGATE_CONFIG")]
        config: PathBuf,
        /// `json` lines (default) or `text` for humans, e.g. `--log-format
        /// text` (coloured only on a terminal).
        #[arg(long, value_enum, default_value = "json")]
        log_format: LogFormat,
    },
    /// Validate the config and its secrets; exit 0, or 1 listing every problem.
    Check {
        /// The config file to check, e.g. `--config hookgate.toml` (also from
        /// $HOOKGATE_CONFIG).
        #[arg(long, env = "HOOKGATE_CONFIG")]
        config: PathBuf,
    },
    /// Print the headers that make a valid request for a source.
    Sign {
        /// The config file holding the source's secrets, e.g. `--config
        /// hookgate.toml` (also from $HOOKGATE_CONFIG).
        #[arg(long, env = "HOOKGATE_CONFIG")]
        config: PathBuf,
        /// The `[[source]]` name, e.g. `--source stripe`.
        #[arg(long)]
        source: String,
        /// The body to sign, e.g. `--body-file evt.json` (default: standard input).
        #[arg(long)]
        body_file: Option<PathBuf>,
        /// The event id, where the scheme carries it in a header, e.g. `--id
        /// msg_1` (Standard Webhooks' `webhook-id`).
        #[arg(long)]
        id: Option<String>,
        /// The signed time: unix seconds (`1733480000`) or RFC 3339
        /// (`2026-12-06T10:00:00Z`); default: now.
        #[arg(long, allow_negative_numbers = true, value_parser = parse_timestamp)]
        timestamp: Option<i64>,
    },
    /// Inspect and replay dead letters (events the app could not take).
    Dlq {
        /// The config file naming the store, e.g. `--config hookgate.toml`
        /// (also from $HOOKGATE_CONFIG).
        #[arg(long, env = "HOOKGATE_CONFIG", global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        action: DlqAction,
    },
    /// The event trail: what happened to each recent event (newest first).
    Events {
        /// The config file naming the store, e.g. `--config hookgate.toml`
        /// (also from $HOOKGATE_CONFIG).
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
        /// The config file naming the store, e.g. `--config hookgate.toml`
        /// (also from $HOOKGATE_CONFIG).
        #[arg(long, env = "HOOKGATE_CONFIG", global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        action: SourcesAction,
    },
    /// What the store keeps at rest: payloads by sealing key, and their
    /// rewrite under the first key of `[store.encryption]`.
    Store {
        /// The config file naming the store and its keys, e.g. `--config
        /// hookgate.toml` (also from $HOOKGATE_CONFIG).
        #[arg(long, env = "HOOKGATE_CONFIG", global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        action: StoreAction,
    },
    /// What the running server refused lately and why (400, 403, 404, 405,
    /// 413), read from its admin listener: newest first, with the last
    /// hour's counts by outcome and by client address.
    Rejections {
        /// The config file naming the admin listener and token, e.g.
        /// `--config hookgate.toml` (also from $HOOKGATE_CONFIG).
        #[arg(long, env = "HOOKGATE_CONFIG")]
        config: Option<PathBuf>,
        /// Only this `[[source]]`'s refusals, e.g. `--source stripe`.
        #[arg(long)]
        source: Option<String>,
        /// Only this outcome, e.g. `--outcome invalid_signature`.
        #[arg(long)]
        outcome: Option<String>,
        /// At most this many entries (1 to 1000), e.g. `--limit 20`.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

#[derive(Debug, Subcommand)]
pub enum StoreAction {
    /// Rewrite every stored payload (queue entries, dead letters; plaintext
    /// ones included) under the first key of `[store.encryption]`, beside a
    /// running server, in pages; safe to interrupt and run again. Prints
    /// what remains under each key, e.g.
    /// `hookgate store rekey --config hookgate.toml --dry-run`.
    Rekey {
        /// Count what would be rewritten and change nothing.
        #[arg(long)]
        dry_run: bool,
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
        /// The `[[source]]` name, e.g. `billing`.
        name: String,
        /// Why, for whoever looks next (`sources list`, the console, the
        /// log), e.g. `--reason "database migration"`.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Deliver again; the backlog drains oldest first.
    Resume {
        /// The `[[source]]` name, e.g. `billing`.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum EventsAction {
    /// One line per event: received, source, event id, type, state, attempts, duplicates.
    List {
        /// Only this `[[source]]`'s events, e.g. `--source stripe`.
        #[arg(long)]
        source: Option<String>,
        /// Only events in this state: in_flight, delivered, released,
        /// waiting, dropped, dead_letter; e.g. `--state waiting`.
        #[arg(long)]
        state: Option<String>,
        /// At most this many (1 to 1000), e.g. `--limit 200`.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// One event's story: every attempt (with how long it waited and its
    /// trace id), and what the store holds for it now, e.g. `hookgate events
    /// show stripe evt_1`.
    Show {
        /// The `[[source]]` name, e.g. `stripe`.
        source: String,
        /// The event id as `list` prints it (`X-Verified-Event-Id`), e.g. `evt_1`.
        event_id: String,
    },
}

/// Who runs this command, for the pause's `by`: the effective user's name
/// from `/etc/passwd`, else `uid:N` (a container's user may have no entry;
/// `$USER` is often unset there and can say anything).
pub fn effective_user() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .map(str::to_owned);
    let Some(euid) = euid else {
        return "unknown".to_owned();
    };
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .find_map(|l| {
            let mut fields = l.split(':');
            let name = fields.next()?;
            let uid = fields.nth(1)?;
            (uid == euid && !name.is_empty()).then(|| name.to_owned())
        })
        .unwrap_or_else(|| format!("uid:{euid}"))
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
    /// One line per dead letter: id, source, event id, type, attempts, age,
    /// last error; only those MATCH takes, when given.
    List {
        #[command(flatten)]
        matching: MatchArgs,
    },
    /// One dead letter in full: its metadata, headers and body.
    Show {
        /// The entry id `list` prints, e.g. `1733480000000-0`.
        id: String,
    },
    /// Send dead letters to the app again; each is removed on a 2xx. More
    /// than one entry runs as a job kept in the store: killed, a running
    /// server finishes it.
    #[command(group = clap::ArgGroup::new("which").required(true).multiple(true)
        .args(["id", "all", "source", "event_type", "since", "until", "error"]))]
    Replay {
        /// The entry id `list` prints, e.g. `1733480000000-0`.
        #[arg(conflicts_with_all = ["all", "source", "event_type", "since", "until", "error", "dry_run"])]
        id: Option<String>,
        /// Every dead letter (of `--source`, when given).
        #[arg(long, conflicts_with_all = ["event_type", "since", "until", "error"])]
        all: bool,
        #[command(flatten)]
        matching: MatchArgs,
        /// Count the entries that match and show the first ten; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Deliveries per second for the job, besides each source's
        /// `max_rate` (the slower holds), e.g. `--rate 5/s`.
        #[arg(long, value_parser = crate::config::parse_rate)]
        rate: Option<f64>,
    },
    /// Remove dead letters without sending them; their trail state becomes
    /// `discarded`. More than one entry runs as a job.
    #[command(group = clap::ArgGroup::new("which").required(true).multiple(true)
        .args(["id", "source", "event_type", "since", "until", "error"]))]
    Delete {
        /// The entry id `list` prints, e.g. `1733480000000-0`.
        #[arg(conflicts_with_all = ["source", "event_type", "since", "until", "error", "dry_run"])]
        id: Option<String>,
        #[command(flatten)]
        matching: MatchArgs,
        /// Count the entries that match and show the first ten; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// The replay and delete jobs kept in the store, newest last, with
    /// their progress; `jobs cancel JOB` stops one (what was done stays done).
    Jobs {
        #[command(subcommand)]
        action: Option<JobsAction>,
    },
}

/// `hookgate dlq jobs cancel JOB`.
#[derive(Debug, clap::Subcommand)]
pub enum JobsAction {
    /// Stop a running job before its next entry.
    Cancel {
        /// The job id `dlq jobs` prints, e.g. `193a1b2c3d4-1a2b3c4d`.
        job: String,
    },
}

/// MATCH (DESIGN §6b): every one given must hold.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MatchArgs {
    /// Only this `[[source]]`'s dead letters, e.g. `--source stripe`.
    #[arg(long)]
    pub source: Option<String>,
    /// Event types, `*` for any run of characters, e.g. `--type 'invoice.*'`.
    #[arg(long = "type", id = "event_type")]
    pub event_type: Option<String>,
    /// Became a dead letter at or after this: RFC 3339 or an age, e.g.
    /// `--since 2026-12-06T14:00:00Z` or `--since 2h`.
    #[arg(long)]
    pub since: Option<String>,
    /// Became a dead letter before this: RFC 3339 or an age, e.g. `--until 1h`.
    #[arg(long)]
    pub until: Option<String>,
    /// The last error: upstream_timeout, upstream_unavailable, a status
    /// (`503`) or a class (`5xx`), e.g. `--error 503`.
    #[arg(long)]
    pub error: Option<String>,
}

/// `--timestamp`: unix seconds, or an RFC 3339 time.
fn parse_timestamp(text: &str) -> Result<i64, String> {
    if let Ok(secs) = text.parse::<i64>() {
        return Ok(secs);
    }
    let time = humantime::parse_rfc3339_weak(text).map_err(|_| {
        format!("{text:?} is neither unix seconds (1733480000) nor RFC 3339 (2026-12-06T10:00:00Z)")
    })?;
    match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).map_err(|_| format!("{text:?} is too far ahead")),
        Err(e) => i64::try_from(e.duration().as_secs())
            .map(|s| -s)
            .map_err(|_| format!("{text:?} is too far back")),
    }
}

/// The config at `path` and its store, for `hookgate COMMAND`; what went
/// wrong is printed.
pub(crate) fn open(
    path: &Path,
    command: &str,
) -> Result<(crate::config::Config, crate::store::Store), std::process::ExitCode> {
    open_scrubbing(path, command, crate::store::sqlite::SecureDelete::Fast)
}

/// [`open`], a sealed sqlite file zeroing what it frees as `scrub` says.
pub(crate) fn open_scrubbing(
    path: &Path,
    command: &str,
    scrub: crate::store::sqlite::SecureDelete,
) -> Result<(crate::config::Config, crate::store::Store), std::process::ExitCode> {
    let config = crate::config::Config::load(path).map_err(|e| {
        eprintln!("{}", e.display_in(path));
        std::process::ExitCode::FAILURE
    })?;
    let store = crate::open_store_scrubbing(&config, scrub).map_err(|e| {
        eprintln!("hookgate {command}: {e}");
        std::process::ExitCode::FAILURE
    })?;
    Ok((config, store))
}
