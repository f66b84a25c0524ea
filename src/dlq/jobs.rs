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

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use super::{Dead, Match, Replayed, Replayer};
use crate::store::{self, Store};
use crate::trail::State;

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
pub async fn list(store: &Store, prefix: &str) -> Result<Vec<Job>, Error> {
    let mut jobs = Vec::new();
    for (id, body) in store.jobs(prefix).await? {
        match serde_json::from_str::<Job>(&body) {
            Ok(job) => jobs.push(job),
            Err(e) => tracing::warn!(job = %id, error = %e, "unreadable dead-letter job skipped"),
        }
    }
    jobs.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
    Ok(jobs)
}

async fn read(store: &Store, prefix: &str, id: &str) -> Result<(String, Job), Error> {
    let (_, body) = store
        .jobs(prefix)
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
    let mut all = super::list(
        store,
        &config.store.key_prefix,
        &config.store.encryption,
        m.source.as_deref(),
    )
    .await?;
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
    prefix: &str,
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
    let existing = list(store, prefix).await?;
    if let Some(busy) = existing
        .iter()
        .find(|j| j.state == JobState::Running && j.matching.overlaps(&m))
    {
        return Err(Error::Busy(busy.id.clone()));
    }
    prune(store, prefix, &existing).await;
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
    store
        .job_swap(prefix, &job.id, None, Some(&encode(&job)))
        .await?;
    // Two starts at once both passed the check: the later one gives way.
    let now_running = list(store, prefix).await?;
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
        store
            .job_swap(prefix, &job.id, Some(&encode(&job)), Some(&encode(&gone)))
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
    let job = start(
        steps.store,
        &steps.config.store.key_prefix,
        plan,
        &matched,
        None,
    )
    .await?;
    answer.job = Some(job.id.clone());
    Ok((answer, Some(job)))
}

/// Removes the finished jobs beyond the newest [`KEEP_FINISHED`].
async fn prune(store: &Store, prefix: &str, jobs: &[Job]) {
    let finished: Vec<&Job> = jobs
        .iter()
        .filter(|j| j.state != JobState::Running)
        .collect();
    let extra = finished.len().saturating_sub(KEEP_FINISHED);
    for job in finished.into_iter().take(extra) {
        if let Err(e) = store
            .job_swap(prefix, &job.id, Some(&encode(job)), None)
            .await
        {
            tracing::debug!(job = %job.id, error = %e, "removing a finished job failed");
        }
    }
}

/// Asks job `id` to stop, for `by`; what was done stays done. A job with
/// no live owner is cancelled at once.
pub async fn cancel(store: &Store, prefix: &str, id: &str, by: &str) -> Result<Job, Error> {
    for _ in 0..20 {
        let (old, mut job) = read(store, prefix, id).await?;
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
            .job_swap(prefix, id, Some(&old), Some(&encode(&job)))
            .await?
        {
            tracing::info!(job = %id, by, "dead-letter job cancel asked");
            return Ok(job);
        }
    }
    Err(Error::Store(store::Error::Contended))
}

/// Whether the owner may go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    Go,
    /// Cancel asked: stop before the next entry.
    Cancelled,
    /// Another process owns the job now.
    Lost,
}

/// A job this process owns: the document as last written, changed only
/// through [`Owned::update`].
struct Owned<'a> {
    store: &'a Store,
    prefix: &'a str,
    owner: &'a str,
    doc: Mutex<(String, Job)>,
}

