//! `hookgate sources list | pause | resume`: delivery per source, beside a
//! running server (the state is kept in the store).

use std::path::Path;
use std::process::ExitCode;

use super::open;

/// `hookgate sources list | pause NAME [--reason TEXT] | resume NAME`.
pub async fn sources(path: &Path, action: crate::cli::SourcesAction) -> ExitCode {
    use crate::cli::SourcesAction;
    use crate::pause;

    let (config, store) = match open(path, "sources") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let by = format!(
        "cli:{}@{}",
        crate::cli::effective_user(),
        crate::trail::replica_name()
    );
    match action {
        SourcesAction::List => match pause::list(&store, &config).await {
            Ok(states) => {
                print!("{}", pause::list_text(&states));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("hookgate sources list: {e}");
                ExitCode::FAILURE
            }
        },
        SourcesAction::Pause { name, reason } => {
            match pause::pause(&store, &config, &name, &by, reason.as_deref()).await {
                Ok(_) => {
                    println!(
                        "{name}: delivery paused; events are still verified, answered 200 queued and kept (every replica stops within {}s)",
                        pause::READ_EVERY.as_secs()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hookgate sources pause: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        SourcesAction::Resume { name } => match pause::resume(&store, &config, &name, &by).await {
            Ok(true) => {
                println!("{name}: delivery resumed; the backlog drains oldest first");
                ExitCode::SUCCESS
            }
            Ok(false) => {
                println!("{name}: was not paused");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("hookgate sources resume: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
