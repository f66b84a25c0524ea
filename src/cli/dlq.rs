//! `hookgate dlq list | show | replay | delete | jobs`: dead letters, read,
//! replayed and deleted from the store, by id or by MATCH (DESIGN §6b).

use std::path::Path;
use std::process::ExitCode;

use super::{DlqAction, JobsAction, MatchArgs, open};
use crate::dlq::jobs::{self, Job, JobState, Kind};
use crate::dlq::{self, Match, Replayed, Replayer};

/// `hookgate dlq …`.
pub async fn dlq(path: &Path, action: DlqAction) -> ExitCode {
    let (config, store) = match open(path, "dlq") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if !store.keeps_queue() {
        eprintln!("hookgate dlq: {}", crate::store::Error::NotKept);
        return ExitCode::FAILURE;
    }
    let by = format!(
        "cli:{}@{}",
        crate::cli::effective_user(),
        crate::trail::replica_name()
    );
    match action {
        DlqAction::List { matching } => {
            let Some(m) = to_match(&config, &matching, "list") else {
                return ExitCode::FAILURE;
            };
            match jobs::matching(&store, &config, &m).await {
                Ok(entries) if entries.is_empty() => {
                    println!("no dead letters");
                    ExitCode::SUCCESS
                }
                Ok(entries) => {
                    print_list(&entries);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hookgate dlq list: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        DlqAction::Show { id } => match dlq::get(&store, &config.store.encryption, &id).await {
            Ok(dead) => {
                print_entry(&dead);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("hookgate dlq show: {e}");
                ExitCode::FAILURE
            }
        },
        DlqAction::Jobs { action } => match action {
            None => match jobs::list(&store).await {
                Ok(list) if list.is_empty() => {
                    println!("no dead-letter jobs");
                    ExitCode::SUCCESS
                }
                Ok(list) => {
                    print_jobs(&list);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hookgate dlq jobs: {e}");
                    ExitCode::FAILURE
                }
            },
            Some(JobsAction::Cancel { job }) => match jobs::cancel(&store, &job, &by).await {
                Ok(job) if job.state == JobState::Running => {
                    println!(
                        "job {}: cancel asked; it stops before its next entry ({} of {} done)",
                        job.id, job.done, job.total
                    );
                    ExitCode::SUCCESS
                }
                Ok(job) => {
                    println!(
                        "job {}: {} ({} of {} done)",
                        job.id,
                        job.state.word(),
                        job.done,
                        job.total
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hookgate dlq jobs cancel: {e}");
                    ExitCode::FAILURE
                }
            },
        },
        DlqAction::Delete {
            id,
            matching,
            dry_run,
        } => {
            let steps = Steps::new(&config, &store);
            let replayer = Replayer::new(steps.steps(), true);
            let code = match id {
                Some(id) => delete_one(&replayer, &id, &by).await,
                None => match to_match(&config, &matching, "delete") {
                    Some(m) => by_match(&replayer, Kind::Delete, m, dry_run, None, &by).await,
                    None => ExitCode::FAILURE,
                },
            };
            steps.finish().await;
            code
        }
        DlqAction::Replay {
            id,
            all,
            matching,
            dry_run,
            rate,
        } => {
            let steps = Steps::new(&config, &store);
            if steps.traces_ok().is_none() {
                return ExitCode::FAILURE;
            }
            let replayer = Replayer::new(steps.steps(), true);
            let code = match (id, all) {
                (Some(id), _) => {
                    let results = replayer.replay_id(&id).await.map(|r| vec![(id, r)]);
                    print_results(results)
                }
                (None, true) => {
                    let bar = ReplayBar::new();
                    let results = replayer
                        .replay_all_with(matching.source.as_deref(), |progress| bar.step(progress))
                        .await;
                    bar.finish();
                    print_results(
                        results.map(|all| all.into_iter().map(|(d, r)| (d.id, r)).collect()),
                    )
                }
                (None, false) => match to_match(&config, &matching, "replay") {
                    Some(m) => by_match(&replayer, Kind::Replay, m, dry_run, rate, &by).await,
                    None => ExitCode::FAILURE,
                },
            };
            steps.finish().await;
            code
        }
    }
}

/// What a replay or delete from the command line delivers with: this
/// process's client to the app, metrics and traces, and a copy of the
/// breakers (their state is the store's).
struct Steps<'a> {
    config: &'a crate::config::Config,
    store: &'a crate::store::Store,
    forwarder: crate::forward::Forwarder,
    metrics: crate::metrics::Metrics,
    breakers: crate::breaker::Breakers,
    traces: Result<Option<std::sync::Arc<crate::traces::Traces>>, String>,
}

impl<'a> Steps<'a> {
    fn new(config: &'a crate::config::Config, store: &'a crate::store::Store) -> Steps<'a> {
        let metrics = crate::metrics::Metrics::new();
        // Replays from the command line join their events' traces too.
        let traces = match &config.tracing {
            Some(settings) => {
                crate::traces::Traces::start(settings, metrics.trace_spans_dropped.clone())
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
            None => Ok(None),
        };
        Steps {
            config,
            store,
            forwarder: crate::forward::Forwarder::new(),
            metrics,
            breakers: crate::breaker::Breakers::default(),
            traces,
        }
    }

    /// `None` (said on stderr) when tracing is configured and cannot start.
    fn traces_ok(&self) -> Option<()> {
        match &self.traces {
            Ok(_) => Some(()),
            Err(e) => {
                eprintln!("hookgate dlq replay: tracing: {e}");
                None
            }
        }
    }

    fn steps(&self) -> crate::delivery::Steps<'_> {
        crate::delivery::Steps {
            config: self.config,
            store: self.store,
            forwarder: &self.forwarder,
            metrics: &self.metrics,
            breakers: &self.breakers,
            traces: self.traces.as_ref().ok().and_then(Option::as_ref),
        }
    }

    async fn finish(&self) {
        if let Ok(Some(traces)) = &self.traces {
            traces.flush(std::time::Duration::from_secs(5)).await;
        }
    }
}

/// MATCH from the command line, checked; `None` after saying what is wrong.
fn to_match(config: &crate::config::Config, m: &MatchArgs, verb: &str) -> Option<Match> {
    let parsed = Match::parse(
        m.source.as_deref(),
        m.event_type.as_deref(),
        m.since.as_deref(),
        m.until.as_deref(),
        m.error.as_deref(),
        crate::time::now_ms(),
    );
    match parsed {
        Ok(m) => {
            if let Some(source) = &m.source
                && !config.sources.iter().any(|s| &s.name == source)
            {
                eprintln!("hookgate dlq {verb}: --source: no [[source]] named {source:?}");
                return None;
            }
            Some(m)
        }
        Err(e) => {
            eprintln!("hookgate dlq {verb}: --{e}");
            None
        }
    }
}

async fn delete_one(replayer: &Replayer<'_>, id: &str, by: &str) -> ExitCode {
    let steps = replayer.steps;
    match dlq::delete(steps.store, steps.config, id, by).await {
        Ok(_) => {
            println!("{id}: deleted");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hookgate dlq delete: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A replay or delete by MATCH: a dry run prints the count and the first
/// ten; one entry is handled now; more run as a job this process owns
/// (with progress on a terminal) until it ends.
async fn by_match(
    replayer: &Replayer<'_>,
    kind: Kind,
    m: Match,
    dry_run: bool,
    rate: Option<f64>,
    by: &str,
) -> ExitCode {
    let verb = kind.word();
    let steps = replayer.steps;
    let matched = match jobs::matching(steps.store, steps.config, &m).await {
        Ok(matched) => matched,
        Err(e) => {
            eprintln!("hookgate dlq {verb}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if dry_run {
        println!(
            "{} dead letters match ({}); a dry run changes nothing",
            matched.len(),
            m.describe()
        );
        if !matched.is_empty() {
            let shown = matched.len().min(dlq::matching::SAMPLE);
            println!("the first {shown}:");
            print_list(&matched[..shown]);
        }
        return ExitCode::SUCCESS;
    }
    match matched.as_slice() {
        [] => {
            println!("no dead letters match ({})", m.describe());
            return ExitCode::SUCCESS;
        }
        [one] if kind == Kind::Replay => {
            return print_results(
                replayer
                    .replay(one.clone())
                    .await
                    .map(|r| vec![(one.id.clone(), r)]),
            );
        }
        [one] => return delete_one(replayer, &one.id, by).await,
        _ => {}
    }
    let runner = {
        let mut r = Replayer::new(steps, true);
        r.rate = rate;
        jobs::Runner::new(r)
    };
    let plan = jobs::Plan {
        kind,
        matching: m,
        rate,
        by: by.to_owned(),
    };
    let job = match jobs::start(steps.store, plan, &matched, Some(&runner.owner)).await {
        Ok(job) => job,
        Err(e) => {
            eprintln!("hookgate dlq {verb}: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "job {}: {verb} of {} dead letters started (`hookgate dlq jobs` shows it; killed, a running server finishes it)",
        job.id, job.total
    );
    let bar = ReplayBar::new();
    bar.bar.set_length(job.total);
    let ended = runner
        .run(job, |j| {
            bar.bar.set_position(j.done);
            bar.bar.set_message(format!(
                "{} {}, {} failed, {} skipped",
                j.succeeded,
                if kind == Kind::Replay {
                    "delivered"
                } else {
                    "deleted"
                },
                j.failed,
                j.skipped
            ));
        })
        .await;
    bar.finish();
    match ended {
        Ok(job) => {
            print_job_end(&job);
            if job.state == JobState::Done && job.failed == 0 && job.interrupted.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("hookgate dlq {verb}: {e}; a running server takes the job over");
            ExitCode::FAILURE
        }
    }
}

fn print_job_end(job: &Job) {
    let did = if job.kind == Kind::Replay {
        "delivered"
    } else {
        "deleted"
    };
    println!(
        "job {}: {} · {} of {} done: {} {did}, {} failed (kept as dead letters), {} settled elsewhere",
        job.id,
        job.state.word(),
        job.done,
        job.total,
        job.succeeded,
        job.failed,
        job.skipped
    );
    if !job.interrupted.is_empty() {
        println!(
            "left as dead letters because their attempt was under way when the job's process stopped (check the app, then replay by id): {}",
            job.interrupted.join(" ")
        );
    }
}

fn print_jobs(list: &[Job]) {
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|j| {
            vec![
                j.id.clone(),
                j.kind.word().to_owned(),
                match (&j.waiting, j.state) {
                    (Some(w), JobState::Running) => format!("running (waiting: {w})"),
                    _ => j.state.word().to_owned(),
                },
                format!("{}/{}", j.done, j.total),
                j.succeeded.to_string(),
                j.failed.to_string(),
                j.skipped.to_string(),
                crate::trail::rfc3339(j.created_ms),
                j.by.clone(),
                j.matching.describe(),
            ]
        })
        .collect();
    let header = [
        "JOB", "KIND", "STATE", "DONE", "OK", "FAILED", "SKIPPED", "STARTED", "BY", "MATCH",
    ];
    print!("{}", crate::cli::table(&header, &rows));
}

fn print_results(results: Result<Vec<(String, Replayed)>, dlq::Error>) -> ExitCode {
    let results = match results {
        Ok(results) => results,
        Err(e) => {
            eprintln!("hookgate dlq replay: {e}");
            return ExitCode::FAILURE;
        }
    };
    if results.is_empty() {
        println!("no dead letters to replay");
        return ExitCode::SUCCESS;
    }
    let mut failed = 0;
    for (id, result) in &results {
        match result {
            Replayed::Delivered => println!("{id}: delivered"),
            Replayed::AlreadyDelivered => {
                println!("{id}: already delivered by a sender retry; removed")
            }
            Replayed::StaleVersion => {
                println!("{id}: the app has this version or a newer one; removed")
            }
            Replayed::InFlight => {
                failed += 1;
                println!("{id}: a copy of this event is in flight right now; kept")
            }
            Replayed::Unopenable { error } => {
                failed += 1;
                println!("{id}: {error}; kept, nothing sent")
            }
            Replayed::Held { held } => {
                failed += 1;
                println!("{id}: delivery held ({held}); kept, nothing sent")
            }
            Replayed::Failed { error, new_id } => {
                failed += 1;
                match new_id {
                    Some(new_id) => println!("{id}: failed ({error}); kept as {new_id}"),
                    None => println!("{id}: failed ({error}); settled by another replay"),
                }
            }
        }
    }
    println!(
        "{} replayed, {failed} not delivered",
        results.len() - failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The progress of `dlq replay --all` on a terminal: done / total,
/// delivered, failed. It draws on stderr and only when stderr is a terminal,
/// so piped output holds exactly the lines printed after the run.
struct ReplayBar {
    bar: indicatif::ProgressBar,
    delivered: std::cell::Cell<usize>,
    failed: std::cell::Cell<usize>,
}

impl ReplayBar {
    fn new() -> ReplayBar {
        use std::io::IsTerminal as _;
        let bar = if std::io::stderr().is_terminal() {
            indicatif::ProgressBar::with_draw_target(
                Some(0),
                indicatif::ProgressDrawTarget::stderr(),
            )
        } else {
            indicatif::ProgressBar::hidden()
        };
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("replaying {bar:30} {pos}/{len} · {msg}")
        {
            bar.set_style(style);
        }
        ReplayBar {
            bar,
            delivered: std::cell::Cell::new(0),
            failed: std::cell::Cell::new(0),
        }
    }

    fn step(&self, progress: crate::dlq::Progress<'_>) {
        match progress {
            crate::dlq::Progress::Listed { total } => {
                self.bar.set_length(total as u64);
            }
            crate::dlq::Progress::Waiting { source, held } => {
                let why = match held {
                    crate::delivery::Held::Paused => {
                        "its delivery is paused (hookgate sources resume)".to_owned()
                    }
                    crate::delivery::Held::Breaker(left) => format!(
                        "the app's breaker is open for {}s more",
                        left.as_secs().max(1)
                    ),
                };
                self.bar
                    .suspend(|| eprintln!("hookgate dlq replay: waiting for {source}: {why}"));
            }
            crate::dlq::Progress::Going => {}
            crate::dlq::Progress::Replayed { done, result, .. } => {
                if result.is_success() {
                    self.delivered.set(self.delivered.get() + 1);
                } else {
                    self.failed.set(self.failed.get() + 1);
                }
                self.bar.set_position(done as u64);
            }
        }
        self.bar.set_message(format!(
            "{} delivered, {} failed",
            self.delivered.get(),
            self.failed.get()
        ));
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

fn print_list(entries: &[crate::dlq::Dead]) {
    let rows: Vec<[String; 7]> = entries
        .iter()
        .map(|d| {
            let s = d.summary();
            [
                s.id,
                s.source,
                s.event_id,
                s.event_type.unwrap_or_else(|| "-".into()),
                s.attempts.to_string(),
                humantime::format_duration(std::time::Duration::from_secs(
                    u64::try_from(s.age_secs).unwrap_or(0),
                ))
                .to_string()
                .replace(' ', ""),
                s.unopenable.or(s.last_error).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let header = [
        "ID",
        "SOURCE",
        "EVENT ID",
        "TYPE",
        "ATTEMPTS",
        "AGE",
        "LAST ERROR",
    ];
    let rows: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
    print!("{}", crate::cli::table(&header, &rows));
}

fn print_entry(dead: &crate::dlq::Dead) {
    use base64::Engine as _;
    let e = &dead.envelope;
    let time = |ms: i64| {
        let t = std::time::UNIX_EPOCH
            + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
        humantime::format_rfc3339_millis(t).to_string()
    };
    println!("id: {}", dead.id);
    println!("source: {}", e.source);
    println!("event id: {}", e.event_id);
    println!("event type: {}", e.event_type.as_deref().unwrap_or("-"));
    println!("delivery: {}", e.delivery);
    println!("attempts: {}", e.attempts);
    println!("last error: {}", e.last_error.as_deref().unwrap_or("-"));
    println!("received: {}", time(e.received_ms));
    if let Some(ms) = e.last_attempt_ms {
        println!("last attempt: {}", time(ms));
    }
    if let Some(ms) = e.dead_ms {
        println!("dead letter since: {}", time(ms));
    }
    if let Some(key) = &e.sealed {
        println!("sealed with key: {key}");
    }
    if let Some(why) = e.unopenable() {
        println!("payload: {why}; kept, nothing sent");
        return;
    }
    println!("request: {} {}", e.method, e.uri);
    println!("headers:");
    for (name, value) in e.header_map().iter() {
        match value.to_str() {
            Ok(v) => println!("  {name}: {v}"),
            Err(_) => println!(
                "  {name}: (base64) {}",
                base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
            ),
        }
    }
    match std::str::from_utf8(&e.body) {
        Ok(text) => {
            println!("body ({} bytes, text):", e.body.len());
            println!("{text}");
        }
        Err(_) => {
            println!("body ({} bytes, base64):", e.body.len());
            println!(
                "{}",
                base64::engine::general_purpose::STANDARD.encode(&e.body)
            );
        }
    }
}
