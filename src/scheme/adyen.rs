//! Adyen standard notifications (payments): the signature travels in the
//! JSON body. Each `notificationItems[].NotificationRequestItem` carries
//! `additionalData.hmacSignature`, the base64 HMAC-SHA256 (key: the
//! merchant's hex HMAC key) of eight of the item's fields joined by `:` —
//! `pspReference`, `originalReference`, `merchantAccountCode`,
//! `merchantReference`, `amount.value`, `amount.currency`, `eventCode`,
//! `success` — a missing field being empty.
//!
//! Every item must carry a valid signature under the same key. Adyen signs
//! only those fields: hookgate proves each item's payment identity and
//! outcome came from Adyen, but an altered `additionalData`, `reason` or
//! `eventDate` under genuine signatures is not detected, and no time is
//! signed, so there is no replay window (dedupe still applies). This is
//! Adyen's design; the docs table says so. Platform webhooks, which sign the
//! whole body in a header, are `adyen-platform`.
//!
//! The event id is `pspReference:eventCode:success` of a single-item
//! notification (Adyen's own duplicate key), else the body digest; the type
//! is the `eventCode` of a single item.
//!
//! Source: <https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures>;
//! the known-answer values are those of Adyen's Python library tests
//! (Adyen/adyen-python-api-library test/test_util.py and test/mocks/util/).

use serde_json::Value;

use super::provider::{Delivery, IN_BODY, Provider, Signing};
use super::{Error, Verified, hmac};
use crate::secret::Secret;

/// How the body's signatures are named in errors.
const LABEL: &str = "body hmacSignature";

/// Items considered in one notification (Adyen sends one, at most a few).
const MAX_ITEMS: usize = 100;

/// The signed fields, in order; `value` and `currency` are under `amount`.
const FIELDS: [&str; 8] = [
    "/pspReference",
    "/originalReference",
    "/merchantAccountCode",
    "/merchantReference",
    "/amount/value",
    "/amount/currency",
    "/eventCode",
    "/success",
];

