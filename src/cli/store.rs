//! `hookgate store rekey [--dry-run]`: stored payloads rewritten under the
//! first key of `[store.encryption]` (DESIGN §4b), beside a running server.

use std::io::IsTerminal as _;
use std::path::Path;
use std::process::ExitCode;

use super::open_scrubbing;
use crate::rekey::{self, Census, PLAINTEXT};

/// `hookgate store rekey [--dry-run]`.
pub async fn store(path: &Path, action: crate::cli::StoreAction) -> ExitCode {
    let crate::cli::StoreAction::Rekey { dry_run } = action;
    // Rewritten rows leave nothing readable behind, freed pages included.
    let scrub = crate::store::sqlite::SecureDelete::Full;
    let (config, store) = match open_scrubbing(path, "store", scrub) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if !store.keeps_queue() {
        eprintln!("hookgate store rekey: {}", crate::store::Error::NotKept);
        return ExitCode::FAILURE;
    }
    let keys = &config.store.encryption;
    let Some(first) = keys.sealing() else {
        eprintln!(
            "hookgate store rekey: [store.encryption] lists no key to seal with; add one (head -c 32 /dev/urandom | base64) first"
        );
        return ExitCode::FAILURE;
    };
    let before = match rekey::census(&store, &config).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hookgate store rekey: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("stored payloads by key:\n{}", before.text().trim_end());
    let to_do = before.not_under(Some(first));
    if to_do == 0 {
        println!("every payload is sealed with {first}; nothing to rewrite");
        print_retired(&before, &config);
        return ExitCode::SUCCESS;
    }
    let verb = if dry_run {
        "would rewrite"
    } else {
        "rewriting"
    };
    println!("{verb} {to_do} payloads under {first}");
    let terminal = std::io::stderr().is_terminal();
    let mut pages = 0u64;
    let report = rekey::rekey(&store, &config, dry_run, |r| {
        pages += 1;
        if terminal || pages.is_multiple_of(50) {
            eprintln!(
                "checked {}, rewritten {}, changed meanwhile {}",
                r.checked, r.rewritten, r.raced
            );
        }
    })
    .await;
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "hookgate store rekey: {e}; what was rewritten stays so: run it again to go on"
            );
            return ExitCode::FAILURE;
        }
    };
    if dry_run {
        println!(
            "dry run: {} payloads would be rewritten; nothing changed",
            report.rewritten
        );
        return ExitCode::SUCCESS;
    }
    println!(
        "rewritten {}; changed by a replica meanwhile {}; cannot be opened {}",
        report.rewritten, report.raced, report.unopenable
    );
    let after = match rekey::census(&store, &config).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hookgate store rekey: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("stored payloads by key now:\n{}", after.text().trim_end());
    if report.not_compacted > 0 {
        println!(
            "{} Redis streams still hold the bytes of removed entries (a worker holds entries, or over 100000 entries); run rekey again when the queue is quiet",
            report.not_compacted
        );
    }
    print_retired(&after, &config);
    if report.unopenable > 0 {
        eprintln!(
            "hookgate store rekey: {} payloads cannot be opened with the configured keys (hookgate dlq list shows which key each names); they are kept as they are",
            report.unopenable
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Which listed keys seal nothing now, so may leave the config.
fn print_retired(census: &Census, config: &crate::config::Config) {
    let keys = &config.store.encryption;
    for id in keys.ids().skip(1) {
        if census.by_key.get(id).copied().unwrap_or(0) == 0 {
            println!(
                "key {id} seals no stored payload: it may leave [store.encryption] keys once every replica runs with the new first key"
            );
        }
    }
    if census.by_key.get(PLAINTEXT).copied().unwrap_or(0) > 0 {
        println!(
            "payloads stored as they are remain (written by a replica without the keys?); run rekey again"
        );
    }
}
