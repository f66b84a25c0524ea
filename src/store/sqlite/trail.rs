//! The trail's tables (DESIGN §7a) as the writer keeps them: an event's
//! facts appended to its row in the transaction of the op they ride on,
//! folded into one line when the row grows long. The trail is kept in
//! generations ([`crate::trail::generations`]), and the generations take
//! turns in [`SLOTS`] tables: generation `n` lives in `events_{n % SLOTS}`,
//! so a new event is written into the pages of the generation written now,
//! and a generation past the kept ones leaves whole, its table emptied in
//! one truncation (`DELETE` without `WHERE`: its pages go to the free list,
//! none of them read row by row or written to the WAL), never event by
//! event. `events` is a view of all of them for readers.
//!
//! An event's row lives in one generation: facts for an event held in an
//! older one move its row, received time and all, to the one written now.
//! The one exception is a fresh record (a `Received` fact, as a sender's
//! retry after a release brings) for an event whose row is in an older
//! generation: it starts a second row, and readers join the rows, oldest
//! generation first, and list the event once ([`rows_of`]).

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use std::sync::LazyLock;

use crate::trail::{GENERATIONS, generations};

/// Tables the generations take turns in: one for each kept generation
/// ([`GENERATIONS`] at most) and one for the generation written now.
pub const SLOTS: i64 = GENERATIONS as i64 + 1;

/// The name of generation `n`'s table.
pub fn table(n: i64) -> String {
    format!("events_{}", n.rem_euclid(SLOTS))
}

/// The statements on one slot's table, written once.
struct Sql {
    insert: String,
    state: String,
    append: String,
    find: String,
    delete: String,
    facts: String,
    set_facts: String,
    rows: String,
    clear: String,
}

impl Sql {
    fn of(slot: i64) -> Sql {
        let t = table(slot);
        let key = "generation = ?1 AND source = ?2 AND event_id = ?3";
        Sql {
            insert: format!(
                "INSERT OR IGNORE INTO {t} \
                 (generation, source, event_id, event_type, state, received_ms, facts) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ),
            state: format!("SELECT state FROM {t} WHERE {key}"),
            append: format!(
                "UPDATE {t} SET state = ?4, facts = facts || ?5 WHERE {key} RETURNING length(facts)"
            ),
            find: format!("SELECT state, event_type, received_ms, facts FROM {t} WHERE {key}"),
            delete: format!("DELETE FROM {t} WHERE {key}"),
            facts: format!("SELECT facts FROM {t} WHERE {key}"),
            set_facts: format!("UPDATE {t} SET facts = ?4 WHERE {key}"),
            rows: format!("SELECT received_ms, facts FROM {t} WHERE {key}"),
            clear: format!("DELETE FROM {t}"),
        }
    }
}

/// Generation `n`'s statements.
fn sql(n: i64) -> &'static Sql {
    static ALL: LazyLock<Vec<Sql>> = LazyLock::new(|| (0..SLOTS).map(Sql::of).collect());
    // rem_euclid is in 0..SLOTS, the length of ALL.
    &ALL[usize::try_from(n.rem_euclid(SLOTS)).unwrap_or(0)]
}

/// The schema step that puts the generations in their tables, and the
/// view `events` over them (rows of a generation older than the newest
/// [`SLOTS`] are left behind: they are past the kept ones).
pub fn slots_step() -> String {
    let mut step = String::new();
    let current = "coalesce((SELECT current FROM trail_generation), \
                   (SELECT max(generation) FROM events), 0)";
    for k in 0..SLOTS {
        let t = table(k);
        step.push_str(&format!(
            "CREATE TABLE {t} (
    generation  INTEGER NOT NULL,
    source      TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    event_type  TEXT,
    state       TEXT NOT NULL,
    received_ms INTEGER NOT NULL,
    facts       TEXT NOT NULL,
    PRIMARY KEY (generation, source, event_id)
) WITHOUT ROWID;
CREATE INDEX {t}_received ON {t} (received_ms, source, event_id);
INSERT INTO {t} SELECT * FROM events
    WHERE generation % {SLOTS} = {k} AND generation > {current} - {SLOTS};
"
        ));
    }
    step.push_str(&format!(
        "DROP TABLE events;
CREATE VIEW events AS {};
UPDATE trail_generation SET oldest = max(oldest, current - {});
",
        (0..SLOTS)
            .map(|k| format!("SELECT * FROM {}", table(k)))
            .collect::<Vec<_>>()
            .join(" UNION ALL "),
        SLOTS - 1
    ));
    step
}

