//! The console's chart counts on the memory store (DESIGN §7b): this
//! process's own, kept [`crate::stats::KEEP`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::stats::Row;

/// Counts by (width, bucket, source, series).
#[derive(Default)]
pub struct Kept {
    counts: Mutex<BTreeMap<(u32, i64, String, String), u64>>,
}

impl Kept {
    pub fn add(&self, rows: &[Row]) {
        let oldest = crate::time::unix_now() - crate::stats::KEEP.as_secs() as i64;
        let Ok(mut counts) = self.counts.lock() else {
            return;
        };
        for r in rows {
            *counts
                .entry((r.width, r.bucket, r.source.clone(), r.series.clone()))
                .or_default() += r.count;
        }
        counts.retain(|(_, bucket, _, _), _| *bucket >= oldest);
    }

    pub fn read(&self, width: u32, since: i64) -> Vec<Row> {
        let Ok(counts) = self.counts.lock() else {
            return Vec::new();
        };
        counts
            .iter()
            .filter(|((w, bucket, _, _), _)| *w == width && *bucket >= since)
            .map(|((w, bucket, source, series), count)| Row {
                width: *w,
                bucket: *bucket,
                source: source.clone(),
                series: series.clone(),
                count: *count,
            })
            .collect()
    }
}
