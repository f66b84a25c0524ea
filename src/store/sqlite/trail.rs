//! The trail's table (DESIGN §7a) as the writer keeps it: an event's facts
//! appended to its row in the transaction of the op they ride on, folded
//! into one line when the row grows long. The bound is kept in
//! generations ([`crate::trail::generations`]) removed whole, never event
//! by event.
//!
//! `events` is in arrival order (`seq`, its rowid): a new event's row goes
//! on the last page, beside the rows written just before it, so a
//! transaction writes a page or two of the trail whatever the events' ids.
//! An event is found by its id through `event_ids`, filled for a whole
//! generation when it is full (a sorted run appended at once); the rows of
//! the generation written now (`seq ≥ trail_generation.first`) are in no
//! index: the writer keeps their ids in memory ([`Current`]), a reader
//! reads through them.
//!
//! An event's row lives in one generation: facts for an event held in an
//! older one move its row, received time and all, to the one written now.
//! The one exception is a fresh record (a `Received` fact, as a sender's
//! retry after a release brings) for an event whose row is in an older
//! generation: it starts a second row, and readers join the rows, oldest
//! generation first, and list the event once ([`rows_of`]).

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::PURGE_LIMIT;
use crate::trail::{REACH, generations};

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

/// Where the trail stands: the generation written now, the oldest one
/// that may still hold rows, and the first row of the one written now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    pub current: i64,
    pub oldest: i64,
    pub first: i64,
}

impl Generation {
    /// The generations a reader or a writer looks through, oldest first.
    pub fn live(&self) -> std::ops::RangeInclusive<i64> {
        self.oldest.max(self.current - REACH).max(0)..=self.current
    }
}

/// Where the trail stands (generation 0 from the first row in a file
/// without the row).
pub fn generation(conn: &Connection) -> rusqlite::Result<Generation> {
    Ok(conn
        .prepare_cached("SELECT current, oldest, first FROM trail_generation")?
        .query_row([], |r| {
            Ok(Generation {
                current: r.get(0)?,
                oldest: r.get(1)?,
                first: r.get(2)?,
            })
        })
        .optional()?
        .unwrap_or(Generation {
            current: 0,
            oldest: 0,
            first: 0,
        }))
}

/// The writer's index of the generation written now: each event's row
/// (`seq`), for every row of the generation up to `seen`, the newest row it
/// read or wrote. Rows another process wrote since are read in when a
/// transaction starts ([`Current::sync`], under the write lock); a
/// transaction rolled back forgets it all ([`Current::forget`]). It holds
/// one entry per row of the generation: at most its size and one batch.
#[derive(Debug, Default)]
pub struct Current {
    generation: i64,
    /// The newest `seq` known; `None` when nothing is.
    seen: Option<i64>,
    rows: HashMap<String, HashMap<String, i64>>,
}

impl Current {
    /// Forgets everything (a transaction that wrote through it rolled back).
    pub fn forget(&mut self) {
        self.seen = None;
        self.rows.clear();
    }

    /// Brings the index up to the file at the start of a transaction
    /// holding the write lock: rows written since `seen` are read in, all
    /// of the generation when it changed or nothing is known.
    pub fn sync(&mut self, tx: &Transaction<'_>, g: Generation) -> rusqlite::Result<()> {
        let newest: i64 = tx
            .prepare_cached("SELECT coalesce(max(seq), 0) FROM events")?
            .query_row([], |r| r.get(0))?;
        let from = match self.seen {
            Some(seen) if self.generation == g.current && newest >= seen => seen + 1,
            _ => {
                self.rows.clear();
                g.first
            }
        };
        if newest >= from {
            let mut read = tx.prepare_cached(
                "SELECT seq, source, event_id FROM events WHERE seq >= ?1 ORDER BY seq",
            )?;
            let mut rows = read.query(params![from])?;
            while let Some(r) = rows.next()? {
                self.add(r.get(1)?, r.get(2)?, r.get(0)?);
            }
        }
        self.generation = g.current;
        self.seen = Some(newest.max(g.first - 1));
        Ok(())
    }

