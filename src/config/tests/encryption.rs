//! `[store.encryption]`: keys accepted, and every bad one refused by its id
//! with its line and field, its value never quoted.

use super::*;

/// 32 bytes of 0x41 in base64.
const KEY_A: &str = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=";
/// 32 bytes of 0x42 in base64.
const KEY_B: &str = "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI=";

fn store(keys: &str) -> String {
    with(&format!(
        "\n[store]\nkind = \"sqlite\"\npath = \"/tmp/hookgate-config-test.db\"\n[store.encryption]\nkeys = [{keys}]\n"
    ))
}

#[test]
fn keys_from_a_literal_env_and_file_the_first_sealing() {
    let secrets = MapSecrets::default()
        .env("NEW_KEY", KEY_A)
        .file("/run/old-key", format!("{KEY_B}\n").as_bytes());
    let c = config_with(
        &store(
            r#"{ id = "2026-12", key = { env = "NEW_KEY" } }, { id = "2026-06", key = { file = "/run/old-key" } }, { id = "lit", key = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=" }"#,
        ),
        &secrets,
    );
    let ids: Vec<&str> = c.store.encryption.ids().collect();
    assert_eq!(ids, ["2026-12", "2026-06", "lit"]);
    assert_eq!(c.store.encryption.sealing(), Some("2026-12"));
    assert!(config(&with("")).store.encryption.sealing().is_none());
}

#[test]
fn bad_keys_are_refused_by_id_and_never_quoted() {
    let secrets = MapSecrets::default().env("EMPTY_NOT", "");
    let cases: Vec<(String, &str, &str)> = vec![
        (
            r#"{ id = "short", key = "c2hvcnQga2V5" }"#.to_owned(),
            "store.encryption.keys[0].key",
            "key short: is 9 bytes; a key is 32 random bytes",
        ),
        (
            r#"{ id = "b64", key = "not base64 at all!" }"#.to_owned(),
            "store.encryption.keys[0].key",
            "key b64: is not base64",
        ),
        (
            r#"{ id = "unset", key = { env = "HOOKGATE_NO_SUCH_KEY" } }"#.to_owned(),
            "store.encryption.keys[0].key",
            "environment variable HOOKGATE_NO_SUCH_KEY is not set",
        ),
        (
            format!(r#"{{ id = "twice", key = "{KEY_A}" }}, {{ id = "twice", key = "{KEY_B}" }}"#),
            "store.encryption.keys[1].id",
            "key twice is listed twice",
        ),
        (
            format!(r#"{{ id = "a b", key = "{KEY_A}" }}"#),
            "store.encryption.keys[0].id",
            "is not a key id",
        ),
        (
            format!(r#"{{ key = "{KEY_A}" }}"#),
            "store.encryption.keys[0].id",
            "required key is missing",
        ),
        (String::new(), "store.encryption.keys", "is empty"),
    ];
    for (keys, field, message) in cases {
        let src = store(&keys);
        let found = problems_with(&src, &secrets);
        assert!(
            found
                .iter()
                .any(|p| p.field == field && p.message.contains(message) && p.line == Some(16)),
            "{keys}: {found:?}"
        );
        for p in &found {
            for value in [KEY_A, KEY_B, "c2hvcnQga2V5", "not base64 at all!"] {
                assert!(!p.message.contains(value), "{p:?} quotes a key");
            }
        }
    }
}
