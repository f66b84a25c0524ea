//! "Replay all" runs: each a background task with a random id, whose
//! progress the console's page shows (and its script polls as JSON at
//! `GET /console/replays/{id}`).
//!
//! At most [`MAX_RUNS`] runs are remembered; starting one more forgets the
//! oldest finished run (a running one is never forgotten). One run per
//! source at a time: asking again while one runs points at the running one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use super::Console;
use crate::dlq::{Progress as Step, Replayer};
use crate::state::State;

/// Runs remembered at once.
pub const MAX_RUNS: usize = 32;

/// Where one run is.
#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    pub id: String,
    pub source: String,
    /// Entries to replay; `None` until they are listed.
    pub total: Option<usize>,
    pub done: usize,
    pub delivered: usize,
    pub failed: usize,
    pub finished: bool,
    /// Why the run stopped early (a store error), if it did.
    pub error: Option<String>,
    /// Why the next entry waits, while it does (DESIGN §6a).
    pub held: Option<&'static str>,
}

#[derive(Default)]
pub struct Replays {
    runs: Mutex<VecDeque<Progress>>,
}

impl Replays {
    /// One run by id.
    pub fn get(&self, id: &str) -> Option<Progress> {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.iter()
            .find(|p| crate::console::session::same(&p.id, id))
            .cloned()
    }

    fn update(&self, id: &str, change: impl FnOnce(&mut Progress)) {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(progress) = runs.iter_mut().find(|p| p.id == id) {
            change(progress);
        }
    }

    /// Starts replaying every dead letter of `source` in the background, or
    /// finds the run already doing it; returns the run's id.
    pub fn start(state: &Arc<State>, console: &Arc<Console>, source: &str) -> String {
        let replays = &console.replays;
        let id = {
            let mut runs = replays.runs.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(running) = runs.iter().find(|p| p.source == source && !p.finished) {
                return running.id.clone();
            }
            if runs.len() >= MAX_RUNS
                && let Some(at) = runs.iter().position(|p| p.finished)
            {
                runs.remove(at);
            }
            let id = hex::encode(rand::random::<[u8; 16]>());
            runs.push_back(Progress {
                id: id.clone(),
                source: source.to_owned(),
                total: None,
                done: 0,
                delivered: 0,
                failed: 0,
                finished: false,
                error: None,
                held: None,
            });
            id
        };
        let state = Arc::clone(state);
        let console = Arc::clone(console);
        let (run, source) = (id.clone(), source.to_owned());
        tokio::spawn(async move {
            let runtime = state.runtime();
            let replayer = Replayer::new(state.steps(&runtime.config), true);
            let replays = &console.replays;
            let result = replayer
                .replay_all_with(Some(&source), |step| match step {
                    Step::Listed { total } => replays.update(&run, |p| p.total = Some(total)),
                    Step::Waiting { held, .. } => replays.update(&run, |p| {
                        p.held = Some(match held {
                            crate::delivery::Held::Paused => "the source's delivery is paused",
                            crate::delivery::Held::Breaker(_) => "the app's breaker is open",
                        });
                    }),
                    Step::Going => replays.update(&run, |p| p.held = None),
                    Step::Replayed { done, result, .. } => replays.update(&run, |p| {
                        p.held = None;
                        p.done = done;
                        if result.is_success() {
                            p.delivered += 1;
                        } else {
                            p.failed += 1;
                        }
                    }),
                })
                .await;
            if let Err(e) = &result {
                tracing::warn!(source = %source, error = %e, "console: replay all stopped");
            }
            replays.update(&run, |p| {
                p.finished = true;
                p.error = result
                    .err()
                    .map(|_| "the store failed; the rest were not replayed".to_owned());
            });
        });
        id
    }
}
