//! The console's chart counts on sqlite (DESIGN §7b): the `stats` table,
//! one row per (width, bucket, source, series) that every process on the
//! file adds to; rows older than [`crate::stats::KEEP`] are removed by the
//! write that adds.

use rusqlite::params;

use super::SqliteStore;
use super::ops::Op;
use crate::stats::Row;
use crate::store::Error;

impl SqliteStore {
    /// Adds `rows` in one write.
    pub async fn stats_add(&self, rows: &[Row]) -> Result<(), Error> {
        let oldest = crate::time::unix_now() - crate::stats::KEEP.as_secs() as i64;
        self.call(Op::Stats {
            rows: rows.to_vec(),
            oldest,
        })
        .await
        .map(drop)
    }

    /// The rows of `width` from `since` on.
    pub async fn stats_read(&self, width: u32, since: i64) -> Result<Vec<Row>, Error> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT bucket, source, series, count FROM stats WHERE width = ?1 AND bucket >= ?2",
            )?;
            let rows = stmt.query_map(params![width, since], |r| {
                Ok(Row {
                    width,
                    bucket: r.get(0)?,
                    source: r.get(1)?,
                    series: r.get(2)?,
                    count: r.get::<_, i64>(3).map(|n| u64::try_from(n).unwrap_or(0))?,
                })
            })?;
            rows.collect()
        })
        .await
    }
}

/// The write of [`Op::Stats`].
pub(super) fn add(
    tx: &rusqlite::Transaction<'_>,
    rows: &[Row],
    oldest: i64,
) -> rusqlite::Result<()> {
    let mut upsert = tx.prepare_cached(
        "INSERT INTO stats (width, bucket, source, series, count) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (width, bucket, source, series) DO UPDATE SET count = count + excluded.count",
    )?;
    for r in rows {
        upsert.execute(params![
            r.width,
            r.bucket,
            r.source,
            r.series,
            i64::try_from(r.count).unwrap_or(i64::MAX)
        ])?;
    }
    tx.prepare_cached("DELETE FROM stats WHERE bucket < ?1")?
        .execute(params![oldest])?;
    Ok(())
}