impl Owned<'_> {
    /// Applies `change` to the job and writes it, with the lease renewed.
    /// A write that finds the document changed reads it again: a cancel
    /// asked is taken in and `change` applied on top; another owner means
    /// this one stops.
    async fn update(&self, change: impl Fn(&mut Job)) -> Result<Hold, Error> {
        let mut doc = self.doc.lock().await;
        for _ in 0..20 {
            let mut job = doc.1.clone();
            change(&mut job);
            job.lease_until_ms = crate::time::now_ms() + LEASE.as_millis() as i64;
            let new = encode(&job);
            if self
                .store
                .job_swap(self.prefix, &job.id, Some(&doc.0), Some(&new))
                .await?
            {
                let hold = if job.cancel.is_some() && job.state == JobState::Running {
                    Hold::Cancelled
                } else {
                    Hold::Go
                };
                *doc = (new, job);
                return Ok(hold);
            }
            let fresh = read(self.store, self.prefix, &doc.1.id).await?;
            if fresh.1.owner.as_deref() != Some(self.owner) || fresh.1.state != JobState::Running {
                return Ok(Hold::Lost);
            }
            *doc = fresh;
        }
        Err(Error::Store(store::Error::Contended))
    }

    async fn job(&self) -> Job {
        self.doc.lock().await.1.clone()
    }

    /// Gives the job up between entries (this process stops): no owner,
    /// no lease, so the next scan anywhere takes it over.
    async fn let_go(&self) -> Result<Job, Error> {
        let mut doc = self.doc.lock().await;
        let mut job = doc.1.clone();
        job.owner = None;
        job.lease_until_ms = 0;
        job.waiting = None;
        let new = encode(&job);
        if self
            .store
            .job_swap(self.prefix, &job.id, Some(&doc.0), Some(&new))
            .await?
        {
            tracing::info!(job = %job.id, "dead-letter job let go at shutdown; another process takes it over");
            *doc = (new, job.clone());
        }
        Ok(job)
    }
}

/// Runs jobs: the one a command started, or any a server finds without a
/// live owner.
pub struct Runner<'a> {
    pub replayer: Replayer<'a>,
    pub owner: String,
    /// Once cancelled (the server shuts down), a job stops before its next
    /// entry and is let go for another process to take over at once.
    pub stop: tokio_util::sync::CancellationToken,
}

impl<'a> Runner<'a> {
    pub fn new(replayer: Replayer<'a>) -> Runner<'a> {
        Runner {
            replayer,
            owner: owner_name(),
            stop: tokio_util::sync::CancellationToken::new(),
        }
    }

    fn store(&self) -> &'a Store {
        self.replayer.steps.store
    }

