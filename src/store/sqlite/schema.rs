//! The SQLite file's tables and their versions (`PRAGMA user_version`).
//!
//! | table | one row per | columns an operator reads |
//! |---|---|---|
//! | `nonces` | event id the app took | `source`, `event_id`, `state` (`done`; `in_flight` only in files of version 2 and older), `expires_ms` |
//! | `claims` | event id on its way to the app now | `source`, `event_id`, `expires_ms` (the lease) |
//! | `leases` | resource being delivered (version gate) | `source`, `resource`, `expires_ms` |
//! | `versions` | gated resource | `source`, `resource`, `version` (decimal text) |
//! | `failures` | forward-mode event the app failed | `source`, `event_id`, `count` |
//! | `queue` | queued event | `id`, `source`, `event_id`, `event_type`, `attempts`, `last_error`, `due_ms`, `lease_owner` |
//! | `dead_letters` | dead letter | `id`, `source`, `event_id`, `event_type`, `attempts`, `last_error`, `dead_ms` |
//! | `events` (a view of `events_0` to `events_16`) | event in the trail (DESIGN §7a), in the generation that holds it | `generation`, `source`, `event_id`, `event_type`, `state`, `received_ms`, `facts` (one JSON fact a line) |
//! | `trail_generation` | one row | `current`: the generation written now, `oldest`: the oldest kept, `events`: the events `current` holds |
//! | `paused` | paused source (DESIGN §6a) | `source`, `paused_by`, `reason`, `since_ms` |
//! | `breakers` | source whose breaker has been used | `source`, `state` (JSON: failures in a row, open until, cooldown) |
//!
//! The trail keeps its bound in generations ([`crate::trail::generations`]),
//! which take turns in the tables `events_0` to `events_16` (generation
//! `n` in `events_{n % 17}`, [`super::trail`]): an event is written into
//! the few pages of the generation written now, and a generation past the
//! kept ones leaves whole, its table emptied, never event by event. Every
//! transaction that adds events to `current` adds their number to
//! `trail_generation.events`; a writer counts `current`'s rows once when it
//! opens the file (rows an operator deleted by hand are counted again then).
//!
//! A claim lives in `claims`, a table of the few events in flight, so
//! claiming writes the same few pages whatever the id; only the commit
//! writes a row of the large `nonces` table.
//!
//! Times are unix milliseconds. `envelope` holds the stored request: JSON
//! metadata, a newline, the raw body. The schema uses nothing newer than
//! SQLite 3.40 reads, so the `sqlite3` shell of a current distribution opens it.

use std::sync::LazyLock;

use rusqlite::Connection;

/// Each step takes the file from version `index` to `index + 1`: the
/// steps of `WRITTEN`, then the one that puts the trail's generations in
/// tables of their own ([`super::trail::slots_step`]), then those of `LATER`.
pub static STEPS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut steps: Vec<String> = WRITTEN.iter().map(|s| (*s).to_owned()).collect();
    steps.push(super::trail::slots_step());
    steps.extend(LATER.iter().map(|s| (*s).to_owned()));
    steps
});

