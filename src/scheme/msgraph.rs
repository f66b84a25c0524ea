//! Microsoft Graph change notifications: no MAC at all. Each notification
//! item in the body's `/value` array carries the `clientState` the
//! subscriber chose when creating the subscription, and the receiver
//! compares it with its own copy. Here every configured secret is a
//! clientState; every item must carry one of them (a POST may batch items of
//! several subscriptions that share the URL), compared in constant time.
//!
//! Like a token scheme, this proves the sender knows the clientState, not
//! that the body is unchanged (TLS covers that on the way). Nothing is
//! timed, so there is no replay window; the id is the body's SHA-256, and the
//! type (`changeType`, or `lifecycleEvent` for lifecycle notifications) is
//! read only when every item agrees, and never stamped (it is not signed).
//!
//! The subscription's endpoint check, `POST ?validationToken=…`, is answered
//! in `handshake.rs`. Rich notifications (`encryptedContent` with
//! `validationTokens` JWTs) are verified by their clientState only; the JWTs
//! are not checked.
//!
//! Source: <https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks>
//! and the changeNotification resource type (clientState at most 255
//! characters).

use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::Handshake;
use super::provider::{Delivery, IN_BODY, Provider, Signing};
use super::{Error, Verified, hmac};
use crate::secret::Secret;

/// How the clientState is named in errors.
const LABEL: &str = "clientState";

/// Graph's limit on a subscription's clientState.
const MAX_CLIENT_STATE: usize = 255;

pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let text = secret.expose();
    if text.is_empty() {
        return Err("secret is empty".to_owned());
    }
    if text.len() > MAX_CLIENT_STATE {
        return Err(format!(
            "is longer than {MAX_CLIENT_STATE} characters, the longest clientState Microsoft Graph accepts"
        ));
    }
    Ok(secret.clone())
}

/// The index of the first key equal to `given`, compared as SHA-256 digests
/// so the time taken does not depend on the key's length or contents.
fn matching_key(keys: &[Secret], given: &[u8]) -> Option<usize> {
    let given = Sha256::digest(given);
    let mut matched = None;
    for (index, key) in keys.iter().enumerate() {
        let hit: bool = Sha256::digest(key.expose()).ct_eq(&given).into();
        if hit && matched.is_none() {
            matched = Some(index);
        }
    }
    matched
}

