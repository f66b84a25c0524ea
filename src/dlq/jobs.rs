//! Dead-letter jobs (DESIGN §6b): a replay or delete of more than one entry,
//! kept in the store so it outlives the process running it.
//!
//! A job is one JSON document in the store (the `jobs` table on SQLite,
//! the hash `{prefix}:dlq:jobs` on Redis), changed only by compare and
//! swap. It holds its MATCH as resolved when it started, the newest entry
//! id then (`upto`: entries written later, a failed replay's rewrite
//! included, are not its business), the last entry it handled (`after`),
//! its counts, and its owner with a lease.
//!
//! # Once per entry
//! Entries are handled oldest first, one at a time. Before an entry is
//! sent, the job records it as `current`, on disk (SQLite) or on the
//! primary (Redis); after the entry is settled, `current` is cleared and
//! `after` moves past it in the same write. A process that takes over a
//! job whose `current` is set cannot know whether the app got that entry:
//! the job leaves it where it is (a dead letter still, listed in
//! `interrupted` and logged) and goes on with the next, so no job sends an
//! entry twice. Each entry is read again just before it is sent: one that
//! a replay by id or another process settled meanwhile is skipped.
//!
//! # Owners
//! The process running a job renews its lease every [`RENEW_EVERY`]; a
//! lease not renewed for [`LEASE`] (its process was killed, or lost the
//! store) lets any server on the store take the job over ([`run_scanner`],
//! every [`SCAN_EVERY`]). A command (`hookgate dlq replay MATCH`) runs the
//! job it started itself; killed, a server finishes it. One job runs at a
//! time per source: a job whose match could reach a source with a running
//! job is refused.
//!
//! # Cancel
//! Cancelling sets `cancel` on the document; the owner sees it at its next
//! write (before the next entry, or at a renewal while it waits for a pause,
//! a breaker or the rate) and stops. What was done stays done. A job with
//! no live owner is cancelled at once.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Dead, Match, Replayed, Replayer};
use crate::store::{self, Durable, Store};
use crate::trail::State;

mod runner;
pub use runner::{Runner, run_scanner};

/// A job's lease: how long its owner may go without a renewal.
pub const LEASE: Duration = Duration::from_secs(15);
/// How often an owner renews its lease.
pub const RENEW_EVERY: Duration = Duration::from_secs(3);
/// How often a server looks for a job without a live owner.
pub const SCAN_EVERY: Duration = Duration::from_secs(2);
/// Finished jobs kept to be read back; older ones are removed.
pub const KEEP_FINISHED: usize = 50;
/// Entry ids a job lists as interrupted, at most (the count goes on).
const MAX_INTERRUPTED: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error(transparent)]
    Dlq(#[from] super::Error),
    #[error("job {0} is already running on an overlapping match; cancel it or wait for it")]
    Busy(String),
    #[error("no job {0}")]
    NotFound(String),
    #[error("the stored job {id} is unreadable: {error}")]
    Unreadable { id: String, error: String },
}

/// Replay or delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Replay,
    Delete,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::Replay => "replay",
            Kind::Delete => "delete",
        }
    }
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Running,
    Done,
    Cancelled,
    Failed,
}

impl JobState {
    pub const ALL: [JobState; 4] = [
        JobState::Running,
        JobState::Done,
        JobState::Cancelled,
        JobState::Failed,
    ];

    pub fn word(self) -> &'static str {
        match self {
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Cancelled => "cancelled",
            JobState::Failed => "failed",
        }
    }
}

/// A job as kept in the store and shown by `GET /dlq/jobs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    pub kind: Kind,
    #[serde(rename = "match")]
    pub matching: Match,
    /// Deliveries per second asked for the job (besides each source's
    /// `max_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Who started it: `cli:USER@HOST`, `admin`, `console`.
    pub by: String,
    /// Unix ms.
    pub created_ms: i64,
    pub state: JobState,
    /// Entries that matched when it started.
    pub total: u64,
    /// Entries handled, whatever their result.
    pub done: u64,
    /// Replay: delivered (or found already delivered, or stale); delete:
    /// deleted.
    pub succeeded: u64,
    /// Replay: not delivered (the app failed again, a copy in flight, a
    /// payload that does not open); kept as dead letters.
    pub failed: u64,
    /// Settled by someone else before the job reached them.
    pub skipped: u64,
    /// Entries whose attempt was under way when their job's process
    /// stopped: left as dead letters, never sent again by the job.
    #[serde(default)]
    pub interrupted: Vec<String>,
    /// The newest entry id when the job started.
    pub upto: Option<String>,
    /// The last entry handled.
    pub after: Option<String>,
    /// The entry being handled now.
    pub current: Option<String>,
    pub owner: Option<String>,
    /// Unix ms the owner's lease runs to.
    pub lease_until_ms: i64,
    /// Who asked to cancel it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<String>,
    /// Unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_ms: Option<i64>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it waits for now: `paused`, `breaker` (replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
}