/// The steps after the trail's tables: each source's circuit breaker, so
/// that every process on the file (the server, `hookgate dlq replay`) sees
/// one state; then the dead-letter jobs (DESIGN §6b), which any of them
/// may take over.
const LATER: &[&str] = &[
    r"
CREATE TABLE breakers (
    source TEXT PRIMARY KEY NOT NULL,
    state  TEXT NOT NULL
);
",
    r"
CREATE TABLE jobs (
    id   TEXT PRIMARY KEY NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE stats (
    width  INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    source TEXT NOT NULL,
    series TEXT NOT NULL,
    count  INTEGER NOT NULL,
    PRIMARY KEY (width, bucket, source, series)
) WITHOUT ROWID;
",
];

const WRITTEN: &[&str] = &[
    r"
CREATE TABLE nonces (
    source     TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    token      TEXT,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (source, event_id)
) WITHOUT ROWID;
CREATE INDEX nonces_expiry ON nonces (expires_ms);

CREATE TABLE leases (
    source     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    token      TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (source, resource)
) WITHOUT ROWID;

CREATE TABLE versions (
    source     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    version    TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (source, resource)
) WITHOUT ROWID;
CREATE INDEX versions_expiry ON versions (expires_ms);

CREATE TABLE failures (
    source     TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    count      INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (source, event_id)
) WITHOUT ROWID;
CREATE INDEX failures_expiry ON failures (expires_ms);

CREATE TABLE queue (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    source         TEXT NOT NULL,
    event_id       TEXT NOT NULL,
    event_type     TEXT,
    attempts       INTEGER NOT NULL DEFAULT 0,
    last_error     TEXT,
    enqueued_ms    INTEGER NOT NULL,
    due_ms         INTEGER NOT NULL,
    lease_owner    TEXT,
    lease_until_ms INTEGER,
    envelope       BLOB NOT NULL
);
CREATE INDEX queue_due ON queue (source, due_ms);

CREATE TABLE dead_letters (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    source      TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    event_type  TEXT,
    delivery    TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    last_error  TEXT,
    received_ms INTEGER NOT NULL,
    dead_ms     INTEGER,
    envelope    BLOB NOT NULL
);
CREATE INDEX dead_letters_source ON dead_letters (source, id);
",
    r"
CREATE TABLE events (
    source      TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    event_type  TEXT,
    state       TEXT NOT NULL,
    received_ms INTEGER NOT NULL,
    facts       TEXT NOT NULL,
    PRIMARY KEY (source, event_id)
) WITHOUT ROWID;
CREATE INDEX events_received ON events (received_ms, source, event_id);
",
    r"
CREATE TABLE claims (
    source     TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    token      TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (source, event_id)
) WITHOUT ROWID;
",
    r"
CREATE TABLE trail_size (events INTEGER NOT NULL);
INSERT INTO trail_size (events) SELECT count(*) FROM events;
",
    r"
CREATE TABLE paused (
    source    TEXT PRIMARY KEY NOT NULL,
    paused_by TEXT NOT NULL,
    reason    TEXT,
    since_ms  INTEGER NOT NULL
);
",
    r"
CREATE TABLE events_by_generation (
    generation  INTEGER NOT NULL,
    source      TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    event_type  TEXT,
    state       TEXT NOT NULL,
    received_ms INTEGER NOT NULL,
    facts       TEXT NOT NULL,
    PRIMARY KEY (generation, source, event_id)
) WITHOUT ROWID;
INSERT INTO events_by_generation
    SELECT 0, source, event_id, event_type, state, received_ms, facts FROM events;
DROP TABLE events;
ALTER TABLE events_by_generation RENAME TO events;
CREATE INDEX events_received ON events (received_ms, source, event_id);
DROP TABLE trail_size;
CREATE TABLE trail_generation (
    current INTEGER NOT NULL,
    oldest  INTEGER NOT NULL,
    events  INTEGER NOT NULL
);
INSERT INTO trail_generation SELECT 0, 0, count(*) FROM events;
",
];

/// The schema version this build writes.
pub const VERSION: i64 = (WRITTEN.len() + 1 + LATER.len()) as i64;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "the file's schema is version {found}, newer than version {supported} that this hookgate knows: \
         run a hookgate at least as new as the one that wrote it, or restore a backup"
    )]
    Newer { found: i64, supported: i64 },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// The schema version of the file at `path` (`PRAGMA user_version`), read
/// without writing or creating anything; `None` when there is no file yet.
pub fn file_version(path: &std::path::Path) -> Result<Option<i64>, Error> {
    if !path.exists() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    Ok(Some(
        conn.query_row("PRAGMA user_version", [], |r| r.get(0))?,
    ))
}

/// Whether a file of schema `found` can be opened by this build.
pub fn known(found: i64) -> Result<(), Error> {
    if found > VERSION {
        return Err(Error::Newer {
            found,
            supported: VERSION,
        });
    }
    Ok(())
}