pub(super) fn verify(keys: &[Secret], body: &[u8]) -> Result<Verified, Error> {
    // The body carries the clientState, so a body that is not the Graph
    // envelope has no signature to check.
    let json = serde_json::from_slice::<Value>(body).map_err(|_| Error::MissingSignature(LABEL))?;
    let items = match json.get("value") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => return Err(Error::MissingSignature(LABEL)),
    };
    let mut states = Vec::with_capacity(items.len());
    for item in items {
        match item.get("clientState") {
            None | Some(Value::Null) => return Err(Error::MissingSignature(LABEL)),
            Some(Value::String(s)) if !s.is_empty() => states.push(s.as_bytes()),
            Some(_) => return Err(Error::MalformedSignature(LABEL)),
        }
    }
    // Every item is checked (no early exit on the first mismatch); the
    // reported index is the highest any item needed, so a previous secret
    // still in use shows in the metrics.
    let mut secret_index = Some(0);
    for state in states {
        secret_index = match (secret_index, matching_key(keys, state)) {
            (Some(so_far), Some(i)) => Some(so_far.max(i)),
            _ => None,
        };
    }
    let secret_index = secret_index.ok_or(Error::InvalidSignature)?;

    let kind = |item: &Value| {
        item.get("lifecycleEvent")
            .or_else(|| item.get("changeType"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let first = kind(&items[0]);
    let event_type = first.filter(|t| items.iter().all(|item| kind(item).as_deref() == Some(t)));
    Ok(Verified {
        event_id: hmac::body_sha256_hex(body),
        event_type,
        timestamp: None,
        secret_index,
    })
}

/// `scheme = "microsoft-graph"`: every item's `clientState` is a configured
/// secret; `?validationToken=` is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MicrosoftGraph;

impl Provider for MicrosoftGraph {
    fn name(&self) -> &'static str {
        "microsoft-graph"
    }

    fn signs_timestamp(&self) -> bool {
        false
    }

    fn signs_event_type(&self) -> bool {
        false
    }

    fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        prepare_key(secret)
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.body)
    }

    fn sign(&self, _: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Err(IN_BODY.sign)
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        Err(IN_BODY.resign)
    }

    fn handshake_before(&self) -> Option<Handshake> {
        Some(Handshake::GraphValidationToken)
    }
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, Method, Uri};

    use super::super::Scheme;
    use super::super::test_support::{TOLERANCE, coded, key};
    use super::*;

    // A notification shaped like the example of Microsoft's "Receive change
    // notifications through webhooks" page (a new Outlook message, with the
    // page's placeholders kept), compacted.
    const DOCS: &str = r##"{"value":[{"id":"lsgTZMr9KwAAA","subscriptionId":"{subscription_guid}","subscriptionExpirationDateTime":"2016-03-19T22:11:09.952Z","clientState":"secretClientValue","changeType":"created","resource":"users/{user_guid}@{tenant_guid}/messages/{long_id_string}","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95","resourceData":{"@odata.type":"#Microsoft.Graph.Message","@odata.id":"Users/{user_guid}@{tenant_guid}/Messages/{long_id_string}","@odata.etag":"W/\"CQAAABYAAADkrWGo7bouTKlsgTZMr9KwAAAUWRHf\"","id":"{long_id_string}"}}]}"##;

    fn keys(values: &[&str]) -> Vec<Secret> {
        values
            .iter()
            .map(|v| {
                coded(MicrosoftGraph)
                    .prepare_key(&key(v.as_bytes()))
                    .expect("valid clientState")
            })
            .collect()
    }

    fn check(keys: &[Secret], body: &str) -> Result<Verified, Error> {
        coded(MicrosoftGraph).verify(keys, TOLERANCE, &HeaderMap::new(), body.as_bytes(), 0)
    }

    #[test]
    fn the_documented_notification_verifies() {
        let got = check(&keys(&["secretClientValue"]), DOCS).expect("the docs' clientState");
        assert_eq!(
            got,
            Verified {
                event_id: hmac::body_sha256_hex(DOCS.as_bytes()),
                event_type: Some("created".into()),
                timestamp: None,
                secret_index: 0,
            }
        );
        // Rotation: the right value second is found and reported.
        let got = check(&keys(&["newClientValue", "secretClientValue"]), DOCS);
        assert_eq!(got.map(|v| v.secret_index), Ok(1));
        // Wrong, near-miss, and no keys.
        for wrong in [
            &["secretClientValuE"][..],
            &["secretClientValue "],
            &["secret"],
        ] {
            assert_eq!(check(&keys(wrong), DOCS), Err(Error::InvalidSignature));
        }
        assert_eq!(check(&[], DOCS), Err(Error::InvalidSignature));
        // The id is the body's digest: any change makes another event.
        let other = DOCS.replace("created", "updated");
        let got =
            check(&keys(&["secretClientValue"]), &other).expect("still the right clientState");
        assert_ne!(got.event_id, hmac::body_sha256_hex(DOCS.as_bytes()));
        assert_eq!(got.event_type.as_deref(), Some("updated"));
    }

    #[test]
    fn every_item_must_carry_a_configured_client_state() {
        let k = keys(&["current-state", "previous-state"]);
        let item = |state: &str, change: &str| {
            format!(
                r#"{{"subscriptionId":"s","clientState":{state},"changeType":"{change}","resource":"r"}}"#
            )
        };
        let batch = |items: &[String]| format!(r#"{{"value":[{}]}}"#, items.join(","));

        // Two subscriptions sharing the URL, one on the previous value: the
        // highest index needed is reported; types differ, so none is read.
        let mixed = batch(&[
            item(r#""current-state""#, "created"),
            item(r#""previous-state""#, "deleted"),
        ]);
        let got = check(&k, &mixed).expect("both are configured");
        assert_eq!(got.secret_index, 1);
        assert_eq!(got.event_type, None);

        // One forged item spoils the batch, wherever it is.
        for forged in [
            batch(&[
                item(r#""current-state""#, "created"),
                item(r#""forged""#, "created"),
            ]),
            batch(&[
                item(r#""forged""#, "created"),
                item(r#""current-state""#, "created"),
            ]),
        ] {
            assert_eq!(check(&k, &forged), Err(Error::InvalidSignature));
        }
        // Missing or unusable clientStates, and bodies with no items.
        let no_state = r#"{"value":[{"subscriptionId":"s","changeType":"created"}]}"#;
        assert_eq!(check(&k, no_state), Err(Error::MissingSignature(LABEL)));
        let null_state = batch(&[item("null", "created")]);
        assert_eq!(check(&k, &null_state), Err(Error::MissingSignature(LABEL)));
        for bad in [
            item("7", "created"),
            item(r#""""#, "created"),
            item("[]", "created"),
        ] {
            assert_eq!(
                check(&k, &batch(&[bad])),
                Err(Error::MalformedSignature(LABEL))
            );
        }
        for body in [
            "",
            "not json",
            "[]",
            "{}",
            r#"{"value":[]}"#,
            r#"{"value":{}}"#,
        ] {
            assert_eq!(
                check(&k, body),
                Err(Error::MissingSignature(LABEL)),
                "{body}"
            );
        }

        // A lifecycle notification names its event in lifecycleEvent.
        let lifecycle = r#"{"value":[{"subscriptionId":"s","clientState":"current-state","lifecycleEvent":"reauthorizationRequired","resource":"r"}]}"#;
        let got = check(&k, lifecycle).expect("verifies");
        assert_eq!(got.event_type.as_deref(), Some("reauthorizationRequired"));
    }

    #[test]
    fn secrets_are_client_states_and_nothing_is_signed_to_print() {
        let s = coded(MicrosoftGraph);
        assert!(s.prepare_key(&key(b"")).is_err());
        assert!(s.prepare_key(&key(&[b'a'; 255])).is_ok());
        assert!(s.prepare_key(&key(&[b'a'; 256])).is_err());
        assert!(s.sign(&key(b"state"), b"{}", None, 0).is_err());
        assert!(!s.signs_timestamp());
        assert!(s.signs_event_id());
        assert!(!s.signs_event_type());
        assert_eq!(
            Scheme::by_name("microsoft-graph", None),
            Some(coded(MicrosoftGraph))
        );
    }

    #[test]
    fn the_validation_post_is_answered_before_verification() {
        let uri: Uri = "/graph?validationToken=abc%2B123".parse().expect("uri");
        let got = coded(MicrosoftGraph)
            .handshake_before(
                &keys(&["state"]),
                None,
                &Method::POST,
                &uri,
                &HeaderMap::new(),
            )
            .expect("answered")
            .expect("accepted");
        assert_eq!(got.body, b"abc+123".to_vec());
        let plain: Uri = "/graph".parse().expect("uri");
        assert_eq!(
            coded(MicrosoftGraph).handshake_before(
                &[],
                None,
                &Method::POST,
                &plain,
                &HeaderMap::new()
            ),
            None
        );
    }
}
