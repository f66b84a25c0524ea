//! `hookgate dlq list | show | replay`: dead letters, read and replayed
//! from the store.

use std::path::Path;
use std::process::ExitCode;

use super::{DlqAction, open};

/// `hookgate dlq list | show ID | replay (ID | --all) [--source NAME]`.
pub async fn dlq(path: &Path, action: DlqAction) -> ExitCode {
    use crate::dlq::{self, Replayed, Replayer};

    let (config, store) = match open(path, "dlq") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if !store.keeps_queue() {
        eprintln!("hookgate dlq: {}", crate::store::Error::NotKept);
        return ExitCode::FAILURE;
    }
    let prefix = &config.store.key_prefix;
    match action {
        DlqAction::List { source } => {
            match dlq::list(&store, prefix, &config.store.encryption, source.as_deref()).await {
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
        DlqAction::Show { id } => {
            match dlq::get(&store, prefix, &config.store.encryption, &id).await {
                Ok(dead) => {
                    print_entry(&dead);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hookgate dlq show: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        DlqAction::Replay { id, all, source } => {
            let forwarder = crate::forward::Forwarder::new();
            let metrics = crate::metrics::Metrics::new();
            // Replays from the command line join their events' traces too.
            let traces = match &config.tracing {
                Some(settings) => {
                    match crate::traces::Traces::start(
                        settings,
                        metrics.trace_spans_dropped.clone(),
                    ) {
                        Ok(traces) => Some(traces),
                        Err(e) => {
                            eprintln!("hookgate dlq replay: tracing: {e}");
                            return ExitCode::FAILURE;
                        }
                    }
                }
                None => None,
            };
            // The breakers' state is the store's; this process keeps a copy.
            let breakers = crate::breaker::Breakers::default();
            let replayer = Replayer::new(
                crate::delivery::Steps {
                    config: &config,
                    store: &store,
                    forwarder: &forwarder,
                    metrics: &metrics,
                    breakers: &breakers,
                    traces: traces.as_ref(),
                },
                true,
            );
            let results = match (id, all) {
                (Some(id), _) => replayer.replay_id(&id).await.map(|r| vec![(id, r)]),
                (None, _) => {
                    let bar = ReplayBar::new();
                    let results = replayer
                        .replay_all_with(source.as_deref(), |progress| bar.step(progress))
                        .await;
                    bar.finish();
                    results.map(|all| all.into_iter().map(|(d, r)| (d.id, r)).collect())
                }
            };
            if let Some(traces) = &traces {
                traces.flush(std::time::Duration::from_secs(5)).await;
            }
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
