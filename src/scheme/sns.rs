//! AWS SNS HTTP/S subscriptions: the JSON message carries its own signature.
//! `Signature` (base64) is RSA PKCS#1 v1.5 over the message's canonical
//! string, SHA1 for `SignatureVersion` 1 and SHA256 for 2; the certificate
//! is fetched from `SigningCertURL`, only over `https` and only from
//! `sns.<region>.amazonaws.com` or `sns.<region>.amazonaws.com.cn` (plus a
//! source's `[source.keys] allow_hosts`). Any other URL is refused as
//! `invalid_signature` and logged with its host; it is never fetched.
//!
//! The canonical string is `Name\nValue\n` for each signed field in byte
//! order of the names: `Message`, `MessageId`, `Subject` (when present),
//! `Timestamp`, `TopicArn`, `Type` for a `Notification`; `Message`,
//! `MessageId`, `SubscribeURL`, `Timestamp`, `Token`, `TopicArn`, `Type` for
//! a `SubscriptionConfirmation` or `UnsubscribeConfirmation`. Other fields
//! (`MessageAttributes`, `UnsubscribeURL`) are not signed.
//!
//! AWS signs the messages of every topic in every account alike, so a
//! source names the topics it accepts (`topic_arns`); a message from any
//! other topic is `invalid_signature`, checked before any fetch.
//!
//! The id is `MessageId`, the type `Type`, the signed time `Timestamp` (the
//! publish time, which SNS retries keep: hence the one-hour default window,
//! the longest total retry time SNS allows for HTTP/S). Both confirmations
//! are verified and forwarded; with `confirm_subscription = true` hookgate
//! also `GET`s the signed `SubscribeURL` (same host rule) itself.
//!
//! Raw message delivery sends the bare message with no signature at all:
//! such a request is `missing_signature`, and there is nothing to verify.
//!
//! Source: <https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html>.

use std::time::Duration;

use ring::signature::{
    RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY, RSA_PKCS1_2048_8192_SHA256, RsaParameters,
};
use serde_json::{Map, Value};

use super::provider::{Delivery, Provider, fetched_key};
use super::{Error, Verified, hmac};
use crate::keyfetch::{Fetcher, KeyKind, KeyPolicy, KeyUrl, Keys};

const NOTIFICATION: [&str; 6] = [
    "Message",
    "MessageId",
    "Subject",
    "Timestamp",
    "TopicArn",
    "Type",
];
const CONFIRMATION: [&str; 7] = [
    "Message",
    "MessageId",
    "SubscribeURL",
    "Timestamp",
    "Token",
    "TopicArn",
    "Type",
];

/// SNS retries an HTTP/S delivery for at most an hour with the same
/// signed `Timestamp`.
pub(super) const DEFAULT_TOLERANCE: Duration = Duration::from_secs(3600);

/// A message read far enough to know its key and what it signs.
pub(super) struct Message {
    fields: Map<String, Value>,
    kind: Kind,
    params: &'static RsaParameters,
    signature: Vec<u8>,
    cert_url: KeyUrl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Notification,
    SubscriptionConfirmation,
    UnsubscribeConfirmation,
}

/// Whether `host` is an SNS regional endpoint: `sns.<region>.amazonaws.com`
/// or `sns.<region>.amazonaws.com.cn`, the region letters, digits and `-`.
pub(super) fn is_sns_host(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let Some(rest) = host.strip_prefix("sns.") else {
        return false;
    };
    let region = rest
        .strip_suffix(".amazonaws.com")
        .or_else(|| rest.strip_suffix(".amazonaws.com.cn"));
    region.is_some_and(|r| {
        !r.is_empty()
            && r.len() <= 32
            && r.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !r.starts_with('-')
    })
}

/// A URL SNS gave, if it may be fetched: `https`, on an SNS host or one the
/// policy allows. Logged with its host when refused.
fn allowed_url(text: &str, policy: &KeyPolicy, source: &str, field: &str) -> Option<KeyUrl> {
    match KeyUrl::parse(text) {
        Some(url) if is_sns_host(url.host()) || policy.allows_host(url.host()) => Some(url),
        Some(url) => {
            tracing::warn!(
                source,
                field,
                host = url.host(),
                "SNS URL is not on an SNS host; not fetched"
            );
            None
        }
        None => {
            tracing::warn!(
                source,
                field,
                "SNS URL is not an https URL with a host; not fetched"
            );
            None
        }
    }
}