/// A field as Adyen's libraries write it: strings as they are, numbers
/// (the amount) in decimal, anything else or nothing as empty.
fn field(item: &Value, pointer: &str) -> String {
    match item.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// One item's signed string and the signature it carries.
struct Item {
    signed: String,
    signature: hmac::Tag,
}

fn items(json: Option<&Value>) -> Result<Vec<(Item, &Value)>, Error> {
    let list = json
        .and_then(|j| j.get("notificationItems"))
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
        .ok_or(Error::MissingSignature(LABEL))?;
    if list.len() > MAX_ITEMS {
        return Err(Error::MalformedSignature(LABEL));
    }
    list.iter()
        .map(|entry| {
            let item = entry
                .get("NotificationRequestItem")
                .filter(|i| i.is_object())
                .ok_or(Error::MissingSignature(LABEL))?;
            let text = item
                .pointer("/additionalData/hmacSignature")
                .and_then(Value::as_str)
                .ok_or(Error::MissingSignature(LABEL))?;
            let signature =
                hmac::tag_from_base64(text.as_bytes()).ok_or(Error::MalformedSignature(LABEL))?;
            let signed = FIELDS
                .iter()
                .map(|p| field(item, p))
                .collect::<Vec<_>>()
                .join(":");
            Ok((Item { signed, signature }, item))
        })
        .collect()
}

/// The configured key is the hex HMAC key from the Customer Area.
pub(super) fn prepare_key(secret: &Secret) -> Result<Secret, String> {
    let text = secret.expose();
    if text.is_empty() {
        return Err("secret is empty".to_owned());
    }
    let trimmed = text.trim_ascii();
    hex::decode(trimmed)
        .map(Secret::new)
        .map_err(|_| "the HMAC key is not hex".to_owned())
}

pub(super) fn verify(keys: &[Secret], body: &[u8]) -> Result<Verified, Error> {
    // Every notification item is read, however many there are, so the body
    // is parsed whole rather than read at a fixed set of pointers.
    let json = serde_json::from_slice::<Value>(body).ok();
    let items = items(json.as_ref())?;
    // The first key under which every item's signature holds.
    let mut matched = None;
    for (index, key) in keys.iter().enumerate() {
        let mut all = true;
        for (item, _) in &items {
            let one = hmac::match_key(
                std::slice::from_ref(key),
                &[item.signed.as_bytes()],
                &[item.signature],
            );
            all &= one.is_ok();
        }
        if all && matched.is_none() {
            matched = Some(index);
        }
    }
    let secret_index = matched.ok_or(Error::InvalidSignature)?;
    let (event_id, event_type) = match items.as_slice() {
        [(_, item)] => {
            let code = field(item, "/eventCode");
            let id = format!(
                "{}:{code}:{}",
                field(item, "/pspReference"),
                field(item, "/success")
            );
            (id, Some(code).filter(|c| !c.is_empty()))
        }
        _ => (hmac::body_sha256_hex(body), None),
    };
    Ok(Verified {
        event_id,
        event_type,
        timestamp: None,
        secret_index,
    })
}

/// `scheme = "adyen"`: HMAC-SHA256 over fields of each notification item,
/// in the JSON body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Adyen;

impl Provider for Adyen {
    fn name(&self) -> &'static str {
        "adyen"
    }

    fn signs_timestamp(&self) -> bool {
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
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;

    use super::super::test_support::{TOLERANCE, coded, key};
    use super::*;

    // Adyen/adyen-python-api-library test/test_util.py (test_notification_request_item_hmac):
    // this item under this key signs to coqCmt…; the item is wrapped in the envelope Adyen posts.
    const KEY: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
    const ITEM: &str = r#"{"notificationItems":[{"NotificationRequestItem":{"pspReference":"7914073381342284","merchantReference":"TestPayment-1407325143704","merchantAccountCode":"TestMerchant","amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","success":"true","eventDate":"2019-05-06T17:15:34.121+02:00","operations":["CANCEL","CAPTURE","REFUND"],"paymentMethod":"visa","additionalData":{"hmacSignature":"coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="}}}],"live":"false"}"#;

    // Same library, test_webhooks_with_slashes: test/mocks/util/colon_notification.json and
    // backslash_notification.json (a merchantReference with `:` and with `\\`), each an item
    // as received, wrapped in the envelope; key 74F490DD….
    const SLASH_KEY: &str = "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174";
    const COLON: &str = r#"{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"acquirerCode":"TestPmmAcquirer","acquirerReference":"8NQH5BNF58M","authCode":"039404","avsResult":"5 No AVS data provided","avsResultRaw":"5","cardSummary":"1111","checkout.cardAddedBrand":"visa","cvcResult":"1 Matches","cvcResultRaw":"M","expiryDate":"03/2030","hmacSignature":"2EQYm7YJpKO4EtHSPu55SQTyWf8dkW5u2nD1tJFpViA=","paymentMethod":"visa","refusalReasonRaw":"AUTHORISED","retry.attempt1.acquirer":"TestPmmAcquirer","retry.attempt1.acquirerAccount":"TestPmmAcquirerAccount","retry.attempt1.avsResultRaw":"5","retry.attempt1.rawResponse":"AUTHORISED","retry.attempt1.responseCode":"Approved","retry.attempt1.scaExemptionRequested":"lowValue","scaExemptionRequested":"lowValue"},"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","eventDate":"2023-01-10T13:40:54+01:00","merchantAccountCode":"AntoniStroinski","merchantReference":":slashes are fun","operations":["CANCEL","CAPTURE","REFUND"],"paymentMethod":"visa","pspReference":"M8NB66SBZSGLNK82","reason":"039404:1111:03/2030","success":"true"}}]}"#;
    const BACKSLASH: &str = r#"{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"acquirerCode":"TestPmmAcquirer","acquirerReference":"DZMKWLXW6N6","authCode":"076181","avsResult":"5 No AVS data provided","avsResultRaw":"5","cardSummary":"1111","checkout.cardAddedBrand":"visa","cvcResult":"1 Matches","cvcResultRaw":"M","expiryDate":"03/2030","hmacSignature":"nIgT81gaB5oJpn2jPXupDq68iRo2wUlBsuYjtYfwKqo=","paymentMethod":"visa","refusalReasonRaw":"AUTHORISED","retry.attempt1.acquirer":"TestPmmAcquirer","retry.attempt1.acquirerAccount":"TestPmmAcquirerAccount","retry.attempt1.avsResultRaw":"5","retry.attempt1.rawResponse":"AUTHORISED","retry.attempt1.responseCode":"Approved","retry.attempt1.scaExemptionRequested":"lowValue","scaExemptionRequested":"lowValue"},"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","eventDate":"2023-01-09T16:27:29+01:00","merchantAccountCode":"AntoniStroinski","merchantReference":"\\\\slashes are fun","operations":["CANCEL","CAPTURE","REFUND"],"paymentMethod":"visa","pspReference":"T7FD4VM4D3RZNN82","reason":"076181:1111:03/2030","success":"true"}}]}"#;

    fn scheme_key(hex_key: &str) -> Secret {
        coded(Adyen)
            .prepare_key(&key(hex_key.as_bytes()))
            .expect("a hex key")
    }

    fn check(keys: &[Secret], body: &str) -> Result<Verified, Error> {
        coded(Adyen).verify(keys, TOLERANCE, &HeaderMap::new(), body.as_bytes(), 0)
    }

    #[test]
    fn sdk_vectors_verify() {
        let got = check(&[scheme_key(KEY)], ITEM).expect("the SDK's item");
        assert_eq!(
            got,
            Verified {
                event_id: "7914073381342284:AUTHORISATION:true".into(),
                event_type: Some("AUTHORISATION".into()),
                timestamp: None,
                secret_index: 0,
            }
        );
        for body in [COLON, BACKSLASH] {
            let got = check(&[scheme_key(SLASH_KEY)], body).expect("the SDK's mock");
            assert_eq!(got.event_type.as_deref(), Some("AUTHORISATION"));
        }
        // Rotation: the right key second.
        let got = check(&[scheme_key(SLASH_KEY), scheme_key(KEY)], ITEM);
        assert_eq!(got.map(|v| v.secret_index), Ok(1));
    }

    #[test]
    fn wrong_keys_and_tampered_signed_fields_are_refused() {
        assert_eq!(
            check(&[scheme_key(SLASH_KEY)], ITEM),
            Err(Error::InvalidSignature)
        );
        assert_eq!(check(&[], ITEM), Err(Error::InvalidSignature));
        for (from, to) in [
            ("7914073381342284", "7914073381342285"),
            ("\"value\":1130", "\"value\":1131"),
            ("\"EUR\"", "\"USD\""),
            ("\"success\":\"true\"", "\"success\":\"false\""),
            ("TestMerchant", "TestMerchanT"),
            ("AUTHORISATION", "CANCELLATION"),
            ("coqCmt", "coqCmu"),
        ] {
            let tampered = ITEM.replacen(from, to, 1);
            assert_ne!(tampered, ITEM);
            assert_eq!(
                check(&[scheme_key(KEY)], &tampered),
                Err(Error::InvalidSignature),
                "{from}"
            );
        }
        // A second item signed under another key: not every item holds.
        let two = COLON.replacen("]}", &format!(",{}]}}", &ITEM[22..ITEM.len() - 17]), 1);
        assert_eq!(
            check(&[scheme_key(SLASH_KEY), scheme_key(KEY)], &two),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn unsigned_fields_are_not_covered() {
        // Adyen's design, stated in the docs table: eventDate is not signed.
        let moved = ITEM.replacen("2019-05-06", "2020-01-01", 1);
        assert!(check(&[scheme_key(KEY)], &moved).is_ok());
    }

    #[test]
    fn missing_and_malformed_signatures() {
        for body in [
            "",
            "not json",
            "{}",
            r#"{"notificationItems":[]}"#,
            r#"{"notificationItems":"x"}"#,
            r#"{"notificationItems":[{}]}"#,
            r#"{"notificationItems":[{"NotificationRequestItem":{"pspReference":"1"}}]}"#,
            r#"{"notificationItems":[{"NotificationRequestItem":{"additionalData":{}}}]}"#,
        ] {
            assert_eq!(
                check(&[scheme_key(KEY)], body),
                Err(Error::MissingSignature(LABEL)),
                "{body}"
            );
        }
        for sig in [
            "",
            "!!!",
            "AAAA",
            "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=AAAA",
        ] {
            let body = ITEM.replacen("coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=", sig, 1);
            assert_eq!(
                check(&[scheme_key(KEY)], &body),
                Err(Error::MalformedSignature(LABEL)),
                "{sig}"
            );
        }
        let many = format!(
            r#"{{"notificationItems":[{}]}}"#,
            vec![r#"{"NotificationRequestItem":{}}"#; MAX_ITEMS + 1].join(",")
        );
        assert_eq!(
            check(&[scheme_key(KEY)], &many),
            Err(Error::MalformedSignature(LABEL))
        );
    }

    #[test]
    fn keys_are_hex() {
        assert!(coded(Adyen).prepare_key(&key(b"")).is_err());
        assert!(coded(Adyen).prepare_key(&key(b"not hex")).is_err());
        assert!(coded(Adyen).prepare_key(&key(b"abc")).is_err());
        assert!(coded(Adyen).prepare_key(&key(KEY.as_bytes())).is_ok());
    }

    #[test]
    fn sign_is_refused() {
        assert!(
            coded(Adyen)
                .sign(&scheme_key(KEY), ITEM.as_bytes(), None, 0)
                .is_err()
        );
    }
}
