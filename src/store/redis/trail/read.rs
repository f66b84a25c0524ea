//! Reading the trail on Redis: where readers look (the generations kept
//! and the earlier versions' layout while it exists), one event by id, and
//! pages of events newest first, each listed once.

use super::{REACH, earlier_keys, facts_key, generation_key, index_key, member, oldest_key};
use crate::store::Error;
use crate::store::redis::RedisStore;
use crate::trail::{Cursor, Fact, Stored, facts_of};

/// Where a reader looks: the generations from the oldest kept to the
/// current one (at most [`REACH`]), oldest first, and whether the earlier
/// versions' keys are still read.
struct Layout {
    generations: std::ops::RangeInclusive<i64>,
    earlier: bool,
}

impl Layout {
    /// The index keys, oldest first (the earlier versions' before the
    /// generations).
    fn indexes(&self, prefix: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.earlier {
            out.push(earlier_keys(prefix).0);
        }
        out.extend(self.generations.clone().map(|n| index_key(prefix, n)));
        out
    }

    /// The facts hashes in the order of [`Layout::indexes`].
    fn hashes(&self, prefix: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.earlier {
            out.push(earlier_keys(prefix).1);
        }
        out.extend(self.generations.clone().map(|n| facts_key(prefix, n)));
        out
    }
}

impl RedisStore {
    /// Which generations readers look at now.
    async fn trail_layout(&self, prefix: &str) -> Result<Layout, Error> {
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(generation_key(prefix));
        pipe.cmd("GET").arg(oldest_key(prefix));
        pipe.cmd("EXISTS").arg(earlier_keys(prefix).0);
        let (current, oldest, earlier): (Option<i64>, Option<i64>, bool) =
            self.query_pipeline(&pipe).await?;
        let (current, oldest) = (current.unwrap_or(0), oldest.unwrap_or(-1));
        // An earlier version's index is read while it exists: before the
        // first generation is removed, and whenever an earlier version
        // writes beside this one (the mixed period).
        Ok(Layout {
            generations: oldest.max(current - REACH).max(0)..=current,
            earlier: oldest < 0 || earlier,
        })
    }

    pub async fn trail_get(
        &self,
        prefix: &str,
        source: &str,
        event_id: &str,
    ) -> Result<Option<crate::trail::Summary>, Error> {
        let layout = self.trail_layout(prefix).await?;
        let m = member(source, event_id);
        let mut pipe = redis::pipe();
        for hash in layout.hashes(prefix) {
            pipe.cmd("HGET").arg(hash).arg(&m);
        }
        let texts: Vec<Option<String>> = self.query_pipeline(&pipe).await?;
        let listed = if layout.earlier && texts.first().is_some_and(Option::is_none) {
            let lists = earlier_keys(prefix).2;
            self.query(
                redis::cmd("LRANGE")
                    .arg(format!("{lists}{m}"))
                    .arg(0)
                    .arg(-1),
            )
            .await?
        } else {
            Vec::new()
        };
        Ok(joined(&texts, &listed).and_then(crate::trail::Summary::fold))
    }

    /// Up to `count` members of index `key` before `before` (a score and a
    /// member), newest first; members of one millisecond in reverse order.
    async fn index_page(
        &self,
        key: &str,
        before: Option<&(i64, String)>,
        count: usize,
    ) -> Result<Vec<(String, i64)>, Error> {
        let max = before.map_or("+inf".to_owned(), |c| c.0.to_string());
        let mut out = Vec::new();
        let mut offset = 0usize;
        while out.len() < count {
            let page = count.saturating_sub(out.len()).max(16);
            let mut cmd = redis::cmd("ZREVRANGEBYSCORE");
            cmd.arg(key)
                .arg(&max)
                .arg("-inf")
                .arg("WITHSCORES")
                .arg("LIMIT")
                .arg(offset)
                .arg(page);
            let members: Vec<(String, f64)> = self.query(&cmd).await?;
            let n = members.len();
            offset += n;
            out.extend(
                members
                    .into_iter()
                    .map(|(m, score)| (m, score as i64))
                    .filter(|(m, score)| match before {
                        Some((at, after)) if score == at => m < after,
                        _ => true,
                    }),
            );
            if n < page {
                break;
            }
        }
        out.truncate(count);
        Ok(out)
    }