/// Facts appended to an event's trail; the oldest generations beyond
/// `max` are removed between batches.
#[derive(Debug)]
pub struct TrailWrite {
    pub source: String,
    pub event_id: String,
    pub facts: Vec<crate::trail::Fact>,
    /// `facts` as JSON lines, written by the sender (off this thread).
    pub lines: String,
    pub max: usize,
}

/// The generation written now and the oldest one that may still hold rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    pub current: i64,
    pub oldest: i64,
}

impl Generation {
    /// The generations a reader or a writer looks through, oldest first:
    /// at most [`SLOTS`], one a table.
    pub fn live(&self) -> std::ops::RangeInclusive<i64> {
        self.oldest.max(self.current - SLOTS + 1).max(0)..=self.current
    }
}

/// Where the trail stands (generation 0 in a file without the row).
pub fn generation(conn: &Connection) -> rusqlite::Result<Generation> {
    Ok(conn
        .prepare_cached("SELECT current, oldest FROM trail_generation")?
        .query_row([], |r| {
            Ok(Generation {
                current: r.get(0)?,
                oldest: r.get(1)?,
            })
        })
        .optional()?
        .unwrap_or(Generation {
            current: 0,
            oldest: 0,
        }))
}

/// Appends `t`'s facts to its event's row in generation `g.current`. The
/// facts are JSON lines, appended; the state column moves by
/// [`crate::trail::next_state`], so nothing already written is read back
/// but the state, until the text passes [`crate::trail::COMPACT_BYTES`]
/// and is folded into one line. An event not held yet is taken only from
/// its `Received` fact; it costs one insert, and only an event already
/// held is read first. Returns whether it added a row to `g.current`.
pub(super) fn write_trail(
    tx: &Transaction<'_>,
    t: &TrailWrite,
    now: i64,
    g: Generation,
) -> rusqlite::Result<bool> {
    use crate::trail::{Fact, next_state};
    let fresh = t.facts.iter().fold(None, next_state);
    if let Some(state) = fresh {
        let (at, event_type) = t
            .facts
            .iter()
            .find_map(|f| match f {
                Fact::Received { at, event_type, .. } => Some((*at, event_type.as_deref())),
                _ => None,
            })
            .unwrap_or((now, None));
        let row = Row {
            event_type,
            state: state.word(),
            received_ms: at,
            facts: &t.lines,
        };
        if insert(tx, g.current, t, &row)? {
            return Ok(true);
        }
    }
    let held: Option<String> = tx
        .prepare_cached(&sql(g.current).state)?
        .query_row(params![g.current, t.source, t.event_id], |r| r.get(0))
        .optional()?;
    let Some(was) = held.as_deref().and_then(crate::trail::State::parse) else {
        return move_trail(tx, t, g);
    };
    if let Some(state) = t.facts.iter().fold(Some(was), next_state) {
        let length: i64 = tx.prepare_cached(&sql(g.current).append)?.query_row(
            params![g.current, t.source, t.event_id, state.word(), t.lines],
            |r| r.get(0),
        )?;
        if usize::try_from(length).unwrap_or(usize::MAX) > crate::trail::COMPACT_BYTES {
            compact_trail(tx, g.current, &t.source, &t.event_id)?;
        }
    }
    Ok(false)
}

/// An event's row but its key.
struct Row<'a> {
    event_type: Option<&'a str>,
    state: &'a str,
    received_ms: i64,
    facts: &'a str,
}

/// Inserts `t`'s event into `generation` as `row`, unless held there
/// already. Returns whether it did.
fn insert(
    tx: &Transaction<'_>,
    generation: i64,
    t: &TrailWrite,
    row: &Row<'_>,
) -> rusqlite::Result<bool> {
    let added = tx
        .prepare_cached(&sql(generation).insert)?
        .execute(params![
            generation,
            t.source,
            t.event_id,
            row.event_type,
            row.state,
            row.received_ms,
            row.facts
        ])?;
    Ok(added == 1)
}