    fn prefix(&self) -> &'a str {
        &self.replayer.steps.config.store.key_prefix
    }

    /// Takes over job `id` if it is running without a live owner; whether it did.
    pub async fn take_over(&self, id: &str) -> Result<Option<Job>, Error> {
        let (old, mut job) = read(self.store(), self.prefix(), id).await?;
        let now = crate::time::now_ms();
        if job.state != JobState::Running || job.live(now) {
            return Ok(None);
        }
        let was = job.owner.take();
        if let Some(current) = job.current.take() {
            tracing::warn!(job = %id, dlq_id = %current, previous_owner = was.as_deref(), "dead letter left as it is: its attempt was under way when the job's process stopped (the app may have it); replay it by id once checked");
            job.done += 1;
            job.after = Some(current.clone());
            if job.interrupted.len() < MAX_INTERRUPTED {
                job.interrupted.push(current);
            }
        }
        job.owner = Some(self.owner.clone());
        job.lease_until_ms = now + LEASE.as_millis() as i64;
        if !self
            .store()
            .job_swap(self.prefix(), id, Some(&old), Some(&encode(&job)))
            .await?
        {
            return Ok(None);
        }
        tracing::info!(job = %id, previous_owner = was.as_deref(), "dead-letter job taken over");
        Ok(Some(job))
    }

    /// Runs `job` (owned by this runner) to its end, telling `progress`
    /// after each entry; returns it as it ended.
    pub async fn run(&self, job: Job, progress: impl Fn(&Job)) -> Result<Job, Error> {
        let store = self.store();
        let prefix = self.prefix();
        let config = self.replayer.steps.config;
        let old = encode(&job);
        let owned = Owned {
            store,
            prefix,
            owner: &self.owner,
            doc: Mutex::new((old, job.clone())),
        };
        // The document may have moved since it was read (a cancel): write
        // it once as ours before anything is sent.
        let mut hold = owned.update(|_| {}).await?;
        let mut entries = match matching(store, config, &job.matching).await {
            Ok(entries) => entries,
            Err(e) => return self.fail(&owned, &e.to_string()).await,
        };
        let upto = job.upto.as_deref().map(order);
        let after = job.after.as_deref().map(order);
        entries.retain(|d| {
            let o = order(&d.id);
            upto.is_none_or(|u| o <= u) && after.is_none_or(|a| o > a)
        });
        for listed in entries {
            if hold != Hold::Go {
                break;
            }
            if self.stop.is_cancelled() {
                return owned.let_go().await;
            }
            let id = listed.id.clone();
            hold = owned
                .update(|j| {
                    j.current = Some(id.clone());
                    j.waiting = None;
                })
                .await?;
            if hold != Hold::Go {
                // Nothing was sent: the entry is not current any more.
                if hold == Hold::Cancelled {
                    owned.update(|j| j.current = None).await?;
                }
                break;
            }
            let result = self.handle(&owned, &id, job.kind).await;
            let (succeeded, failed, skipped) = match &result {
                Ok(Handled::Succeeded) => (1, 0, 0),
                Ok(Handled::Failed) => (0, 1, 0),
                Ok(Handled::Gone) => (0, 0, 1),
                Ok(Handled::Stopped(_)) => (0, 0, 0),
                Err(_) => (0, 0, 0),
            };
            if let Ok(Handled::Stopped(h)) = result {
                // Stopped while it waited, before its attempt: not sent.
                if h == Hold::Cancelled {
                    owned
                        .update(|j| {
                            j.current = None;
                            j.waiting = None;
                        })
                        .await?;
                }
                hold = h;
                break;
            }
            if let Err(e) = result {
                // The entry's outcome is unknown to the job: it is left
                // `current`, as a takeover would find it.
                tracing::warn!(job = %job.id, dlq_id = %id, error = %e, "dead-letter job stopped on a store error; a server takes it over");
                return Err(e);
            }
            hold = owned
                .update(|j| {
                    j.current = None;
                    j.waiting = None;
                    j.after = Some(id.clone());
                    j.done += 1;
                    j.succeeded += succeeded;
                    j.failed += failed;
                    j.skipped += skipped;
                })
                .await?;
            progress(&owned.job().await);
        }
        let end = match hold {
            Hold::Lost => {
                tracing::info!(job = %job.id, "dead-letter job owned elsewhere now; stopped here");
                return Ok(owned.job().await);
            }
            Hold::Cancelled => JobState::Cancelled,
            Hold::Go => JobState::Done,
        };
        owned
            .update(|j| {
                j.state = end;
                j.finished_ms = Some(crate::time::now_ms());
                j.owner = None;
                j.waiting = None;
            })
            .await?;
        let job = owned.job().await;
        tracing::info!(job = %job.id, state = end.word(), done = job.done, succeeded = job.succeeded, failed = job.failed, skipped = job.skipped, interrupted = job.interrupted.len(), "dead-letter job ended");
        progress(&job);
        Ok(job)
    }

    async fn fail(&self, owned: &Owned<'_>, error: &str) -> Result<Job, Error> {
        owned
            .update(|j| {
                j.state = JobState::Failed;
                j.error = Some(error.to_owned());
                j.finished_ms = Some(crate::time::now_ms());
                j.owner = None;
            })
            .await?;
        Ok(owned.job().await)
    }

    /// One entry: read again, then replayed or deleted. While a replay
    /// waits (a pause, a breaker, the rate), the lease is renewed; a cancel
    /// seen then stops it before its attempt.
    async fn handle(&self, owned: &Owned<'_>, id: &str, kind: Kind) -> Result<Handled, Error> {
        let steps = self.replayer.steps;
        let config = steps.config;
        let dead = match super::get(
            steps.store,
            &config.store.key_prefix,
            &config.store.encryption,
            id,
        )
        .await
        {
            Ok(dead) => dead,
            Err(super::Error::NotFound(_)) => return Ok(Handled::Gone),
            Err(e) => return Err(e.into()),
        };
        let (job_id, job_by) = {
            let job = owned.job().await;
            (job.id, job.by)
        };
        if kind == Kind::Delete {
            let by = format!("{job_by} (job {job_id})");
            return Ok(
                if super::discard(steps.store, config, &dead, State::Discarded, &by).await? {
                    Handled::Succeeded
                } else {
                    Handled::Gone
                },
            );
        }
        let waiting: std::sync::Mutex<Option<&'static str>> = std::sync::Mutex::new(None);
        let going = std::sync::atomic::AtomicBool::new(false);
        let mut watch = |p: super::Progress<'_>| match p {
            super::Progress::Waiting { held, .. } => {
                if let Ok(mut w) = waiting.lock() {
                    *w = Some(held.word());
                }
            }
            super::Progress::Going => going.store(true, std::sync::atomic::Ordering::SeqCst),
            _ => {}
        };
        let replay = self.replayer.replay_with(dead, &mut watch);
        tokio::pin!(replay);
        let mut renew = tokio::time::interval(RENEW_EVERY);
        renew.tick().await;
        let result = loop {
            tokio::select! {
                result = &mut replay => break result,
                _ = renew.tick() => {
                    let now_waiting = waiting.lock().ok().and_then(|w| *w);
                    let hold = owned
                        .update(|j| j.waiting = now_waiting.map(str::to_owned))
                        .await?;
                    if hold != Hold::Go && !going.load(std::sync::atomic::Ordering::SeqCst) {
                        return Ok(Handled::Stopped(hold));
                    }
                }
            }
        };
        Ok(match result? {
            r if r.is_success() => Handled::Succeeded,
            Replayed::Held { .. } => Handled::Failed,
            _ => Handled::Failed,
        })
    }
}