    /// Up to `count` events received before `before`, newest first, each
    /// once. Members of one millisecond come in reverse order of
    /// `source:event_id`.
    pub async fn trail_scan(
        &self,
        prefix: &str,
        before: Option<&Cursor>,
        count: usize,
    ) -> Result<Vec<Stored>, Error> {
        let layout = self.trail_layout(prefix).await?;
        let indexes = layout.indexes(prefix);
        let hashes = layout.hashes(prefix);
        let mut cursor = before.map(|c| (c.received_ms, member(&c.source, &c.event_id)));
        let mut out = Vec::new();
        while out.len() < count {
            let want = count - out.len();
            // (score, member, the index's place): newest first, and of one
            // place in time the newest generation first.
            let mut found: Vec<(i64, String, usize)> = Vec::new();
            let mut more = false;
            for (i, key) in indexes.iter().enumerate() {
                let page = self.index_page(key, cursor.as_ref(), want).await?;
                more |= page.len() == want;
                found.extend(page.into_iter().map(|(m, score)| (score, m, i)));
            }
            found.sort_by(|a, b| (b.0, &b.1, b.2).cmp(&(a.0, &a.1, a.2)));
            more |= found.len() > want;
            found.truncate(want);
            let Some((score, m, _)) = found.last() else {
                break;
            };
            let next = (*score, m.clone());
            let members: Vec<&str> = found.iter().map(|(_, m, _)| m.as_str()).collect();
            // Where each member is listed everywhere, and its facts.
            let mut pipe = redis::pipe();
            for key in &indexes {
                pipe.cmd("ZMSCORE").arg(key).arg(&members);
            }
            for hash in &hashes {
                pipe.cmd("HMGET").arg(hash).arg(&members);
            }
            // Scores come as text, like the facts: one reply type for both.
            let mut replies: Vec<Vec<Option<String>>> = self.query_pipeline(&pipe).await?;
            let texts = replies.split_off(indexes.len().min(replies.len()));
            // Events an earlier version wrote in lists: a second round
            // trip, only when there are any.
            let unhashed: Vec<usize> = (0..members.len())
                .filter(|&j| {
                    layout.earlier && texts.iter().all(|t| t.get(j).is_some_and(Option::is_none))
                })
                .collect();
            let mut lists: Vec<Vec<String>> = Vec::new();
            if !unhashed.is_empty() {
                let prefix_of_lists = earlier_keys(prefix).2;
                let mut pipe = redis::pipe();
                for &j in &unhashed {
                    pipe.cmd("LRANGE")
                        .arg(format!("{prefix_of_lists}{}", members[j]))
                        .arg(0)
                        .arg(-1);
                }
                lists = self.query_pipeline(&pipe).await?;
            }
            for (j, (score, m, i)) in found.iter().enumerate() {
                // Listed where it stands newest: its highest score, of one
                // score the newest generation.
                let best = replies
                    .iter()
                    .enumerate()
                    .filter_map(|(k, r)| {
                        let s = r.get(j)?.as_deref()?.parse::<f64>().ok()?;
                        Some((s as i64, k))
                    })
                    .max();
                if best.is_some_and(|b| b != (*score, *i)) {
                    continue;
                }
                let of_member: Vec<Option<String>> =
                    texts.iter().map(|t| t.get(j).cloned().flatten()).collect();
                let listed = unhashed
                    .iter()
                    .position(|&u| u == j)
                    .and_then(|p| lists.get(p))
                    .map_or(&[][..], Vec::as_slice);
                let Some(summary) =
                    joined(&of_member, listed).and_then(crate::trail::Summary::fold)
                else {
                    continue;
                };
                let Some((source, event_id)) = m.split_once(':') else {
                    continue;
                };
                out.push(Stored {
                    source: source.to_owned(),
                    event_id: event_id.to_owned(),
                    received_ms: *score,
                    summary,
                });
            }
            cursor = Some(next);
            if !more {
                break;
            }
        }
        Ok(out)
    }
}

/// An event's facts, oldest first: its texts in the hashes of
/// [`Layout::hashes`] in order, the earlier versions' list standing for
/// the first when that holds nothing; `None` when there are none.
fn joined(texts: &[Option<String>], listed: &[String]) -> Option<Vec<Fact>> {
    let mut facts: Vec<Fact> = listed.iter().flat_map(|l| facts_of(l)).collect();
    for text in texts.iter().flatten() {
        facts.extend(facts_of(text));
    }
    (!facts.is_empty() || texts.iter().any(Option::is_some)).then_some(facts)
}
