//! The console's chart counts on Redis (DESIGN §7b): one hash per hour
//! (minute buckets) and per day (15-minute buckets),
//! `{prefix}:stats:{width}:{hour or day}`, each field
//! `{bucket}|{source}|{series}` a count every replica adds to, the hash
//! expiring [`crate::stats::KEEP`] after its last addition plus its own span.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use redis::Script;

use super::RedisStore;
use crate::stats::{KEEP, MINUTE, Row};
use crate::store::Error;

/// `KEYS[1]` a hash; `ARGV[1]` its lifetime in seconds, then pairs of
/// field and count to add.
static ADD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
for i = 2, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
",
    )
});

/// The span one hash covers for `width`: an hour of minutes, a day of quarters.
fn span(width: u32) -> i64 {
    if width == MINUTE { 3600 } else { 86_400 }
}

fn key(prefix: &str, width: u32, bucket: i64) -> String {
    format!("{prefix}:stats:{width}:{}", bucket.div_euclid(span(width)))
}

impl RedisStore {
    /// Adds `rows`: one script per hash.
    pub async fn stats_add(&self, prefix: &str, rows: &[Row]) -> Result<(), Error> {
        let mut by_key: BTreeMap<(String, u32), Vec<Vec<u8>>> = BTreeMap::new();
        for r in rows {
            let args = by_key
                .entry((key(prefix, r.width, r.bucket), r.width))
                .or_default();
            args.push(format!("{}|{}|{}", r.bucket, r.source, r.series).into_bytes());
            args.push(r.count.to_string().into_bytes());
        }
        for ((key, width), fields) in by_key {
            let ttl = (KEEP.as_secs() as i64 + span(width)).to_string();
            let mut args: Vec<&[u8]> = vec![ttl.as_bytes()];
            args.extend(fields.iter().map(Vec::as_slice));
            let _: i64 = self.eval(&ADD, &[&key], &args).await?;
        }
        Ok(())
    }

    /// The rows of `width` from `since` on.
    pub async fn stats_read(
        &self,
        prefix: &str,
        width: u32,
        since: i64,
    ) -> Result<Vec<Row>, Error> {
        let now = crate::time::unix_now();
        let mut out = Vec::new();
        let mut group = since.div_euclid(span(width));
        while group <= now.div_euclid(span(width)) {
            let key = format!("{prefix}:stats:{width}:{group}");
            let fields: Vec<(String, u64)> = self.query(redis::cmd("HGETALL").arg(&key)).await?;
            for (field, count) in fields {
                let Some((bucket, rest)) = field.split_once('|') else {
                    continue;
                };
                let Some((source, series)) = rest.rsplit_once('|') else {
                    continue;
                };
                let Ok(bucket) = bucket.parse::<i64>() else {
                    continue;
                };
                if bucket >= since {
                    out.push(Row {
                        width,
                        bucket,
                        source: source.to_owned(),
                        series: series.to_owned(),
                        count,
                    });
                }
            }
            group += 1;
        }
        Ok(out)
    }
}
