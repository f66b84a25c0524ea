//! `[store.encryption]`: the keys that seal stored payloads (DESIGN §4b).
//! A problem names the key by its id, never by its value.

use base64::Engine as _;
use toml::Spanned;

use super::check::{Check, resolve_secret};
use super::raw::RawEncryption;
use crate::seal::{KEY_BYTES, Keyring, MAX_ID, valid_id};

const FIELD: &str = "store.encryption.keys";

/// The keyring, empty without the table; `None` after a problem (each one
/// recorded).
pub(super) fn keyring(c: &mut Check<'_>, raw: Option<&Spanned<RawEncryption>>) -> Option<Keyring> {
    let Some(raw) = raw else {
        return Some(Keyring::default());
    };
    let list = c.required(&raw.get_ref().keys, Some(raw.span()), FIELD)?;
    if list.get_ref().is_empty() {
        c.at(
            list,
            FIELD,
            "is empty; list at least one key (the first seals, every one opens)",
        );
        return None;
    }
    let mut keys: Vec<(String, [u8; KEY_BYTES])> = Vec::new();
    let mut ok = true;
    for (i, entry) in list.get_ref().iter().enumerate() {
        let field = format!("{FIELD}[{i}]");
        let Some(id) = c.required(
            &entry.get_ref().id,
            Some(entry.span()),
            &format!("{field}.id"),
        ) else {
            ok = false;
            continue;
        };
        let name = id.get_ref();
        if !valid_id(name) {
            c.at(
                id,
                &format!("{field}.id"),
                format!("\"{name}\" is not a key id: 1 to {MAX_ID} of A-Z a-z 0-9 . _ -"),
            );
            ok = false;
            continue;
        }
        if keys.iter().any(|(seen, _)| seen == name) {
            c.at(
                id,
                &format!("{field}.id"),
                format!("key {name} is listed twice; each key needs its own id"),
            );
            ok = false;
            continue;
        }
        let key_field = format!("{field}.key");
        let Some(value) = c.required(&entry.get_ref().key, Some(entry.span()), &key_field) else {
            ok = false;
            continue;
        };
        let Some((secret, origin)) = resolve_secret(c, value, &key_field, &mut Vec::new()) else {
            ok = false;
            continue;
        };
        let text = secret.expose().trim_ascii();
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(text) else {
            c.at(
                value,
                &key_field,
                format!("key {name}: {origin}is not base64 (head -c 32 /dev/urandom | base64)"),
            );
            ok = false;
            continue;
        };
        let Ok(bytes) = <[u8; KEY_BYTES]>::try_from(bytes.as_slice()) else {
            c.at(
                value,
                &key_field,
                format!(
                    "key {name}: {origin}is {} bytes; a key is {KEY_BYTES} random bytes in base64 (head -c 32 /dev/urandom | base64)",
                    bytes.len()
                ),
            );
            ok = false;
            continue;
        };
        keys.push((name.clone(), bytes));
    }
    ok.then(|| Keyring::new(keys))
}