    fn held(&self, source: &str, event_id: &str) -> Option<i64> {
        self.rows.get(source)?.get(event_id).copied()
    }

    fn add(&mut self, source: String, event_id: String, seq: i64) {
        self.rows.entry(source).or_default().insert(event_id, seq);
    }

    fn remove(&mut self, source: &str, event_id: &str) {
        if let Some(ids) = self.rows.get_mut(source) {
            ids.remove(event_id);
        }
    }

    /// The `seq` of the next row written.
    fn next(&mut self) -> i64 {
        let seq = self.seen.map_or(1, |s| s + 1);
        self.seen = Some(seq);
        seq
    }
}

/// Appends `t`'s facts to its event's row in generation `g.current`. The
/// facts are JSON lines, appended; the state column moves by
/// [`crate::trail::next_state`], so nothing already written is read back
/// but the state, until the text passes [`crate::trail::COMPACT_BYTES`]
/// and is folded into one line. An event not held yet is taken only from
/// its `Received` fact; it costs one insert on the last page, and only an
/// event already held is read first. `current` is synced for `g`
/// ([`Current::sync`]). Returns whether it added a row to `g.current`.
pub(super) fn write_trail(
    tx: &Transaction<'_>,
    t: &TrailWrite,
    now: i64,
    g: Generation,
    current: &mut Current,
) -> rusqlite::Result<bool> {
    use crate::trail::{Fact, next_state};
    let fresh = t.facts.iter().fold(None, next_state);
    let held = current.held(&t.source, &t.event_id);
    if let (Some(state), None) = (fresh, held) {
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
        insert(tx, g.current, t, &row, current)?;
        return Ok(true);
    }
    let Some(seq) = held else {
        return move_trail(tx, t, g, current);
    };
    let was: Option<String> = tx
        .prepare_cached(
            "SELECT state FROM events WHERE seq = ?1 AND source = ?2 AND event_id = ?3",
        )?
        .query_row(params![seq, t.source, t.event_id], |r| r.get(0))
        .optional()?;
    let Some(was) = was else {
        // Gone from under the index (removed by hand): written afresh.
        current.remove(&t.source, &t.event_id);
        return write_trail(tx, t, now, g, current);
    };
    if let Some(state) = t
        .facts
        .iter()
        .fold(crate::trail::State::parse(&was), next_state)
    {
        let length: i64 = tx
            .prepare_cached(
                "UPDATE events SET state = ?2, facts = facts || ?3 WHERE seq = ?1 \
                 RETURNING length(facts)",
            )?
            .query_row(params![seq, state.word(), t.lines], |r| r.get(0))?;
        if usize::try_from(length).unwrap_or(usize::MAX) > crate::trail::COMPACT_BYTES {
            compact_trail(tx, seq)?;
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

/// Appends `t`'s event to `generation` (the one written now) as `row`,
/// and to `current`. Returns its `seq`.
fn insert(
    tx: &Transaction<'_>,
    generation: i64,
    t: &TrailWrite,
    row: &Row<'_>,
    current: &mut Current,
) -> rusqlite::Result<i64> {
    let seq = current.next();
    tx.prepare_cached(
        "INSERT INTO events \
         (seq, generation, source, event_id, event_type, state, received_ms, facts) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        seq,
        generation,
        t.source,
        t.event_id,
        row.event_type,
        row.state,
        row.received_ms,
        row.facts
    ])?;
    current.add(t.source.clone(), t.event_id.clone(), seq);
    Ok(seq)
}

/// Moves the event's row from the newest older generation that holds it
/// into `g.current` with `t`'s facts appended. Returns whether it did (an
/// event held nowhere takes no facts without a start).
fn move_trail(
    tx: &Transaction<'_>,
    t: &TrailWrite,
    g: Generation,
    current: &mut Current,
) -> rusqlite::Result<bool> {
    use crate::trail::next_state;
    let mut find = tx.prepare_cached(
        "SELECT e.seq, e.state, e.event_type, e.received_ms, e.facts \
         FROM event_ids i JOIN events e ON e.seq = i.seq \
         WHERE i.generation = ?1 AND i.source = ?2 AND i.event_id = ?3",
    )?;
    for n in g.live().rev().filter(|&n| n < g.current) {
        let row: Option<(i64, String, Option<String>, i64, String)> = find
            .query_row(params![n, t.source, t.event_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()?;
        let Some((seq, state, event_type, received_ms, facts)) = row else {
            continue;
        };
        let was = crate::trail::State::parse(&state);
        let state = t
            .facts
            .iter()
            .fold(was, next_state)
            .map_or(state, |s| s.word().to_owned());
        let facts = facts + &t.lines;
        tx.prepare_cached("DELETE FROM events WHERE seq = ?1")?
            .execute(params![seq])?;
        tx.prepare_cached(
            "DELETE FROM event_ids WHERE generation = ?1 AND source = ?2 AND event_id = ?3",
        )?
        .execute(params![n, t.source, t.event_id])?;
        let row = Row {
            event_type: event_type.as_deref(),
            state: &state,
            received_ms,
            facts: &facts,
        };
        let moved = insert(tx, g.current, t, &row, current)?;
        if facts.len() > crate::trail::COMPACT_BYTES {
            compact_trail(tx, moved)?;
        }
        return Ok(true);
    }
    Ok(false)
}

/// Folds the facts of row `seq` into one `summary` line (DESIGN §7a: a
/// record stays a few KiB), in the transaction that made them too long.
pub(super) fn compact_trail(tx: &Transaction<'_>, seq: i64) -> rusqlite::Result<()> {
    let text: String = tx
        .prepare_cached("SELECT facts FROM events WHERE seq = ?1")?
        .query_row(params![seq], |r| r.get(0))?;
    if let Some(folded) = crate::trail::compact(&text) {
        tx.prepare_cached("UPDATE events SET facts = ?2 WHERE seq = ?1")?
            .execute(params![seq, folded])?;
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
/// row back if an operator deleted it (the newest generation's rows then
/// taken as the one written now, the others as indexed).
pub(super) fn recount_trail(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO trail_generation (current, oldest, events, first) \
         SELECT current, oldest, 0, \
            coalesce((SELECT min(seq) FROM events WHERE generation = current), \
                     (SELECT coalesce(max(seq), 0) + 1 FROM events)) FROM \
         (SELECT coalesce(max(generation), 0) AS current, coalesce(min(generation), 0) AS oldest \
          FROM events) \
         WHERE NOT EXISTS (SELECT 1 FROM trail_generation)",
        [],
    )?;
    conn.execute(
        "UPDATE trail_generation SET events = \
         (SELECT count(*) FROM events WHERE seq >= trail_generation.first)",
        [],
    )
    .map(drop)
}

/// Starts the next generation when the current one holds its share of
/// `max` (its ids appended to `event_ids` as one sorted run), and removes
/// rows of the generations past the kept ones, at most [`PURGE_LIMIT`] of
/// each table (the batches after go on where it stopped). All of it or
/// nothing.
pub(super) fn roll_trail(conn: &Connection, max: usize) -> rusqlite::Result<()> {
    conn.execute_batch("SAVEPOINT roll_trail")?;
    match roll(conn, max) {
        Ok(()) => conn.execute_batch("RELEASE roll_trail"),
        Err(e) => {
            // The error is the one to report; the rollback's own is moot.
            let _ = conn.execute_batch("ROLLBACK TO roll_trail; RELEASE roll_trail");
            Err(e)
        }
    }
}

fn roll(conn: &Connection, max: usize) -> rusqlite::Result<()> {
    let (kept, size) = generations(max);
    let (mut current, mut oldest, held, first): (i64, i64, i64, i64) = conn
        .prepare_cached("SELECT current, oldest, events, first FROM trail_generation")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    if held >= size {
        conn.prepare_cached(
            "INSERT OR IGNORE INTO event_ids (generation, source, event_id, seq) \
             SELECT ?1, source, event_id, seq FROM events WHERE seq >= ?2 \
             ORDER BY source, event_id",
        )?
        .execute(params![current, first])?;
        current += 1;
        conn.prepare_cached(
            "UPDATE trail_generation SET current = ?1, events = 0, \
             first = (SELECT coalesce(max(seq), 0) + 1 FROM events)",
        )?
        .execute(params![current])?;
    }
    // The kept full generations and the current one.
    let keep = current - kept;
    if oldest < keep {
        // The oldest rows are the first ones: a run of whole pages.
        let rows = conn
            .prepare_cached(
                "DELETE FROM events WHERE seq IN \
                 (SELECT seq FROM events WHERE generation < ?1 ORDER BY seq LIMIT ?2)",
            )?
            .execute(params![keep, PURGE_LIMIT])?;
        let ids = conn
            .prepare_cached(
                "DELETE FROM event_ids WHERE (generation, source, event_id) IN \
                 (SELECT generation, source, event_id FROM event_ids WHERE generation < ?1 LIMIT ?2)",
            )?
            .execute(params![keep, PURGE_LIMIT])?;
        if i64::try_from(rows.max(ids)).unwrap_or(i64::MAX) < PURGE_LIMIT {
            oldest = keep;
            conn.prepare_cached("UPDATE trail_generation SET oldest = ?1")?
                .execute(params![oldest])?;
        }
    }
    Ok(())
}

/// The rows of the generation written now, by event (`source`, `event_id`)
/// to `seq`: read once for a listing, which looks up many events.
#[derive(Debug, Default)]
pub struct Tail(HashMap<(String, String), i64>);

/// Reads [`Tail`] for `g`.
pub fn tail(conn: &Connection, g: Generation) -> rusqlite::Result<Tail> {
    let mut read =
        conn.prepare_cached("SELECT seq, source, event_id FROM events WHERE seq >= ?1")?;
    let mut rows = read.query(params![g.first])?;
    let mut held = HashMap::new();
    while let Some(r) = rows.next()? {
        held.insert((r.get(1)?, r.get(2)?), r.get(0)?);
    }
    Ok(Tail(held))
}

/// One event's rows, oldest generation first: `(generation, received_ms,
/// facts)`. The generation written now is read through (`tail` says where
/// its row is when given).
pub fn rows_of(
    conn: &Connection,
    g: Generation,
    tail: Option<&Tail>,
    source: &str,
    event_id: &str,
) -> rusqlite::Result<Vec<(i64, i64, String)>> {
    let mut find = conn.prepare_cached(
        "SELECT e.received_ms, e.facts FROM event_ids i JOIN events e ON e.seq = i.seq \
         WHERE i.generation = ?1 AND i.source = ?2 AND i.event_id = ?3",
    )?;
    let mut out = Vec::new();
    for n in g.live().filter(|&n| n < g.current) {
        if let Some((at, facts)) = find
            .query_row(params![n, source, event_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
        {
            out.push((n, at, facts));
        }
    }
    let newest: Option<(i64, String)> = match tail {
        Some(Tail(held)) => match held.get(&(source.to_owned(), event_id.to_owned())) {
            Some(seq) => conn
                .prepare_cached("SELECT received_ms, facts FROM events WHERE seq = ?1")?
                .query_row(params![seq], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?,
            None => None,
        },
        None => conn
            .prepare_cached(
                "SELECT received_ms, facts FROM events \
                 WHERE seq >= ?1 AND source = ?2 AND event_id = ?3",
            )?
            .query_row(params![g.first, source, event_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?,
    };
    if let Some((at, facts)) = newest {
        out.push((g.current, at, facts));
    }
    Ok(out)
}
