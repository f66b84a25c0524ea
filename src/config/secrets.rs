//! A source's secrets: `secrets` (resolved and prepared for the scheme),
//! `verify_token` and `[source.resign]`, with the files they were read from.

use std::path::PathBuf;

use super::check::{Check, resolve_secret};
use super::raw::{RawSecrets, RawSource};
use crate::scheme::Scheme;
use crate::secret::Secret;

/// A source's secrets; each `None` when it is wrong (each problem reported).
pub(super) struct Secrets {
    /// The signing keys, prepared for the scheme; empty for a scheme whose
    /// key comes from the provider.
    pub(super) keys: Option<Vec<Secret>>,
    pub(super) verify_token: Option<Option<Secret>>,
    pub(super) resign: Option<Option<Secret>>,
    /// Files behind `{ file = … }` entries, watched for changes.
    pub(super) files: Vec<PathBuf>,
}

/// The secrets of source `label`, for `scheme`; `remote` names the scheme
/// when its key comes from the provider.
pub(super) fn build(
    c: &mut Check<'_>,
    label: &str,
    r: &RawSource,
    table: Option<std::ops::Range<usize>>,
    scheme: Option<&Scheme>,
    remote: Option<&'static str>,
) -> Secrets {
    let field = |k: &str| format!("{label}.{k}");
    // Schemes whose key comes from the provider take no `secrets`.
    let secrets_field = field("secrets");
    let mut files = Vec::new();
    if let (Some(name), Some(v)) = (remote, &r.secrets) {
        c.at(
            v,
            &secrets_field,
            format!(
                "does not apply: scheme \"{name}\" fetches the provider's key itself; remove it"
            ),
        );
    }
    // A scheme that fetches a key set beside `secrets` takes them optionally.
    let fetches = scheme.is_some_and(Scheme::fetches_keys);
    let required = match (remote, fetches) {
        (Some(_), _) => None,
        (None, true) => r.secrets.as_ref(),
        (None, false) => c.required(&r.secrets, table.clone(), &secrets_field),
    };
    let keys = match required {
        None => (fetches && r.secrets.is_none()).then(Vec::new),
        Some(s) => match s.get_ref() {
            RawSecrets::NotAnArray => {
                c.at(
                    s,
                    &secrets_field,
                    r#"must be an array: secrets = ["…", { env = "NAME" }, { file = "PATH" }]"#,
                );
                None
            }
            RawSecrets::List(list) if list.is_empty() => {
                c.at(
                    s,
                    &secrets_field,
                    "is empty; at least one secret is required",
                );
                None
            }
            RawSecrets::List(list) => {
                let mut keys = Some(Vec::new());
                for (j, entry) in list.iter().enumerate() {
                    let f = format!("{secrets_field}[{j}]");
                    let key =
                        resolve_secret(c, entry, &f, &mut files).and_then(|(secret, origin)| {
                            match scheme {
                                None => None,
                                Some(scheme) => match scheme.prepare_key(&secret) {
                                    Ok(k) => Some(k),
                                    Err(m) => {
                                        c.at(entry, &f, format!("{origin}{m}"));
                                        None
                                    }
                                },
                            }
                        });
                    match (key, &mut keys) {
                        (Some(k), Some(keys)) => keys.push(k),
                        _ => keys = None,
                    }
                }
                keys
            }
        },
    };

    let verify_token = verify_token(
        c,
        &field("verify_token"),
        r,
        scheme,
        keys.as_deref(),
        &mut files,
    );
    let resign = resign(c, &field("resign"), r, scheme, keys.as_deref(), &mut files);
    Secrets {
        keys,
        verify_token,
        resign,
        files,
    }
}

/// `verify_token`: resolved like a `secrets` entry, for schemes with a
/// verify-token check only, and never one of the signing secrets.
fn verify_token(
    c: &mut Check<'_>,
    field: &str,
    r: &RawSource,
    scheme: Option<&Scheme>,
    keys: Option<&[Secret]>,
    files: &mut Vec<PathBuf>,
) -> Option<Option<Secret>> {
    let Some(entry) = &r.verify_token else {
        return Some(None);
    };
    if let Some(s) = scheme.filter(|s| !s.takes_verify_token()) {
        c.at(
            entry,
            field,
            format!(
                "does not apply: scheme \"{}\" makes no verify-token check; remove it",
                s.name()
            ),
        );
        return None;
    }
    let (token, _) = resolve_secret(c, entry, field, files)?;
    if keys.is_some_and(|keys| keys.iter().any(|k| k.expose() == token.expose())) {
        c.at(
            entry,
            field,
            "is one of this source's secrets; choose another value: the verify token \
             travels in URLs, the signing secret must not",
        );
        return None;
    }
    Some(Some(token))
}

/// `[source.resign]`: the secret every delivery is signed with afresh
/// (default: the first of `secrets`), for schemes hookgate can sign.
fn resign(
    c: &mut Check<'_>,
    field: &str,
    r: &RawSource,
    scheme: Option<&Scheme>,
    keys: Option<&[Secret]>,
    files: &mut Vec<PathBuf>,
) -> Option<Option<Secret>> {
    let Some(table) = &r.resign else {
        return Some(None);
    };
    let scheme = scheme?;
    if let Err(why) = scheme.resign_names() {
        c.at(
            table,
            field,
            format!(
                "scheme \"{}\" cannot be re-signed by hookgate: {why}; remove [source.resign]",
                scheme.name()
            ),
        );
        return None;
    }
    match &table.get_ref().secret {
        None => match scheme.signing_key(keys?) {
            Some(key) => Some(Some(key.clone())),
            None => {
                c.at(
                    table,
                    field,
                    "needs secret: the source's secrets hold no key hookgate can sign with \
                     (a whpk_ public key only verifies); give resign.secret = a whsec_ secret",
                );
                None
            }
        },
        Some(entry) => {
            let secret_field = format!("{field}.secret");
            let (secret, origin) = resolve_secret(c, entry, &secret_field, files)?;
            match scheme.prepare_key(&secret) {
                Ok(key) if !scheme.can_sign_with(&key) => {
                    c.at(
                        entry,
                        &secret_field,
                        format!("{origin}a whpk_ public key cannot sign; give a whsec_ secret"),
                    );
                    None
                }
                Ok(key) => Some(Some(key)),
                Err(m) => {
                    c.at(entry, &secret_field, format!("{origin}{m}"));
                    None
                }
            }
        }
    }
}
