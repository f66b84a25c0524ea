//! The trail's table (DESIGN §7a) as the writer keeps it: an event's facts
//! appended to its row in the transaction of the op they ride on, folded
//! into one line when the row grows long, and the oldest rows trimmed to
//! the bound that `trail_size` lets it keep without counting the table.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::PURGE_LIMIT;

/// Facts appended to an event's trail; the oldest events beyond `max` are
/// trimmed between batches.
#[derive(Debug)]
pub struct TrailWrite {
    pub source: String,
    pub event_id: String,
    pub facts: Vec<crate::trail::Fact>,
    /// `facts` as JSON lines, written by the sender (off this thread).
    pub lines: String,
    pub max: usize,
}

/// Appends `t`'s facts to its event's row. The facts are JSON lines,
/// appended; the state column moves by [`crate::trail::next_state`], so
/// nothing already written is read back but the state, until the text
/// passes [`crate::trail::COMPACT_BYTES`] and is folded into one line. An event not held
/// yet is taken only from its `Received` fact; it costs one insert, and
/// only an event already held is read first. Returns whether it added an
/// event.
pub(super) fn write_trail(
    tx: &Transaction<'_>,
    t: &TrailWrite,
    now: i64,
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
        let added = tx
            .prepare_cached(
                "INSERT OR IGNORE INTO events (source, event_id, event_type, state, received_ms, facts) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                t.source,
                t.event_id,
                event_type,
                state.word(),
                at,
                t.lines
            ])?;
        if added == 1 {
            return Ok(true);
        }
    }
    let held: Option<String> = tx
        .prepare_cached("SELECT state FROM events WHERE source = ?1 AND event_id = ?2")?
        .query_row(params![t.source, t.event_id], |r| r.get(0))
        .optional()?;
    let was = held.as_deref().and_then(crate::trail::State::parse);
    if was.is_none() {
        return Ok(false);
    }
    if let Some(state) = t.facts.iter().fold(was, next_state) {
        let length: i64 = tx
            .prepare_cached(
                "UPDATE events SET state = ?3, facts = facts || ?4 \
                 WHERE source = ?1 AND event_id = ?2 RETURNING length(facts)",
            )?
            .query_row(params![t.source, t.event_id, state.word(), t.lines], |r| {
                r.get(0)
            })?;
        if usize::try_from(length).unwrap_or(usize::MAX) > crate::trail::COMPACT_BYTES {
            compact_trail(tx, &t.source, &t.event_id)?;
        }
    }
    Ok(false)
}

/// Folds an event's facts into one `summary` line (DESIGN §7a: a record
/// stays a few KiB), in the transaction that made them too long.
pub(super) fn compact_trail(
    tx: &Transaction<'_>,
    source: &str,
    event_id: &str,
) -> rusqlite::Result<()> {
    let text: String = tx
        .prepare_cached("SELECT facts FROM events WHERE source = ?1 AND event_id = ?2")?
        .query_row(params![source, event_id], |r| r.get(0))?;
    if let Some(folded) = crate::trail::compact(&text) {
        tx.prepare_cached("UPDATE events SET facts = ?3 WHERE source = ?1 AND event_id = ?2")?
            .execute(params![source, event_id, folded])?;
    }
    Ok(())
}

/// Adds `n` to the events `trail_size` says the trail holds.
pub(super) fn count_trail(conn: &Connection, n: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE trail_size SET events = events + ?1")?
        .execute(params![n])
        .map(drop)
}

/// Sets `trail_size` to the rows `events` holds, counting them (once, when
/// a writer opens the file).
pub(super) fn recount_trail(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE trail_size SET events = (SELECT count(*) FROM events)",
        [],
    )
    .map(drop)
}

/// Deletes the oldest events of the trail beyond `max`, at most
/// [`PURGE_LIMIT`] (`trail_size` says how many it holds).
pub(super) fn trim_trail(conn: &Connection, max: usize) -> rusqlite::Result<()> {
    let held: i64 = conn
        .prepare_cached("SELECT events FROM trail_size")?
        .query_row([], |r| r.get(0))?;
    let over = held.saturating_sub(i64::try_from(max).unwrap_or(i64::MAX));
    if over <= 0 {
        return Ok(());
    }
    let asked = over.min(PURGE_LIMIT);
    let gone = conn
        .prepare_cached(
            "DELETE FROM events WHERE (source, event_id) IN \
             (SELECT source, event_id FROM events ORDER BY received_ms, source, event_id LIMIT ?1)",
        )?
        .execute(params![asked])?;
    let gone = i64::try_from(gone).unwrap_or(i64::MAX);
    if gone < asked {
        // Fewer rows than counted (deleted by hand): a small table to count.
        return recount_trail(conn);
    }
    count_trail(conn, -gone)
}