/// Brings the file to [`VERSION`]: a new file gets every table, an older one
/// the steps it lacks, in one transaction; a newer one is refused untouched.
/// Returns the version the file had.
pub fn migrate(conn: &mut Connection) -> Result<i64, Error> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    known(found)?;
    if found == VERSION {
        return Ok(found);
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    // Another process may have migrated between the read and the lock.
    let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if now > VERSION {
        return Err(Error::Newer {
            found: now,
            supported: VERSION,
        });
    }
    for step in STEPS.iter().skip(usize::try_from(now).unwrap_or(0)) {
        tx.execute_batch(step)?;
    }
    tx.pragma_update(None, "user_version", VERSION)?;
    tx.commit()?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_gets_every_table_and_the_version() {
        let mut conn = Connection::open_in_memory().expect("open");
        assert_eq!(migrate(&mut conn).expect("migrate"), 0);
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("version");
        assert_eq!(v, VERSION);
        for table in [
            "nonces",
            "leases",
            "versions",
            "failures",
            "queue",
            "dead_letters",
            "claims",
            "trail_generation",
        ]
        .into_iter()
        .map(str::to_owned)
        .chain((0..super::super::trail::SLOTS).map(super::super::trail::table))
        {
            let n: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    [&table],
                    |r| r.get(0),
                )
                .expect("lookup");
            assert_eq!(n, 1, "{table}");
        }
        let view: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = 'events'",
                [],
                |r| r.get(0),
            )
            .expect("lookup");
        assert_eq!(view, 1, "the view events");
        // Again: nothing to do.
        assert_eq!(migrate(&mut conn).expect("again"), VERSION);
    }

    /// A file as a hookgate of schema `version` left it.
    fn file_at(version: usize) -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        for step in &STEPS[..version] {
            conn.execute_batch(step).expect("older steps");
        }
        conn.pragma_update(None, "user_version", version as i64)
            .expect("set");
        conn
    }

    #[test]
    fn a_version_1_file_is_migrated_keeping_its_rows() {
        let mut conn = file_at(1);
        conn.execute("INSERT INTO nonces VALUES ('s', 'e', 'done', NULL, 9)", [])
            .expect("row");
        assert_eq!(migrate(&mut conn).expect("migrate"), 1);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM nonces", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, 1);
        for table in ["events", "claims"] {
            let rows: i64 = conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap_or_else(|e| panic!("the new table {table}: {e}"));
            assert_eq!(rows, 0, "{table}");
        }
    }

    /// A file of version 3 keeps the trail it holds, in generation 0, with
    /// `trail_generation` counting it.
    #[test]
    fn an_older_trail_becomes_generation_zero() {
        let mut conn = file_at(3);
        for id in ["a", "b", "c"] {
            conn.execute(
                "INSERT INTO events VALUES ('s', ?1, NULL, 'delivered', 1, 'x')",
                [id],
            )
            .expect("row");
        }
        assert_eq!(migrate(&mut conn).expect("migrate"), 3);
        let held: (i64, i64, i64) = conn
            .query_row(
                "SELECT current, oldest, events FROM trail_generation",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("generation");
        assert_eq!(held, (0, 0, 3));
        let rows: Vec<(i64, String, String)> = conn
            .prepare("SELECT generation, event_id, facts FROM events ORDER BY event_id")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(
            rows,
            [
                (0, "a".to_owned(), "x".to_owned()),
                (0, "b".to_owned(), "x".to_owned()),
                (0, "c".to_owned(), "x".to_owned())
            ]
        );
    }

    /// A file of version 6 (one `events` table keyed by generation) keeps
    /// the generations a reader looks through, each in its table, and
    /// leaves the older ones.
    #[test]
    fn the_generations_move_to_their_tables() {
        use super::super::trail::{SLOTS, table};
        let mut conn = file_at(6);
        for (generation, id) in [
            (2, "old"),
            (4, "a"),
            (5, "b"),
            (19, "c"),
            (20, "d"),
            (20, "e"),
        ] {
            conn.execute(
                "INSERT INTO events VALUES (?1, 's', ?2, NULL, 'delivered', 1, 'x')",
                rusqlite::params![generation, id],
            )
            .expect("row");
        }
        conn.execute(
            "UPDATE trail_generation SET current = 20, oldest = 2, events = 2",
            [],
        )
        .expect("generation");
        assert_eq!(migrate(&mut conn).expect("migrate"), 6);
        let oldest: i64 = conn
            .query_row("SELECT oldest FROM trail_generation", [], |r| r.get(0))
            .expect("oldest");
        assert_eq!(oldest, 20 - SLOTS + 1);
        for (generation, ids) in [
            (4, vec!["a"]),
            (5, vec!["b"]),
            (19, vec!["c"]),
            (20, vec!["d", "e"]),
        ] {
            let held: Vec<String> = conn
                .prepare(&format!(
                    "SELECT event_id FROM {} WHERE generation = ?1 ORDER BY event_id",
                    table(generation)
                ))
                .expect("prepare")
                .query_map([generation], |r| r.get(0))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows");
            assert_eq!(held, ids, "generation {generation}");
        }
        let all: Vec<String> = conn
            .prepare("SELECT event_id FROM events ORDER BY event_id")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(
            all,
            ["a", "b", "c", "d", "e"],
            "generation 2 is past the kept ones"
        );
    }

    #[test]
    fn a_newer_file_is_refused_untouched() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "user_version", VERSION + 1)
            .expect("set");
        let e = migrate(&mut conn).expect_err("newer");
        let text = e.to_string();
        assert!(
            text.contains(&format!("version {}", VERSION + 1))
                && text.contains(&format!("version {VERSION}")),
            "{text}"
        );
        let n: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, 0);
    }
}
