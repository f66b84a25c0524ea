//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…][,v0=<hex>]`,
//! signed bytes `{t}.{body}`, key = the whole `whsec_…` string as Stripe
//! hands it out (Stripe's own libraries use it verbatim as the HMAC key).
//!
//! During a secret roll Stripe sends one `v1` per active endpoint secret, so
//! every `v1` is a candidate. Other schemes (`v0`, test-mode extras) are
//! ignored, as are `v1` values that are not a hex tag, as long as at least
//! one `v1` is usable — the same leniency as Stripe's libraries.
//!
//! Source: <https://docs.stripe.com/webhooks#verify-manually>.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use http::HeaderMap;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::hmac;
use super::provider::{Delivery, Provider, Signing, names};
use super::{Error, Verified};
use crate::secret::Secret;

const SIGNATURE: &str = "Stripe-Signature";

/// A parsed `Stripe-Signature` header.
struct Header<'a> {
    /// `t` as sent: the signed bytes use the text, not a re-rendering.
    timestamp_text: &'a [u8],
    timestamp: i64,
    signatures: Vec<hmac::Tag>,
}

fn parse(value: &[u8]) -> Result<Header<'_>, Error> {
    let malformed = Error::MalformedSignature(SIGNATURE);
    let mut timestamp_text = None;
    let mut signatures = Vec::new();
    for item in value.split(|&b| b == b',') {
        let item = item.trim_ascii();
        let Some(eq) = item.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (key, val) = (&item[..eq], &item[eq + 1..]);
        match key {
            // Two timestamps would make it ambiguous which one was signed.
            b"t" if timestamp_text.is_some() => return Err(malformed),
            b"t" => timestamp_text = Some(val),
            b"v1" => {
                if let Some(sig) = hmac::tag_from_hex(val) {
                    signatures.push(sig);
                }
            }
            _ => {}
        }
    }
    let timestamp_text = timestamp_text.ok_or(malformed.clone())?;
    let timestamp = hmac::parse_timestamp(timestamp_text).ok_or(malformed.clone())?;
    if signatures.is_empty() {
        return Err(malformed);
    }
    Ok(Header {
        timestamp_text,
        timestamp,
        signatures,
    })
}

pub(super) fn verify(
    keys: &[Secret],
    tolerance: Duration,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Verified, Error> {
    let value = hmac::header(headers, SIGNATURE).ok_or(Error::MissingSignature(SIGNATURE))?;
    let header = parse(value)?;
    let secret_index = hmac::match_key(
        keys,
        &[header.timestamp_text, b".", body],
        &header.signatures,
    )?;
    hmac::check_window(header.timestamp, now, tolerance)?;

    let fields: TopLevel<'_> =
        serde_json::from_slice(body).map_err(|_| Error::MalformedBody("body is not JSON"))?;
    let event_id = match fields.id {
        Some(Some(id)) if !id.is_empty() => id.into_owned(),
        _ => return Err(Error::MalformedBody("body has no string /id")),
    };
    Ok(Verified {
        event_id,
        event_type: fields.kind.flatten().map(Cow::into_owned),
        timestamp: Some(header.timestamp),
        secret_index,
    })
}

/// The body's top-level `id` and `type`, read without building the rest of
/// the document: every other value is only checked and skipped, and the two
/// strings are borrowed from the body unless they hold escapes. `None`
/// inside means present but not a string. Only a JSON object qualifies, and
/// as with a parsed `Value` a repeated key keeps its last value.
struct TopLevel<'a> {
    id: Option<Option<Cow<'a, str>>>,
    kind: Option<Option<Cow<'a, str>>>,
}