/// What became of one entry.
enum Handled {
    Succeeded,
    Failed,
    /// Settled by someone else before the job reached it.
    Gone,
    /// The job stopped (cancelled, or owned elsewhere) while the entry
    /// waited, before its attempt.
    Stopped(Hold),
}

/// Every server with a store that keeps dead letters runs this until
/// `shutdown`: a look for jobs without a live owner every [`SCAN_EVERY`],
/// each one taken over run in a task of its own, and the jobs gauge
/// refreshed from what it finds. At shutdown a job in hand stops before
/// its next entry and is let go; the returned future ends when they have.
pub async fn run_scanner(
    state: Arc<crate::state::State>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    if !state.store.keeps_queue() {
        return;
    }
    let mut running = tokio::task::JoinSet::new();
    let mut every = tokio::time::interval(SCAN_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = every.tick() => {}
        }
        while running.try_join_next().is_some() {}
        let prefix = state.runtime().config.store.key_prefix.clone();
        let jobs = match list(&state.store, &prefix).await {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::debug!(error = %e, "dead-letter jobs: scan failed");
                continue;
            }
        };
        for s in JobState::ALL {
            let n = jobs.iter().filter(|j| j.state == s).count();
            state.metrics.dlq_jobs(s.word(), n as i64);
        }
        let now = crate::time::now_ms();
        for job in jobs
            .into_iter()
            .filter(|j| j.state == JobState::Running && !j.live(now))
        {
            let state = Arc::clone(&state);
            let stop = shutdown.child_token();
            running.spawn(async move {
                let runtime = state.runtime();
                let mut replayer = Replayer::new(state.steps(&runtime.config), true);
                replayer.rate = job.rate;
                let mut runner = Runner::new(replayer);
                runner.stop = stop;
                let result = match runner.take_over(&job.id).await {
                    Ok(Some(job)) => runner.run(job, |_| {}).await.map(drop),
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                };
                if let Err(e) = result {
                    tracing::warn!(job = %job.id, error = %e, "dead-letter job stopped; tried again at a later scan");
                }
            });
        }
    }
    while running.join_next().await.is_some() {}
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
