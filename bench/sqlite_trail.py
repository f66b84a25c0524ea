#!/usr/bin/env python3
"""What a trail record costs SQLite itself, apart from hookgate.

Each layout runs in a fresh WAL file with the writer's settings
(`synchronous = OFF`, checkpoints every 4,000 writes): 110,000 events are
written, then 100,000 more are measured, 25 to a transaction, each event's
nonce commit beside its trail record. Prints this process's CPU time per
event for each layout:

  none           the nonce commit only
  delete-oldest  `events` keyed by (source, event_id), the oldest row
                 deleted per event past 100,000 (the layout before
                 generations)
  grow           the same, never trimmed (the insert alone)
  generations    hookgate's layout (src/store/sqlite/trail.rs): keyed by
                 (generation, source, event_id), generations of 6,250, the
                 ones past the newest 16 deleted as runs of whole pages
  appended       generations too, but `events` in arrival order (a rowid
                 table: each row on the last page) and the ids of a full
                 generation put in `event_ids` at once, as one sorted run;
                 the ids of the generation written now in no index
  appended-norecv  the same without the index by received time
  appended-ids   arrival order with each event's id indexed as it comes
  slots          generations as in `generations`, each in a table of its
                 own among 17 (`events_0` to `events_16`, generation n in
                 table n % 17), a generation past the kept ones removed by
                 emptying its table whole (`DELETE` without `WHERE`, which
                 SQLite runs as a truncation: its pages go to the free list
                 unread row by row)
  slots-rowid    the same tables in arrival order (rowid tables: each row
                 on the last page), the id in a unique index of its own

  python3 bench/sqlite_trail.py            # CACHE_KIB=2000 (SQLite's default)
  taskset -c 0 python3 bench/sqlite_trail.py
The times include Python's own cost per statement: compare the layouts.
"""
import os
import random
import sqlite3
import sys
import tempfile
import time

MAX, SIZE, KEPT, BATCH = 100_000, 6_250, 16, 25
FACTS = (
    '{"fact":"received","at":1764650000000,"replica":"hookgate-7d4f9c-x2x9q","event_type":"push","signed_at":null,"state":"in_flight"}\n'
    '{"fact":"attempted","attempt":{"at":1764650000003,"replica":"hookgate-7d4f9c-x2x9q","mode":"forward","outcome":"forwarded","status":200,"duration_ms":3},"state":"delivered","next_attempt_at":null,"dead_letter_id":null}\n'
)