impl<'de> Deserialize<'de> for TopLevel<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = TopLevel<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel<'de>, A::Error> {
                let mut fields = TopLevel {
                    id: None,
                    kind: None,
                };
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "id" => fields.id = Some(map.next_value::<AnyStr<'de>>()?.0),
                        "type" => fields.kind = Some(map.next_value::<AnyStr<'de>>()?.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(fields)
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// Any JSON value: the string when it is one, `None` (after skipping it) otherwise.
struct AnyStr<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for AnyStr<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Value;
        impl<'de> Visitor<'de> for Value {
            type Value = AnyStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<AnyStr<'de>, E> {
                Ok(AnyStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<AnyStr<'de>, E> {
                Ok(AnyStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<AnyStr<'de>, E> {
                Ok(AnyStr(Some(Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<AnyStr<'de>, E> {
                Ok(AnyStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<AnyStr<'de>, E> {
                Ok(AnyStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<AnyStr<'de>, E> {
                Ok(AnyStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<AnyStr<'de>, E> {
                Ok(AnyStr(None))
            }
            fn visit_unit<E>(self) -> Result<AnyStr<'de>, E> {
                Ok(AnyStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyStr<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(AnyStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyStr<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(AnyStr(None))
            }
        }
        deserializer.deserialize_any(Value)
    }
}

pub(super) fn sign(key: &Secret, body: &[u8], timestamp: i64) -> Vec<(String, String)> {
    let t = timestamp.to_string();
    let tag = hmac::tag(key.expose(), &[t.as_bytes(), b".", body]);
    vec![(
        SIGNATURE.to_owned(),
        format!("t={t},v1={}", hex::encode(tag)),
    )]
}

/// `scheme = "stripe"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stripe;

impl Provider for Stripe {
    fn name(&self) -> &'static str {
        "stripe"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        verify(d.keys, d.tolerance, d.headers, d.body, d.now)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        Ok(sign(s.key, s.body, s.timestamp))
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        names(&["stripe-signature"])
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::test_support::{
        TOLERANCE, common_checks, garbage_is_refused, headers, key, signed,
    };
    use super::*;

    // Known-answer vector from Stripe's .NET SDK test suite:
    // https://github.com/stripe/stripe-dotnet/blob/master/src/StripeTests/Services/Events/EventUtilityTest.cs
    // (secret "webhook_secret", t=1533204620, the v1 and v0 values below), over
    // the fixture file, trailing newline included (484 bytes):
    // https://github.com/stripe/stripe-dotnet/blob/master/src/StripeTests/Resources/event_test_signature.json
    // The test there derives it with
    //   (echo -n "1533204620." && cat event_test_signature.json) | openssl sha256 -hmac "webhook_secret"
    const DOTNET_SECRET: &[u8] = b"webhook_secret";
    const DOTNET_TS: i64 = 1_533_204_620;
    const DOTNET_HEADER: &str = "t=1533204620,\
        v1=2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7,\
        v0=63f3a72374a733066c4be69ed7f8e5ac85c22c9f0a6a612ab9a025a9e4ee7eef";
    const DOTNET_BODY: &str = r#"{
  "id": "evt_123",
  "object": "event",
  "account": "acct_123",
  "api_version": "2017-05-25",
  "created": 1533204620,
  "data": {
    "object": {
      "id": "cus_123",
      "object": "customer",
      "created": 123456789,
      "email": "test@stripe.com",
      "livemode": false,
      "metadata": {}
    }
  },
  "livemode": false,
  "pending_webhooks": 1,
  "request": {
    "id": "req_123",
    "idempotency_key": "idempotency-key-123"
  },
  "type": "customer.created"
}
"#;

    const SECRET: &[u8] = b"whsec_test_secret";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"invoice.paid"}"#;
    const TS: i64 = 1_700_000_000;

    fn tag_hex(secret: &[u8], ts: i64, body: &[u8]) -> String {
        let t = ts.to_string();
        hex::encode(hmac::tag(secret, &[t.as_bytes(), b".", body]))
    }

    #[test]
    fn stripe_dotnet_vector_verifies() {
        assert_eq!(DOTNET_BODY.len(), 484);
        let got = Scheme::Stripe.verify(
            &[key(DOTNET_SECRET)],
            TOLERANCE,
            &headers(&[("Stripe-Signature", DOTNET_HEADER)]),
            DOTNET_BODY.as_bytes(),
            DOTNET_TS + 100,
        );
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "evt_123".into(),
                event_type: Some("customer.created".into()),
                timestamp: Some(DOTNET_TS),
                secret_index: 0,
            })
        );
    }

    #[test]
    fn stripe_dotnet_vector_is_what_sign_produces() {
        let lines = Scheme::Stripe
            .sign(&key(DOTNET_SECRET), DOTNET_BODY.as_bytes(), None, DOTNET_TS)
            .expect("HMAC schemes sign");
        assert_eq!(
            lines,
            vec![(
                "Stripe-Signature".to_owned(),
                "t=1533204620,v1=2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7"
                    .to_owned()
            )]
        );
    }

    #[test]
    fn common() {
        common_checks(&Scheme::Stripe, &key(SECRET), BODY, &["stripe-signature"]);
    }

    #[test]
    fn the_whsec_secret_is_the_key_verbatim() {
        let stripped = key(b"test_secret");
        let h = signed(&Scheme::Stripe, &key(SECRET), BODY, None, TS);
        assert_eq!(
            Scheme::Stripe.verify(&[stripped], TOLERANCE, &h, BODY, TS),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn any_v1_may_match_and_other_schemes_are_ignored() {
        let right = tag_hex(SECRET, TS, BODY);
        let other = tag_hex(b"whsec_rolled", TS, BODY);
        for value in [
            format!("t={TS},v1={other},v1={right}"),
            format!("t={TS},v1={right},v1={other},v0={other}"),
            format!("v0={other},v1={other},t={TS},v1={right}"),
            // Stripe's libraries skip a v1 that is not hex.
            format!("t={TS},v1=bad_signature,v1={right}"),
            // Whitespace after the commas is tolerated.
            format!("t={TS}, v1={other}, v1={right}"),
            // Upper-case hex decodes the same.
            format!("t={TS},v1={}", right.to_uppercase()),
        ] {
            let got = Scheme::Stripe.verify(
                &[key(SECRET)],
                TOLERANCE,
                &headers(&[("stripe-signature", &value)]),
                BODY,
                TS,
            );
            assert!(got.is_ok(), "{value}: {got:?}");
        }
    }

    #[test]
    fn rotation_on_either_side() {
        // Stripe's own rolling: two v1 values, one key configured.
        let old = tag_hex(b"whsec_old", TS, BODY);
        let new = tag_hex(b"whsec_new", TS, BODY);
        let h = headers(&[("Stripe-Signature", &format!("t={TS},v1={new},v1={old}"))]);
        for (keys, index) in [
            (vec![key(b"whsec_old")], 0),
            (vec![key(b"whsec_new")], 0),
            (vec![key(b"whsec_other"), key(b"whsec_old")], 1),
        ] {
            let got = Scheme::Stripe.verify(&keys, TOLERANCE, &h, BODY, TS);
            assert_eq!(got.map(|v| v.secret_index), Ok(index));
        }
    }

    #[test]
    fn a_v0_only_header_is_malformed() {
        let sig = tag_hex(SECRET, TS, BODY);
        let h = headers(&[("Stripe-Signature", &format!("t={TS},v0={sig}"))]);
        assert_eq!(
            Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, BODY, TS),
            Err(Error::MalformedSignature("Stripe-Signature"))
        );
    }

    #[test]
    fn tampered_timestamp_is_refused() {
        let sig = tag_hex(SECRET, TS, BODY);
        for t in [TS + 1, TS - 1] {
            let h = headers(&[("Stripe-Signature", &format!("t={t},v1={sig}"))]);
            assert_eq!(
                Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, BODY, TS),
                Err(Error::InvalidSignature)
            );
        }
        // Same number, different text: the signed bytes are the text as sent.
        let h = headers(&[("Stripe-Signature", &format!("t=0{TS},v1={sig}"))]);
        assert_eq!(
            Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, BODY, TS),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn unparseable_headers_are_malformed() {
        let sig = tag_hex(SECRET, TS, BODY);
        for value in [
            format!("v1={sig}"),
            format!("t=,v1={sig}"),
            format!("t=abc,v1={sig}"),
            format!("t=-{TS},v1={sig}"),
            format!("t={TS},t={TS},v1={sig}"),
            format!("t={TS}"),
            format!("t={TS},v1="),
            format!("t={TS},v1=xyz"),
            format!("{TS},{sig}"),
            // The formats seen in stripe-dotnet's incorrect-header cases.
            "t,v1=,v0=".to_owned(),
            "t,,".to_owned(),
            ",,".to_owned(),
            "t".to_owned(),
        ] {
            assert_eq!(
                Scheme::Stripe.verify(
                    &[key(SECRET)],
                    TOLERANCE,
                    &headers(&[("Stripe-Signature", &value)]),
                    BODY,
                    TS
                ),
                Err(Error::MalformedSignature("Stripe-Signature")),
                "{value}"
            );
        }
    }

    #[test]
    fn garbage_never_panics() {
        let valid = signed(&Scheme::Stripe, &key(SECRET), BODY, None, TS);
        garbage_is_refused(
            &Scheme::Stripe,
            &[key(SECRET)],
            &valid,
            BODY,
            TS,
            &["stripe-signature"],
        );
    }

    #[test]
    fn the_body_must_be_json_with_a_string_id() {
        for body in [
            &b"not json"[..],
            b"",
            b"{}",
            br#"{"id":42,"type":"x"}"#,
            br#"{"id":"","type":"x"}"#,
            br#"{"type":"x"}"#,
            br#"["evt_1"]"#,
            b"{\"id\":\"evt_\xff\"}",
        ] {
            let h = signed(&Scheme::Stripe, &key(SECRET), body, None, TS);
            assert!(
                matches!(
                    Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, body, TS),
                    Err(Error::MalformedBody(_))
                ),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        // The same rules as a parsed document: /type that is not a string is
        // unknown, a repeated key keeps its last value, escapes are decoded,
        // and trailing garbage or broken nesting is not JSON.
        for (body, want) in [
            (&br#"{"type":7,"id":"evt_3"}"#[..], Ok(("evt_3", None))),
            (
                br#"{"id":"a","id":"evt_4","type":"x","type":"y"}"#,
                Ok(("evt_4", Some("y"))),
            ),
            (
                br#"{"id":"evt_\u0035","data":{"id":"inner","type":[1,{"a":null}]}}"#,
                Ok(("evt_5", None)),
            ),
            (
                br#" {"id" : "evt_6" , "type" : "t\"q" } "#,
                Ok(("evt_6", Some("t\"q"))),
            ),
            (br#"{"id":"evt_7"} x"#, Err(())),
            (br#"{"id":"evt_8","data":[}"#, Err(())),
            (br#"{"id":null}"#, Err(())),
            (br#""evt_9""#, Err(())),
        ] {
            let h = signed(&Scheme::Stripe, &key(SECRET), body, None, TS);
            let got = Scheme::Stripe
                .verify(&[key(SECRET)], TOLERANCE, &h, body, TS)
                .map(|v| (v.event_id, v.event_type));
            let want =
                want.map(|(id, t): (&str, Option<&str>)| (id.to_owned(), t.map(str::to_owned)));
            match want {
                Ok(want) => assert_eq!(got, Ok(want), "{}", String::from_utf8_lossy(body)),
                Err(()) => assert!(
                    matches!(got, Err(Error::MalformedBody(_))),
                    "{}: {got:?}",
                    String::from_utf8_lossy(body)
                ),
            }
        }
        // A JSON body without /type is fine: the type is just unknown.
        let body = br#"{"id":"evt_2"}"#;
        let h = signed(&Scheme::Stripe, &key(SECRET), body, None, TS);
        let v = Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, body, TS);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok(("evt_2".into(), None))
        );
    }

    #[test]
    fn non_utf8_body_is_signed_byte_for_byte() {
        // Stripe bodies are JSON, so such a body passes the signature and is
        // then refused as a body, never as a signature.
        let body = b"\xff\xfe{\"id\":\"evt\"}\x80";
        let h = signed(&Scheme::Stripe, &key(SECRET), body, None, TS);
        assert!(matches!(
            Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, body, TS),
            Err(Error::MalformedBody(_))
        ));
        let mut tampered = body.to_vec();
        tampered[0] = 0xfe;
        assert_eq!(
            Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, &tampered, TS),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn signature_is_checked_before_the_window_and_the_body() {
        let body = b"not json";
        let h = signed(&Scheme::Stripe, &key(b"whsec_other"), body, None, TS);
        assert_eq!(
            Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, body, TS + 10_000),
            Err(Error::InvalidSignature)
        );
        let h = signed(&Scheme::Stripe, &key(SECRET), body, None, TS);
        assert!(matches!(
            Scheme::Stripe.verify(&[key(SECRET)], TOLERANCE, &h, body, TS + 10_000),
            Err(Error::TimestampOutsideWindow { .. })
        ));
    }
}