/// Moves the event's row from the newest older generation that holds it
/// into `g.current` with `t`'s facts appended. Returns whether it did (an
/// event held nowhere takes no facts without a start).
fn move_trail(tx: &Transaction<'_>, t: &TrailWrite, g: Generation) -> rusqlite::Result<bool> {
    use crate::trail::next_state;
    for n in g.live().rev().filter(|&n| n < g.current) {
        let row: Option<(String, Option<String>, i64, String)> = tx
            .prepare_cached(&sql(n).find)?
            .query_row(params![n, t.source, t.event_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        let Some((state, event_type, received_ms, facts)) = row else {
            continue;
        };
        let was = crate::trail::State::parse(&state);
        let state = t
            .facts
            .iter()
            .fold(was, next_state)
            .map_or(state, |s| s.word().to_owned());
        let facts = facts + &t.lines;
        tx.prepare_cached(&sql(n).delete)?
            .execute(params![n, t.source, t.event_id])?;
        let row = Row {
            event_type: event_type.as_deref(),
            state: &state,
            received_ms,
            facts: &facts,
        };
        insert(tx, g.current, t, &row)?;
        if facts.len() > crate::trail::COMPACT_BYTES {
            compact_trail(tx, g.current, &t.source, &t.event_id)?;
        }
        return Ok(true);
    }
    Ok(false)
}

/// Folds an event's facts in `generation` into one `summary` line (DESIGN
/// §7a: a record stays a few KiB), in the transaction that made them too
/// long.
pub(super) fn compact_trail(
    tx: &Transaction<'_>,
    generation: i64,
    source: &str,
    event_id: &str,
) -> rusqlite::Result<()> {
    let text: String = tx
        .prepare_cached(&sql(generation).facts)?
        .query_row(params![generation, source, event_id], |r| r.get(0))?;
    if let Some(folded) = crate::trail::compact(&text) {
        tx.prepare_cached(&sql(generation).set_facts)?
            .execute(params![generation, source, event_id, folded])?;
    }
    Ok(())
}

/// Adds `n` to the events `trail_generation` says the current generation
/// holds.
pub(super) fn count_trail(conn: &Connection, n: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE trail_generation SET events = events + ?1")?
        .execute(params![n])
        .map(drop)
}

/// Sets `trail_generation.events` to the rows the current generation
/// holds, counting them (once, when a writer opens the file), and puts the
/// row back if an operator deleted it.
pub(super) fn recount_trail(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO trail_generation (current, oldest, events) \
         SELECT current, oldest, 0 FROM \
         (SELECT coalesce(max(generation), 0) AS current, coalesce(min(generation), 0) AS oldest \
          FROM events) \
         WHERE NOT EXISTS (SELECT 1 FROM trail_generation)",
        [],
    )?;
    conn.execute(
        "UPDATE trail_generation SET events = \
         (SELECT count(*) FROM events WHERE generation = trail_generation.current)",
        [],
    )
    .map(drop)
}

/// Starts the next generation when the current one holds its share of
/// `max`, and empties the tables of the generations past the kept ones.
pub(super) fn roll_trail(conn: &Connection, max: usize) -> rusqlite::Result<()> {
    let (kept, size) = generations(max);
    let (mut current, oldest, held): (i64, i64, i64) = conn
        .prepare_cached("SELECT current, oldest, events FROM trail_generation")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    if held >= size {
        current += 1;
        // The table it takes held generation `current - SLOTS`, past the
        // kept ones, or nothing.
        conn.prepare_cached(&sql(current).clear)?.execute([])?;
        conn.prepare_cached("UPDATE trail_generation SET current = ?1, events = 0")?
            .execute(params![current])?;
    }
    // The kept full generations and the current one: `kept < SLOTS`, so
    // the generations emptied here have tables of their own.
    let keep = current - kept;
    if oldest < keep {
        for n in oldest.max(current - SLOTS + 1)..keep {
            conn.prepare_cached(&sql(n).clear)?.execute([])?;
        }
        conn.prepare_cached("UPDATE trail_generation SET oldest = ?1")?
            .execute(params![keep])?;
    }
    Ok(())
}

/// One event's rows, oldest generation first: `(generation, received_ms,
/// facts)`.
pub fn rows_of(
    conn: &Connection,
    g: Generation,
    source: &str,
    event_id: &str,
) -> rusqlite::Result<Vec<(i64, i64, String)>> {
    let mut out = Vec::new();
    for n in g.live() {
        if let Some((at, facts)) = conn
            .prepare_cached(&sql(n).rows)?
            .query_row(params![n, source, event_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
        {
            out.push((n, at, facts));
        }
    }
    Ok(out)
}