impl Job {
    fn live(&self, now_ms: i64) -> bool {
        self.state == JobState::Running && self.lease_until_ms > now_ms
    }
}

/// An entry id's place in the order entries were written: a Redis stream
/// id `ms-seq`, or a SQLite row number.
pub fn order(id: &str) -> (u64, u64) {
    match id.split_once('-') {
        Some((ms, seq)) => (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0)),
        None => (id.parse().unwrap_or(0), 0),
    }
}

/// Every job in the store, oldest first.
pub async fn list(store: &Store) -> Result<Vec<Job>, Error> {
    let mut jobs = Vec::new();
    for (id, body) in store.durable()?.jobs().await? {
        match serde_json::from_str::<Job>(&body) {
            Ok(job) => jobs.push(job),
            Err(e) => tracing::warn!(job = %id, error = %e, "unreadable dead-letter job skipped"),
        }
    }
    jobs.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
    Ok(jobs)
}

async fn read(store: &Store, id: &str) -> Result<(String, Job), Error> {
    let (_, body) = store
        .durable()?
        .jobs()
        .await?
        .into_iter()
        .find(|(i, _)| i == id)
        .ok_or_else(|| Error::NotFound(id.to_owned()))?;
    let job = serde_json::from_str(&body).map_err(|e| Error::Unreadable {
        id: id.to_owned(),
        error: e.to_string(),
    })?;
    Ok((body, job))
}

fn encode(job: &Job) -> String {
    serde_json::to_string(job).unwrap_or_default()
}

/// The dead letters `m` takes now, oldest first.
pub async fn matching(
    store: &Store,
    config: &crate::config::Config,
    m: &Match,
) -> Result<Vec<Dead>, store::Error> {
    let mut all = super::list(store, &config.store.encryption, m.source.as_deref()).await?;
    all.retain(|d| m.holds(d));
    all.sort_by_key(|d| order(&d.id));
    Ok(all)
}

/// A job's id: its start time and a random part, so ids sort by start.
fn new_id() -> String {
    let token = store::lease_token();
    format!(
        "{:x}-{}",
        crate::time::now_ms(),
        token.get(..8).unwrap_or(&token)
    )
}

/// What a job's owner is called in the store: this replica, process and
/// a random part.
pub fn owner_name() -> String {
    let token = store::lease_token();
    format!(
        "{}/{}/{}",
        crate::trail::replica(),
        std::process::id(),
        token.get(..6).unwrap_or(&token)
    )
}

/// Starts a job on the `matched` entries (more than one), owned by `owner`
/// (who then runs it with [`Runner::run`]), or by none: then the next scan
/// of a server on the store takes it ([`run_scanner`]). Refused when a
/// running job could reach a source this one could.
pub async fn start(
    store: &Store,
    plan: Plan,
    matched: &[Dead],
    owner: Option<&str>,
) -> Result<Job, Error> {
    let Plan {
        kind,
        matching: m,
        rate,
        by,
    } = plan;
    let now = crate::time::now_ms();
    let kept = store.durable()?;
    let existing = list(store).await?;
    if let Some(busy) = existing
        .iter()
        .find(|j| j.state == JobState::Running && j.matching.overlaps(&m))
    {
        return Err(Error::Busy(busy.id.clone()));
    }
    prune(kept, &existing).await;
    let job = Job {
        id: new_id(),
        kind,
        matching: m,
        rate,
        by: by.chars().take(200).collect(),
        created_ms: now,
        state: JobState::Running,
        total: matched.len() as u64,
        done: 0,
        succeeded: 0,
        failed: 0,
        skipped: 0,
        interrupted: Vec::new(),
        upto: matched
            .iter()
            .map(|d| &d.id)
            .max_by_key(|id| order(id))
            .cloned(),
        after: None,
        current: None,
        owner: owner.map(str::to_owned),
        lease_until_ms: if owner.is_some() {
            now + LEASE.as_millis() as i64
        } else {
            0
        },
        cancel: None,
        finished_ms: None,
        error: None,
        waiting: None,
    };
    kept.job_swap(&job.id, None, Some(&encode(&job))).await?;
    // Two starts at once both passed the check: the later one gives way.
    let now_running = list(store).await?;
    if let Some(first) = now_running.iter().find(|j| {
        j.state == JobState::Running
            && j.id != job.id
            && j.matching.overlaps(&job.matching)
            && (j.created_ms, &j.id) < (job.created_ms, &job.id)
    }) {
        let mut gone = job.clone();
        gone.state = JobState::Cancelled;
        gone.error = Some(format!("job {} started first", first.id));
        gone.finished_ms = Some(crate::time::now_ms());
        gone.owner = None;
        kept.job_swap(&job.id, Some(&encode(&job)), Some(&encode(&gone)))
            .await?;
        return Err(Error::Busy(first.id.clone()));
    }
    tracing::info!(job = %job.id, kind = kind.word(), matched = job.total, by = %job.by, what = %job.matching.describe(), "dead-letter job started");
    Ok(job)
}

