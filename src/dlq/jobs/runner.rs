//! Running a job: the owner's writes under its lease ([`Owned`]), the
//! entries one at a time ([`Runner`]), and the scan that takes over a job
//! whose owner is gone ([`run_scanner`]).

use std::sync::Arc;

use tokio::sync::Mutex;

use super::*;
use crate::dlq;

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
            if self.swap(&doc.0, &job.id, &new).await? {
                let hold = if job.cancel.is_some() && job.state == JobState::Running {
                    Hold::Cancelled
                } else {
                    Hold::Go
                };
                *doc = (new, job);
                return Ok(hold);
            }
            let fresh = read(self.store, &doc.1.id).await?;
            if fresh.1.owner.as_deref() != Some(self.owner) || fresh.1.state != JobState::Running {
                return Ok(Hold::Lost);
            }
            *doc = fresh;
        }
        Err(Error::Store(store::Error::Contended))
    }

    /// Writes `new` as job `id` if the store still holds `old`.
    async fn swap(&self, old: &str, id: &str, new: &str) -> Result<bool, Error> {
        Ok(self
            .store
            .durable()?
            .job_swap(id, Some(old), Some(new))
            .await?)
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
        if self.swap(&doc.0, &job.id, &new).await? {
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

    /// Takes over job `id` if it is running without a live owner; whether it did.
    pub async fn take_over(&self, id: &str) -> Result<Option<Job>, Error> {
        let (old, mut job) = read(self.store(), id).await?;
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
            .durable()?
            .job_swap(id, Some(&old), Some(&encode(&job)))
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
        let config = self.replayer.steps.config;
        let old = encode(&job);
        let owned = Owned {
            store,
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
        let dead = match dlq::get(steps.store, &config.store.encryption, id).await {
            Ok(dead) => dead,
            Err(dlq::Error::NotFound(_)) => return Ok(Handled::Gone),
            Err(e) => return Err(e.into()),
        };
        let (job_id, job_by) = {
            let job = owned.job().await;
            (job.id, job.by)
        };
        if kind == Kind::Delete {
            let by = format!("{job_by} (job {job_id})");
            return Ok(
                if dlq::discard(steps.store, config, &dead, State::Discarded, &by).await? {
                    Handled::Succeeded
                } else {
                    Handled::Gone
                },
            );
        }
        let waiting: std::sync::Mutex<Option<&'static str>> = std::sync::Mutex::new(None);
        let going = std::sync::atomic::AtomicBool::new(false);
        let mut watch = |p: dlq::Progress<'_>| match p {
            dlq::Progress::Waiting { held, .. } => {
                if let Ok(mut w) = waiting.lock() {
                    *w = Some(held.word());
                }
            }
            dlq::Progress::Going => going.store(true, std::sync::atomic::Ordering::SeqCst),
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
        let jobs = match list(&state.store).await {
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