def run(layout, directory):
    path = os.path.join(directory, layout + ".db")
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=OFF")
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("PRAGMA cache_size=-" + os.environ.get("CACHE_KIB", "2000"))
    c.execute("CREATE TABLE nonces (source TEXT NOT NULL, event_id TEXT NOT NULL, state TEXT, token TEXT,"
              " expires_ms INTEGER, PRIMARY KEY (source, event_id)) WITHOUT ROWID")
    appended = layout.startswith("appended")
    if appended:
        c.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, generation INTEGER NOT NULL,"
                  " source TEXT NOT NULL, event_id TEXT NOT NULL, event_type TEXT,"
                  " state TEXT NOT NULL, received_ms INTEGER NOT NULL, facts TEXT NOT NULL)")
        c.execute("CREATE TABLE event_ids (generation INTEGER NOT NULL, source TEXT NOT NULL,"
                  " event_id TEXT NOT NULL, seq INTEGER NOT NULL,"
                  " PRIMARY KEY (generation, source, event_id, seq)) WITHOUT ROWID")
        if layout in ("appended", "appended-ids"):
            c.execute("CREATE INDEX events_received ON events (received_ms, seq)")
    elif layout.startswith("slots"):
        for k in range(KEPT + 1):
            if layout == "slots":
                c.execute(f"CREATE TABLE events_{k} (generation INTEGER NOT NULL, source TEXT NOT NULL,"
                          f" event_id TEXT NOT NULL, event_type TEXT, state TEXT NOT NULL,"
                          f" received_ms INTEGER NOT NULL, facts TEXT NOT NULL,"
                          f" PRIMARY KEY (generation, source, event_id)) WITHOUT ROWID")
            else:
                c.execute(f"CREATE TABLE events_{k} (generation INTEGER NOT NULL, source TEXT NOT NULL,"
                          f" event_id TEXT NOT NULL, event_type TEXT, state TEXT NOT NULL,"
                          f" received_ms INTEGER NOT NULL, facts TEXT NOT NULL)")
                c.execute(f"CREATE UNIQUE INDEX events_{k}_id ON events_{k} (generation, source, event_id)")
            c.execute(f"CREATE INDEX events_{k}_received ON events_{k} (received_ms, source, event_id)")
        c.execute("CREATE VIEW events AS " + " UNION ALL ".join(f"SELECT * FROM events_{k}" for k in range(KEPT + 1)))
    else:
        key = "generation INTEGER NOT NULL, " if layout == "generations" else ""
        pk = "generation, source, event_id" if layout == "generations" else "source, event_id"
        c.execute(f"CREATE TABLE events ({key}source TEXT NOT NULL, event_id TEXT NOT NULL, event_type TEXT,"
                  f" state TEXT NOT NULL, received_ms INTEGER NOT NULL, facts TEXT NOT NULL,"
                  f" PRIMARY KEY ({pk})) WITHOUT ROWID")
        c.execute("CREATE INDEX events_received ON events (received_ms, source, event_id)")
    rnd = random.Random(1)
    state = {"held": 0, "current": 0, "events": 0, "oldest": 0, "ops": 0}

    def batch(t0):
        c.execute("BEGIN IMMEDIATE")
        added = 0
        for k in range(BATCH):
            e, t = "%032x" % rnd.getrandbits(128), t0 + k
            c.execute("INSERT OR REPLACE INTO nonces VALUES ('gh', ?, 'done', NULL, ?)", (e, t + 86_400_000))
            if layout == "generations":
                added += c.execute("INSERT OR IGNORE INTO events VALUES (?, 'gh', ?, 'push', 'delivered', ?, ?)",
                                   (state["current"], e, t, FACTS)).rowcount
            elif layout.startswith("slots"):
                added += c.execute(f"INSERT OR IGNORE INTO events_{state['current'] % (KEPT + 1)}"
                                   " VALUES (?, 'gh', ?, 'push', 'delivered', ?, ?)",
                                   (state["current"], e, t, FACTS)).rowcount
            elif appended:
                c.execute("INSERT INTO events (generation, source, event_id, event_type, state, received_ms,"
                          " facts) VALUES (?, 'gh', ?, 'push', 'delivered', ?, ?)", (state["current"], e, t, FACTS))
                added += 1
                if layout == "appended-ids":
                    c.execute("INSERT INTO event_ids VALUES (?, 'gh', ?, last_insert_rowid())", (state["current"], e))
            elif layout != "none":
                added += c.execute("INSERT OR IGNORE INTO events VALUES ('gh', ?, 'push', 'delivered', ?, ?)",
                                   (e, t, FACTS)).rowcount
        if layout == "delete-oldest":
            state["held"] += added
            over = state["held"] - MAX
            if over > 0:
                state["held"] -= c.execute(
                    "DELETE FROM events WHERE (source, event_id) IN (SELECT source, event_id FROM events"
                    " ORDER BY received_ms, source, event_id LIMIT ?)", (over,)).rowcount
        if appended:
            state["events"] += added
            if state["events"] >= SIZE:
                if layout != "appended-ids":
                    c.execute("INSERT INTO event_ids SELECT generation, source, event_id, seq FROM events"
                              " WHERE seq >= ? ORDER BY generation, source, event_id, seq", (state.get("first", 0),))
                state["current"] += 1
                state["events"] = 0
                state["first"] = c.execute("SELECT coalesce(max(seq), 0) + 1 FROM events").fetchone()[0]
                state.setdefault("firsts", {})[state["current"]] = state["first"]
            keep = state["current"] - KEPT
            if state["oldest"] < keep:
                bound = state["firsts"][keep]
                gone = c.execute("DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE seq < ?"
                                 " LIMIT 2000)", (bound,)).rowcount
                c.execute("DELETE FROM event_ids WHERE (generation, source, event_id, seq) IN (SELECT generation,"
                          " source, event_id, seq FROM event_ids WHERE generation < ? LIMIT 2000)", (keep,))
                if gone < 2000:
                    state["oldest"] = keep
        if layout in ("generations", "slots", "slots-rowid"):
            state["events"] += added
            if state["events"] >= SIZE:
                state["current"] += 1
                state["events"] = 0
            keep = state["current"] - KEPT
            while layout.startswith("slots") and state["oldest"] < keep:
                c.execute(f"DELETE FROM events_{state['oldest'] % (KEPT + 1)}")
                state["oldest"] += 1
            if state["oldest"] < keep:
                gone = c.execute(
                    "DELETE FROM events WHERE (generation, source, event_id) IN (SELECT generation, source,"
                    " event_id FROM events WHERE generation < ? LIMIT 2000)", (keep,)).rowcount
                if gone < 2000:
                    state["oldest"] = keep
        c.execute("COMMIT")
        state["ops"] += BATCH
        if state["ops"] >= 4000:
            c.execute("PRAGMA wal_checkpoint(PASSIVE)")
            state["ops"] = 0

    t = 1_764_650_000_000
    for _ in range(110_000 // BATCH):
        batch(t)
        t += BATCH
    start = time.process_time()
    for _ in range(100_000 // BATCH):
        batch(t)
        t += BATCH
    cpu = (time.process_time() - start) / 100_000 * 1e6
    rows = c.execute("SELECT count(*) FROM events").fetchone()[0]
    c.close()
    return cpu, rows


def main():
    layouts = sys.argv[1:] or ["none", "delete-oldest", "grow", "generations", "appended"]
    print("| layout | CPU µs per event | rows held |")
    print("|---|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="hookgate-sqlite-trail.") as directory:
        for layout in layouts:
            cpu, rows = run(layout, directory)
            print(f"| {layout} | {cpu:.1f} | {rows:,} |")


if __name__ == "__main__":
    main()
