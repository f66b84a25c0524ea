//! Facts as the durable stores keep them: one JSON object a line, each line
//! ended by `\n`, so more facts are appended by concatenation.
//!
//! Every verified event writes a `received` and an `attempted` fact on the
//! request's path; those two are written here field by field, in the order
//! and the form serde's derive gives them ([`Fact`]'s `Serialize`), without
//! its per-field machinery. Every other fact goes through `serde_json`. The
//! tests hold both ways to the same bytes for every case of every field, so
//! a reader never tells them apart.

use super::{Attempt, Fact, State};

/// `facts` as JSON lines.
pub fn lines_of(facts: &[Fact]) -> String {
    // An event's facts are a few hundred bytes.
    let mut out = String::with_capacity(256 * facts.len());
    for fact in facts {
        push_fact(&mut out, fact);
    }
    out
}

/// The facts of [`lines_of`]'s text (a line that does not parse is skipped).
pub fn facts_of(text: &str) -> Vec<Fact> {
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn push_fact(out: &mut String, fact: &Fact) {
    match fact {
        Fact::Received {
            at,
            replica,
            event_type,
            signed_at,
            state,
            nonce_id,
        } => {
            out.push_str("{\"fact\":\"received\",\"at\":");
            push_int(out, *at);
            out.push_str(",\"replica\":");
            push_str(out, replica);
            out.push_str(",\"event_type\":");
            push_opt_str(out, event_type.as_deref());
            out.push_str(",\"signed_at\":");
            push_opt_int(out, *signed_at);
            push_state(out, *state);
            if let Some(id) = nonce_id {
                out.push_str(",\"nonce_id\":");
                push_str(out, id);
            }
            out.push_str("}\n");
        }
        Fact::Attempted {
            attempt,
            state,
            next_attempt_at,
            dead_letter_id,
        } => {
            out.push_str("{\"fact\":\"attempted\",\"attempt\":");
            push_attempt(out, attempt);
            push_state(out, *state);
            out.push_str(",\"next_attempt_at\":");
            push_opt_int(out, *next_attempt_at);
            out.push_str(",\"dead_letter_id\":");
            push_opt_str(out, dead_letter_id.as_deref());
            out.push_str("}\n");
        }
        other => {
            // Cannot fail: every field is a string, a number or a struct
            // of them. A fact that did would be left out, not half written.
            if let Ok(line) = serde_json::to_string(other) {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
}

fn push_attempt(out: &mut String, a: &Attempt) {
    out.push_str("{\"at\":");
    push_int(out, a.at);
    out.push_str(",\"replica\":");
    push_str(out, &a.replica);
    out.push_str(",\"mode\":\"");
    out.push_str(a.mode.word());
    out.push_str("\",\"outcome\":");
    push_str(out, &a.outcome);
    out.push_str(",\"status\":");
    match a.status {
        Some(status) => push_uint(out, u64::from(status)),
        None => out.push_str("null"),
    }
    out.push_str(",\"duration_ms\":");
    push_uint(out, a.duration_ms);
    if let Some(waited) = &a.waited {
        out.push_str(",\"waited\":{\"reason\":");
        push_str(out, &waited.reason);
        out.push_str(",\"ms\":");
        push_uint(out, waited.ms);
        out.push('}');
    }
    if let Some(trace_id) = &a.trace_id {
        out.push_str(",\"trace_id\":");
        push_str(out, trace_id);
    }
    out.push('}');
}

/// `,"state":"…"`: [`State::word`] is serde's name for each state.
fn push_state(out: &mut String, state: State) {
    out.push_str(",\"state\":\"");
    out.push_str(state.word());
    out.push('"');
}

fn push_int(out: &mut String, n: i64) {
    out.push_str(itoa::Buffer::new().format(n));
}

fn push_uint(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

fn push_opt_int(out: &mut String, n: Option<i64>) {
    match n {
        Some(n) => push_int(out, n),
        None => out.push_str("null"),
    }
}

fn push_opt_str(out: &mut String, s: Option<&str>) {
    match s {
        Some(s) => push_str(out, s),
        None => out.push_str("null"),
    }
}

/// `s` as a JSON string. JSON escapes only `"`, `\` and the control
/// characters below U+0020 (as serde_json does, which writes the rest of
/// UTF-8 as it is): a string with none of them is copied between quotes,
/// any other is quoted by serde_json.
fn push_str(out: &mut String, s: &str) {
    // Every byte is looked at (no early exit), so the check runs on whole
    // vectors of bytes.
    let plain = s.bytes().fold(true, |plain, b| {
        plain & (b >= 0x20) & (b != b'"') & (b != b'\\')
    });
    if plain {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        match serde_json::to_string(s) {
            Ok(quoted) => out.push_str(&quoted),
            Err(_) => out.push_str("null"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::trail::{Mode, Summary, Waited};

    /// What serde's derive writes for `fact`: the form every reader parses.
    fn derived(fact: &Fact) -> String {
        format!("{}\n", serde_json::to_string(fact).unwrap_or_default())
    }

    const STRINGS: [&str; 6] = [
        "",
        "hookgate-7d4f9c-x2x9q",
        "quote \" and backslash \\",
        "line\nbreak\ttab\r\u{1}\u{1f}",
        "é 😀 \u{7f} \u{2028}",
        "</script>",
    ];
    const INTS: [i64; 5] = [0, -1, 1_700_000_000_123, i64::MIN, i64::MAX];

    fn received_cases() -> Vec<Fact> {
        let mut out = Vec::new();
        for s in STRINGS {
            for at in INTS {
                for state in State::ALL {
                    for (event_type, signed_at, nonce_id) in [
                        (None, None, None),
                        (Some(s.to_owned()), Some(at), Some(s.to_owned())),
                        (Some("invoice.paid".to_owned()), Some(-5), None),
                    ] {
                        out.push(Fact::Received {
                            at,
                            replica: s.into(),
                            event_type,
                            signed_at,
                            state,
                            nonce_id,
                        });
                    }
                }
            }
        }
        out
    }

    fn attempted_cases() -> Vec<Fact> {
        let mut out = Vec::new();
        for s in STRINGS {
            for at in INTS {
                for mode in [Mode::Forward, Mode::Queue, Mode::Replay] {
                    for state in State::ALL {
                        for full in [false, true] {
                            out.push(Fact::Attempted {
                                attempt: Attempt {
                                    at,
                                    replica: s.into(),
                                    mode,
                                    outcome: if full {
                                        Cow::Owned(s.to_owned())
                                    } else {
                                        Cow::Borrowed("forwarded")
                                    },
                                    status: if full {
                                        Some(u16::MAX)
                                    } else if at == 0 {
                                        None
                                    } else {
                                        Some(200)
                                    },
                                    duration_ms: if full { u64::MAX } else { 0 },
                                    waited: full.then(|| Waited {
                                        reason: Cow::Owned(s.to_owned()),
                                        ms: u64::MAX,
                                    }),
                                    trace_id: full.then(|| s.to_owned()),
                                },
                                state,
                                next_attempt_at: full.then_some(at),
                                dead_letter_id: full.then(|| s.to_owned()),
                            });
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn received_and_attempted_are_written_as_serde_writes_them() {
        let cases: Vec<Fact> = received_cases()
            .into_iter()
            .chain(attempted_cases())
            .collect();
        assert!(cases.len() > 1_000, "{} cases", cases.len());
        for fact in &cases {
            let line = lines_of(std::slice::from_ref(fact));
            assert_eq!(line, derived(fact), "{fact:?}");
            assert_eq!(facts_of(&line), vec![fact.clone()], "{line}");
        }
    }

    #[test]
    fn other_facts_go_through_serde_and_lines_concatenate() {
        let facts = vec![
            Fact::Duplicate,
            Fact::Duplicates {
                count: 3,
                first: 1,
                last: 2,
            },
            Fact::DeadLettered {
                dead_letter_id: "dl\"1".into(),
            },
        ];
        let summary = Summary::fold(
            received_cases()
                .into_iter()
                .chain(attempted_cases())
                .take(40),
        );
        assert!(summary.is_some());
        let facts: Vec<Fact> = facts
            .into_iter()
            .chain(summary.map(|s| Fact::Summary(Box::new(s))))
            .collect();
        let mut all: Vec<Fact> = received_cases().into_iter().take(3).collect();
        all.extend(facts);
        all.extend(attempted_cases().into_iter().take(3));
        let text = lines_of(&all);
        let expected: String = all.iter().map(derived).collect();
        assert_eq!(text, expected);
        assert_eq!(facts_of(&text), all);
        assert_eq!(lines_of(&[]), "");
    }
}