/// Reads the message: its type, signature and certificate URL (checked
/// against the host rule).
pub(super) fn parse(body: &[u8], policy: &KeyPolicy, source: &str) -> Result<Message, Error> {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        // Raw message delivery, or not SNS at all: no signature to check.
        return Err(Error::MissingSignature("Signature"));
    };
    let text = |name: &'static str| fields.get(name).and_then(Value::as_str);
    let signature = text("Signature").ok_or(Error::MissingSignature("Signature"))?;
    let kind = match text("Type") {
        Some("Notification") => Kind::Notification,
        Some("SubscriptionConfirmation") => Kind::SubscriptionConfirmation,
        Some("UnsubscribeConfirmation") => Kind::UnsubscribeConfirmation,
        _ => return Err(Error::MalformedSignature("Type")),
    };
    let params: &'static RsaParameters = match text("SignatureVersion") {
        Some("1") => &RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY,
        Some("2") => &RSA_PKCS1_2048_8192_SHA256,
        _ => return Err(Error::MalformedSignature("SignatureVersion")),
    };
    if signature.len() > 1024 {
        return Err(Error::MalformedSignature("Signature"));
    }
    let signature = hmac::decode_base64_any(signature.as_bytes())
        .ok_or(Error::MalformedSignature("Signature"))?;
    let url = text("SigningCertURL").ok_or(Error::MalformedSignature("SigningCertURL"))?;
    let cert_url =
        allowed_url(url, policy, source, "SigningCertURL").ok_or(Error::InvalidSignature)?;
    Ok(Message {
        fields,
        kind,
        params,
        signature,
        cert_url,
    })
}

impl Message {
    /// `Name\nValue\n` for each signed field present.
    fn canonical(&self) -> Result<Vec<u8>, Error> {
        let names: &[&str] = match self.kind {
            Kind::Notification => &NOTIFICATION,
            _ => &CONFIRMATION,
        };
        let mut out = Vec::with_capacity(512);
        for name in names {
            let value = match self.fields.get(*name) {
                Some(Value::String(v)) => v,
                // Only Subject is optional (and may be written as null).
                None | Some(Value::Null) if *name == "Subject" => continue,
                _ => return Err(Error::InvalidSignature),
            };
            out.extend_from_slice(name.as_bytes());
            out.push(b'\n');
            out.extend_from_slice(value.as_bytes());
            out.push(b'\n');
        }
        Ok(out)
    }

    fn text(&self, name: &str) -> Option<&str> {
        self.fields.get(name).and_then(Value::as_str)
    }
}

/// Checks the signature with the fetched certificate's key, then the window.
pub(super) fn verify_with(
    message: &Message,
    keys: &Keys,
    tolerance: Duration,
    now: i64,
) -> Result<Verified, Error> {
    let Keys::Certificate(key) = keys else {
        return Err(Error::InvalidSignature);
    };
    let canonical = message.canonical()?;
    if !key.verifies(message.params, &canonical, &message.signature) {
        return Err(Error::InvalidSignature);
    }
    let ts = message
        .text("Timestamp")
        .and_then(|t| hmac::parse_rfc3339(t.as_bytes()))
        .ok_or(Error::MalformedSignature("Timestamp"))?;
    hmac::check_window(ts, now, tolerance)?;
    let event_id = message
        .text("MessageId")
        .filter(|id| !id.is_empty())
        .ok_or(Error::MalformedBody("an SNS message needs a MessageId"))?;
    Ok(Verified {
        event_id: event_id.to_owned(),
        event_type: message.text("Type").map(str::to_owned),
        timestamp: Some(ts),
        secret_index: 0,
    })
}

