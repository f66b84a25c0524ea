//! `hookgate events list | show`: the trail, read from the store.

use std::path::Path;
use std::process::ExitCode;

use super::open;

/// `hookgate events list [--source S] [--state W] [--limit N] | show SOURCE EVENT_ID`.
pub async fn events(path: &Path, action: crate::cli::EventsAction) -> ExitCode {
    use crate::cli::EventsAction;
    use crate::{events, trail};

    let (config, store) = match open(path, "events") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if !store.keeps_queue() {
        // The memory store's trail lives in the running process: a command
        // opening the store afresh would see an empty one and say so.
        eprintln!(
            "hookgate events: the memory store's trail lives in the running server's process, \
             not where this command can read it; ask the server: GET /events on the admin \
             listener ({}), with the admin token",
            config.admin.listen
        );
        return ExitCode::FAILURE;
    }
    match action {
        EventsAction::List {
            source,
            state,
            limit,
        } => {
            let state = match state.as_deref().map(trail::State::parse) {
                None => None,
                Some(Some(s)) => Some(s),
                Some(None) => {
                    eprintln!(
                        "hookgate events list: --state is one of in_flight, delivered, released, waiting, dropped, dead_letter"
                    );
                    return ExitCode::from(2);
                }
            };
            if !(1..=trail::MAX_LIMIT).contains(&limit) {
                eprintln!("hookgate events list: --limit is a number from 1 to 1000");
                return ExitCode::from(2);
            }
            let filter = trail::Filter {
                source,
                state,
                event_type: None,
                limit,
                before: None,
            };
            match events::list(&store, &config, &filter).await {
                Ok(page) if page.events.is_empty() => {
                    println!("no events in the trail");
                    ExitCode::SUCCESS
                }
                Ok(page) => {
                    print!("{}", events::list_text(&page));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hookgate events list: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        EventsAction::Show { source, event_id } => {
            match events::show(&store, &config, &source, &event_id).await {
                Ok(Some(shown)) => {
                    print!("{}", events::show_text(&shown));
                    ExitCode::SUCCESS
                }
                Ok(None) => {
                    eprintln!(
                        "hookgate events show: the trail has no event {event_id:?} of source {source:?}"
                    );
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("hookgate events show: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