/// What a job is asked to do, and by whom.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kind: Kind,
    pub matching: Match,
    /// Deliveries per second, besides each source's `max_rate`.
    pub rate: Option<f64>,
    /// `cli:USER@HOST`, `admin`, `console`.
    pub by: String,
}

/// What a replay or delete by match answers (DESIGN §6b): how many
/// entries match, the first [`super::matching::SAMPLE`], and the job
/// started for them (more than one entry) or the result for the one.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub matched: usize,
    pub job: Option<String>,
    pub sample: Vec<super::Summary>,
    /// The one entry's result when one matched (not a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
}

/// A replay or delete by match, asked by `by` over HTTP or from the
/// console: a dry run only counts; one entry is handled now (a replay held
/// by a pause or a breaker comes back `held`); more start a job that a
/// server's scan runs.
pub async fn ask(
    replayer: &Replayer<'_>,
    kind: Kind,
    m: Match,
    dry_run: bool,
    rate: Option<f64>,
    by: &str,
) -> Result<(Answer, Option<Job>), Error> {
    let steps = replayer.steps;
    let matched = matching(steps.store, steps.config, &m).await?;
    let sample: Vec<super::Summary> = matched
        .iter()
        .take(super::matching::SAMPLE)
        .map(Dead::summary)
        .collect();
    let mut answer = Answer {
        matched: matched.len(),
        job: None,
        sample,
        result: None,
    };
    if dry_run || matched.is_empty() {
        return Ok((answer, None));
    }
    if let [one] = matched.as_slice() {
        let result = match kind {
            Kind::Replay => {
                serde_json::to_value(replayer.replay(one.clone()).await?).unwrap_or_default()
            }
            Kind::Delete => {
                let gone =
                    super::discard(steps.store, steps.config, one, State::Discarded, by).await?;
                serde_json::json!({"result": if gone { "deleted" } else { "gone" }})
            }
        };
        answer.result = Some(result);
        return Ok((answer, None));
    }
    let plan = Plan {
        kind,
        matching: m,
        rate,
        by: by.to_owned(),
    };
    let job = start(steps.store, plan, &matched, None).await?;
    answer.job = Some(job.id.clone());
    Ok((answer, Some(job)))
}

/// Removes the finished jobs beyond the newest [`KEEP_FINISHED`].
async fn prune(store: Durable<'_>, jobs: &[Job]) {
    let finished: Vec<&Job> = jobs
        .iter()
        .filter(|j| j.state != JobState::Running)
        .collect();
    let extra = finished.len().saturating_sub(KEEP_FINISHED);
    for job in finished.into_iter().take(extra) {
        if let Err(e) = store.job_swap(&job.id, Some(&encode(job)), None).await {
            tracing::debug!(job = %job.id, error = %e, "removing a finished job failed");
        }
    }
}

/// Asks job `id` to stop, for `by`; what was done stays done. A job with
/// no live owner is cancelled at once.
pub async fn cancel(store: &Store, id: &str, by: &str) -> Result<Job, Error> {
    for _ in 0..20 {
        let (old, mut job) = read(store, id).await?;
        if job.state != JobState::Running {
            return Ok(job);
        }
        let now = crate::time::now_ms();
        job.cancel = Some(by.chars().take(200).collect());
        if !job.live(now) {
            job.state = JobState::Cancelled;
            job.finished_ms = Some(now);
            job.owner = None;
        }
        if store
            .durable()?
            .job_swap(id, Some(&old), Some(&encode(&job)))
            .await?
        {
            tracing::info!(job = %id, by, "dead-letter job cancel asked");
            return Ok(job);
        }
    }
    Err(Error::Store(store::Error::Contended))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_order_as_written() {
        assert!(order("1733480000000-1") > order("1733480000000-0"));
        assert!(order("1733480000001-0") > order("1733480000000-9"));
        assert!(order("10") > order("9"));
    }

    #[test]
    fn a_job_reads_back_as_written() {
        let job = Job {
            id: "1-ab".into(),
            kind: Kind::Replay,
            matching: Match {
                source: Some("q".into()),
                event_type: Some("invoice.*".into()),
                ..Match::default()
            },
            rate: Some(2.0),
            by: "admin".into(),
            created_ms: 1,
            state: JobState::Running,
            total: 3,
            done: 1,
            succeeded: 1,
            failed: 0,
            skipped: 0,
            interrupted: vec!["5".into()],
            upto: Some("9".into()),
            after: Some("5".into()),
            current: None,
            owner: Some("a/1/x".into()),
            lease_until_ms: 10,
            cancel: None,
            finished_ms: None,
            error: None,
            waiting: Some("paused".into()),
        };
        let text = encode(&job);
        assert!(
            text.contains(r#""match":{"source":"q","type":"invoice.*"}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Job>(&text).expect("job"), job);
    }
}