/// Parse, fetch the certificate (cached), verify; then, for a verified
/// `SubscriptionConfirmation` on a source with `confirm_subscription`,
/// confirm it. A failed confirmation is logged and the message forwarded
/// all the same: the app receives the `SubscribeURL` too.
pub(super) async fn verify(
    fetcher: &Fetcher,
    settings: &SnsSource,
    source: &str,
    d: Delivery<'_>,
) -> Result<Verified, Error> {
    let message = parse(d.body, &settings.keys, source)?;
    // Checked before any fetch: another account's topic is not this source's
    // sender, however well AWS signed its message.
    let topic = message.text("TopicArn").unwrap_or_default();
    if !topic_allowed(&settings.topic_arns, topic) {
        tracing::warn!(source, topic, "SNS message from a topic not in topic_arns");
        return Err(Error::InvalidSignature);
    }
    let keys = fetcher
        .keys(&message.cert_url, KeyKind::Certificate, &settings.keys)
        .await
        .map_err(|_| Error::KeyUnavailable)?;
    let verified = verify_with(&message, &keys, d.tolerance, d.now)?;
    if settings.confirm_subscription && message.kind == Kind::SubscriptionConfirmation {
        confirm(fetcher, &message, &settings.keys, source).await;
    }
    Ok(verified)
}

/// Whether `topic` is one of `allowed` (a trailing `*` matches any suffix).
pub(super) fn topic_allowed(allowed: &[String], topic: &str) -> bool {
    !topic.is_empty()
        && allowed.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => topic.starts_with(prefix),
            None => p == topic,
        })
}

async fn confirm(fetcher: &Fetcher, message: &Message, policy: &KeyPolicy, source: &str) {
    let topic = message.text("TopicArn").unwrap_or_default();
    let Some(url) = message
        .text("SubscribeURL")
        .and_then(|u| allowed_url(u, policy, source, "SubscribeURL"))
    else {
        return;
    };
    match fetcher.get(&url, policy).await {
        Ok(_) => tracing::info!(source, topic, "SNS subscription confirmed"),
        Err(e) => {
            tracing::warn!(source, topic, host = url.host(), error = %e, "SNS subscription confirmation failed; the app received the SubscribeURL")
        }
    }
}

/// `scheme = "sns"`: AWS SNS messages, RSA over the message's canonical
/// string, keyed by the certificate each names (its `SigningCertURL`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnsSource {
    /// The topics whose messages this source accepts (`TopicArn`, exact or
    /// with a trailing `*`): AWS signs every topic's messages, so the
    /// signature alone does not say whose topic sent one.
    pub topic_arns: Vec<String>,
    /// `GET` the `SubscribeURL` of a verified `SubscriptionConfirmation`.
    pub confirm_subscription: bool,
    pub keys: KeyPolicy,
}

impl Provider for SnsSource {
    fn name(&self) -> &'static str {
        "sns"
    }

    fn signs_timestamp(&self) -> bool {
        true
    }

    fn default_tolerance(&self) -> Option<Duration> {
        Some(DEFAULT_TOLERANCE)
    }

    fetched_key!(verify, keys);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyfetch::certificate_key;

    // aws/aws-sdk-java-v2 services/sns/src/test/resources/software/amazon/
    // awssdk/services/sns/sample-message.json, verified there by
    // SnsSignatureCheckerTest with unit-test-public-cert.pem (below): a real
    // SNS notification, SignatureVersion 1, with MessageAttributes (unsigned).
    const SAMPLE: &str = include_str!("fixtures/sns-sample-message.json");
    const SAMPLE_CERT: &str = include_str!("fixtures/sns-unit-test-public-cert.pem");
    // The same repository's sns-public-cert.pem: a real SNS certificate that
    // did not sign the sample.
    const OTHER_CERT: &str = include_str!("fixtures/sns-public-cert.pem");
    // 2015-09-20T01:22:14Z, the sample's Timestamp.
    const TS: i64 = 1_442_712_134;

    fn cert(pem: &str) -> Keys {
        Keys::Certificate(
            certificate_key(pem.as_bytes())
                .expect("a real SNS certificate")
                .0,
        )
    }

    fn message(body: &str) -> Result<Message, Error> {
        parse(body.as_bytes(), &KeyPolicy::default(), "sns")
    }

    #[test]
    fn the_aws_sdk_sample_verifies() {
        let m = message(SAMPLE).expect("parses");
        assert_eq!(m.cert_url.host(), "sns.us-east-1.amazonaws.com");
        let got = verify_with(&m, &cert(SAMPLE_CERT), Duration::from_secs(300), TS + 60);
        assert_eq!(
            got,
            Ok(Verified {
                event_id: "d39649d4-bf5b-5b80-af75-07acb3dd9b4a".into(),
                event_type: Some("Notification".into()),
                timestamp: Some(TS),
                secret_index: 0,
            })
        );
        // Another real SNS certificate does not verify it.
        assert_eq!(
            verify_with(&m, &cert(OTHER_CERT), Duration::from_secs(300), TS),
            Err(Error::InvalidSignature)
        );
        // Unsigned fields may change; signed ones may not.
        let unsigned = SAMPLE.replace("\"Value\": \"token\"", "\"Value\": \"other\"");
        let m = message(&unsigned).expect("parses");
        assert!(verify_with(&m, &cert(SAMPLE_CERT), Duration::from_secs(300), TS).is_ok());
        for (from, to) in [
            ("\"Message\": \"boo\"", "\"Message\": \"bop\""),
            ("\"Subject\": \"this is raw\",", ""),
            (
                "\"Subject\": \"this is raw\"",
                "\"Subject\": \"this is raw \"",
            ),
            ("2015-09-20T01:22:14.001Z", "2015-09-20T01:22:15.001Z"),
            ("just_testing\",", "just_testinG\","),
        ] {
            let tampered = SAMPLE.replacen(from, to, 1);
            assert_ne!(tampered, SAMPLE, "{from}");
            let m = message(&tampered).expect("parses");
            assert_eq!(
                verify_with(&m, &cert(SAMPLE_CERT), Duration::from_secs(300), TS),
                Err(Error::InvalidSignature),
                "{from} -> {to}"
            );
        }
        // Signed, but stale.
        let m = message(SAMPLE).expect("parses");
        assert!(matches!(
            verify_with(&m, &cert(SAMPLE_CERT), Duration::from_secs(300), TS + 301),
            Err(Error::TimestampOutsideWindow { .. })
        ));
        // Version 2 (SHA256) over the same bytes does not verify a SHA1 signature.
        let v2 = SAMPLE.replace("\"SignatureVersion\": \"1\"", "\"SignatureVersion\": \"2\"");
        let m = message(&v2).expect("parses");
        assert_eq!(
            verify_with(&m, &cert(SAMPLE_CERT), Duration::from_secs(300), TS),
            Err(Error::InvalidSignature)
        );
    }

    #[test]
    fn canonical_strings_follow_the_aws_field_lists() {
        let n = message(
            r#"{"Type":"Notification","MessageId":"m","TopicArn":"t","Message":"hi","Timestamp":"2024-01-01T00:00:00Z",
                "SignatureVersion":"2","Signature":"AAAA","SigningCertURL":"https://sns.eu-west-1.amazonaws.com/c.pem","UnsubscribeURL":"u"}"#,
        )
        .expect("parses");
        assert_eq!(
            n.canonical().expect("complete"),
            b"Message\nhi\nMessageId\nm\nTimestamp\n2024-01-01T00:00:00Z\nTopicArn\nt\nType\nNotification\n"
        );
        let c = message(
            r#"{"Type":"SubscriptionConfirmation","MessageId":"m","Token":"tok","TopicArn":"t","Message":"hi",
                "SubscribeURL":"https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription","Timestamp":"2024-01-01T00:00:00Z",
                "SignatureVersion":"1","Signature":"AAAA","SigningCertURL":"https://sns.cn-north-1.amazonaws.com.cn/c.pem"}"#,
        )
        .expect("parses");
        assert_eq!(
            c.canonical().expect("complete"),
            &b"Message\nhi\nMessageId\nm\nSubscribeURL\nhttps://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription\nTimestamp\n2024-01-01T00:00:00Z\nToken\ntok\nTopicArn\nt\nType\nSubscriptionConfirmation\n"[..]
        );
        // A confirmation without its Token cannot be canonical.
        let missing = message(
            r#"{"Type":"UnsubscribeConfirmation","MessageId":"m","TopicArn":"t","Message":"hi","SubscribeURL":"s","Timestamp":"2024-01-01T00:00:00Z",
                "SignatureVersion":"1","Signature":"AAAA","SigningCertURL":"https://sns.us-east-1.amazonaws.com/c.pem"}"#,
        )
        .expect("parses");
        assert_eq!(missing.canonical(), Err(Error::InvalidSignature));
    }

    #[test]
    fn only_sns_hosts_over_https_are_fetched() {
        for host in [
            "sns.us-east-1.amazonaws.com",
            "sns.eu-central-2.amazonaws.com",
            "SNS.US-WEST-2.AMAZONAWS.COM",
            "sns.cn-north-1.amazonaws.com.cn",
        ] {
            assert!(is_sns_host(host), "{host}");
        }
        for host in [
            "sns.amazonaws.com",
            "sns..amazonaws.com",
            "sns.us-east-1.amazonaws.com.evil.example",
            "evil.example",
            "sns.us-east-1.amazonaws.co",
            "xsns.us-east-1.amazonaws.com",
            "sns.us_east.amazonaws.com",
            "sns.a.b.amazonaws.com",
            "sns.-x.amazonaws.com",
        ] {
            assert!(!is_sns_host(host), "{host}");
        }
        let with = |url: &str| {
            SAMPLE.replace(
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-bb750dd426d95ee9390147a5624348ee.pem",
            url,
        )
        };
        for url in [
            "http://sns.us-east-1.amazonaws.com/c.pem",
            "https://evil.example/c.pem",
            "https://sns.us-east-1.amazonaws.com.evil.example/c.pem",
            "https://evil.example#@sns.us-east-1.amazonaws.com/c.pem",
            "https://sns.us-east-1.amazonaws.com@evil.example/c.pem",
            "https://127.0.0.1/c.pem",
        ] {
            assert!(
                matches!(message(&with(url)), Err(Error::InvalidSignature)),
                "{url}"
            );
        }
        // A test host only with the explicit knob.
        let policy = KeyPolicy {
            allow_hosts: vec!["127.0.0.1".to_owned()],
            ..KeyPolicy::default()
        };
        assert!(parse(with("https://127.0.0.1:9/c.pem").as_bytes(), &policy, "sns").is_ok());
    }

    #[test]
    fn topics_are_matched_exactly_or_by_prefix() {
        let allowed = [
            "arn:aws:sns:us-east-1:810605503585:just_testing".to_owned(),
            "arn:aws:sns:eu-west-1:123456789012:orders-*".to_owned(),
        ];
        assert!(topic_allowed(
            &allowed,
            "arn:aws:sns:us-east-1:810605503585:just_testing"
        ));
        assert!(topic_allowed(
            &allowed,
            "arn:aws:sns:eu-west-1:123456789012:orders-eu"
        ));
        assert!(!topic_allowed(
            &allowed,
            "arn:aws:sns:us-east-1:810605503585:just_testing2"
        ));
        assert!(!topic_allowed(
            &allowed,
            "arn:aws:sns:us-east-1:999999999999:just_testing"
        ));
        assert!(!topic_allowed(&allowed, ""));
        assert!(!topic_allowed(
            &[],
            "arn:aws:sns:us-east-1:810605503585:just_testing"
        ));
    }

    #[test]
    fn unsigned_and_odd_messages_are_refused() {
        // Raw message delivery: the bare message, no signature.
        assert!(matches!(message("hello"), Err(Error::MissingSignature(_))));
        assert!(matches!(
            message(r#"{"default":"x"}"#),
            Err(Error::MissingSignature(_))
        ));
        for (from, to) in [
            ("\"SignatureVersion\": \"1\"", "\"SignatureVersion\": \"3\""),
            ("\"Type\": \"Notification\"", "\"Type\": \"Other\""),
            ("\"Signature\": \"", "\"Signature\": \"!!"),
            ("\"SigningCertURL\"", "\"SigningCertUrl\""),
        ] {
            let odd = SAMPLE.replacen(from, to, 1);
            assert!(
                matches!(message(&odd), Err(Error::MalformedSignature(_))),
                "{to}"
            );
        }
    }
}
