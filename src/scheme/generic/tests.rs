use http::HeaderName;

use super::super::Encoding;
use super::super::Scheme;
use super::super::test_support::{
    TOLERANCE, common_checks, garbage_is_refused, headers, key, set, signed,
};
use super::*;

fn name(n: &'static str) -> HeaderName {
    HeaderName::from_static(n)
}

/// GitHub, described as a generic sender.
fn github_like() -> Generic {
    Generic {
        signature_prefix: Some("sha256=".into()),
        event_id: Some(Locator::Header(name("x-github-delivery"))),
        event_type: Some(Locator::Header(name("x-github-event"))),
        ..Generic::new(name("x-hub-signature-256"), Encoding::Hex)
    }
}

/// Standard Webhooks, described as a generic sender.
fn standard_like() -> Generic {
    Generic {
        signature_prefix: Some("v1,".into()),
        signed_payload: "{id}.{timestamp}.{body}".into(),
        timestamp_header: Some(name("webhook-timestamp")),
        event_id: Some(Locator::Header(name("webhook-id"))),
        event_type: Some(Locator::Pointer("/type".into())),
        ..Generic::new(name("webhook-signature"), Encoding::Base64)
    }
}

/// A sender with everything in the body and no timestamp.
fn pointer_ids() -> Generic {
    Generic {
        event_id: Some(Locator::Pointer("/id".into())),
        event_type: Some(Locator::Pointer("/kind".into())),
        ..Generic::new(name("x-acme-signature"), Encoding::Hex)
    }
}

fn scheme(g: Generic) -> Scheme {
    Scheme::Generic(Box::new(g))
}

const NOW: i64 = 1_700_000_000;

#[test]
fn a_bearer_token_matches_in_any_case_and_only_whole() {
    let g = Generic {
        algorithm: Algorithm::Token,
        signed_payload: String::new(),
        signature_prefix: Some("Bearer ".into()),
        ..Generic::new(name("authorization"), Encoding::Hex)
    };
    let s = scheme(g);
    let keys = [key(b"okta-token-1234")];
    for value in [
        "Bearer okta-token-1234",
        "bearer okta-token-1234",
        "BEARER okta-token-1234",
    ] {
        let h = headers(&[("authorization", value)]);
        assert!(
            s.verify(&keys, TOLERANCE, &h, b"{}", NOW).is_ok(),
            "{value}"
        );
    }
    for value in [
        "Bearer okta-token-123",
        "Bearer okta-token-12345",
        "Bearer ",
        "okta-token-1234",
    ] {
        let h = headers(&[("authorization", value)]);
        assert!(
            s.verify(&keys, TOLERANCE, &h, b"{}", NOW).is_err(),
            "{value}"
        );
    }
}

/// Token and candidate are compared as digests of one fixed length, so
/// the comparison cannot stop early on a length that differs.
#[test]
fn tokens_are_compared_as_fixed_length_digests() {
    let g = Generic {
        algorithm: Algorithm::Token,
        signed_payload: String::new(),
        ..Generic::new(name("x-token"), Encoding::Hex)
    };
    for sent in [&b"a"[..], b"a-much-longer-token-than-the-secret-itself"] {
        assert_eq!(g.decode(sent).map(|d| d.len()), Some(32));
    }
    assert_eq!(g.expected(b"secret", &[]).len(), 32);
    assert_eq!(g.decode(b"secret"), Some(g.expected(b"secret", &[])));
}

// GitHub's published test values, as in github.rs:
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
#[test]
fn github_docs_vector_through_the_generic_config() {
    let h = headers(&[
        (
            "X-Hub-Signature-256",
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        ),
        ("X-GitHub-Delivery", "d-1"),
        ("X-GitHub-Event", "ping"),
    ]);
    let got = scheme(github_like()).verify(
        &[key(b"It's a Secret to Everybody")],
        TOLERANCE,
        &h,
        b"Hello, World!",
        NOW,
    );
    assert_eq!(
        got,
        Ok(Verified {
            event_id: "d-1".into(),
            event_type: Some("ping".into()),
            timestamp: None,
            secret_index: 0,
        })
    );
}

// The Standard Webhooks signing vector, as in standard.rs:
// https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_test.go
// Generic keys are raw bytes, so the key is the base64-decoded secret.
fn standard_key() -> Secret {
    let raw = hmac::decode_base64_any(b"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .expect("the spec's key is base64");
    key(&raw)
}

#[test]
fn standard_webhooks_vector_through_the_generic_config() {
    let h = headers(&[
        ("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"),
        ("webhook-timestamp", "1614265330"),
        (
            "webhook-signature",
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        ),
    ]);
    let got = scheme(standard_like()).verify(
        &[standard_key()],
        TOLERANCE,
        &h,
        br#"{"test": 2432232314}"#,
        1_614_265_330,
    );
    assert_eq!(
        got,
        Ok(Verified {
            event_id: "msg_p5jXN8AQM9LWM0D4loKWxJek".into(),
            event_type: None,
            timestamp: Some(1_614_265_330),
            secret_index: 0,
        })
    );
    let lines = scheme(standard_like())
        .sign(
            &standard_key(),
            br#"{"test": 2432232314}"#,
            Some("msg_p5jXN8AQM9LWM0D4loKWxJek"),
            1_614_265_330,
        )
        .expect("HMAC senders sign");
    assert_eq!(
        lines,
        vec![
            (
                "webhook-signature".to_owned(),
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".to_owned()
            ),
            ("webhook-timestamp".to_owned(), "1614265330".to_owned()),
            (
                "webhook-id".to_owned(),
                "msg_p5jXN8AQM9LWM0D4loKWxJek".to_owned()
            ),
        ]
    );
}

// Slack's worked example, as in slack.rs:
// https://api.slack.com/authentication/verifying-requests-from-slack
#[test]
fn slack_docs_vector_through_the_generic_config() {
    let g = Generic {
        signature_prefix: Some("v0=".into()),
        signed_payload: "v0:{timestamp}:{body}".into(),
        timestamp_header: Some(name("x-slack-request-timestamp")),
        ..Generic::new(name("x-slack-signature"), Encoding::Hex)
    };
    let body: &[u8] = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J\
        &team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar\
        &user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=\
        &response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J\
        %2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN\
        &trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    let h = headers(&[
        (
            "X-Slack-Signature",
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
        ),
        ("X-Slack-Request-Timestamp", "1531420618"),
    ]);
    let got = scheme(g).verify(
        &[key(b"8f742231b10e8888abcd99yyyzzz85a5")],
        TOLERANCE,
        &h,
        body,
        1_531_420_618,
    );
    assert_eq!(got.map(|v| v.event_id), Ok(hmac::body_sha256_hex(body)));
}

#[test]
fn common_for_each_shape() {
    let body = br#"{"id":"evt_9","kind":"thing.done","type":"thing.done"}"#;
    common_checks(
        &scheme(github_like()),
        &key(b"s3cret"),
        body,
        &["x-hub-signature-256"],
    );
    common_checks(
        &scheme(standard_like()),
        &standard_key(),
        body,
        &["webhook-signature"],
    );
    common_checks(
        &scheme(pointer_ids()),
        &key(b"s3cret"),
        body,
        &["x-acme-signature"],
    );
}

#[test]
fn templates_split_into_text_and_placeholders() {
    use Piece::{Body, Id, Text, Timestamp};
    assert_eq!(pieces("{body}"), vec![Body]);
    assert_eq!(
        pieces("{id}.{timestamp}.{body}"),
        vec![Id, Text(b"."), Timestamp, Text(b"."), Body]
    );
    assert_eq!(
        pieces("v0:{timestamp}:{body}"),
        vec![Text(b"v0:"), Timestamp, Text(b":"), Body]
    );
    assert_eq!(pieces("{{body}}"), vec![Text(b"{"), Body, Text(b"}")]);
    assert_eq!(
        pieces("é{nope}{body}ü{"),
        vec![Text("é{nope}".as_bytes()), Body, Text("ü{".as_bytes())]
    );
    assert_eq!(pieces(""), vec![]);
}

#[test]
fn unknown_braces_are_signed_as_written() {
    let g = Generic {
        signed_payload: "x{nope}{body}".into(),
        ..pointer_ids()
    };
    let body = br#"{"id":"e"}"#;
    let lines = scheme(g.clone())
        .sign(&key(b"k"), body, None, NOW)
        .expect("HMAC senders sign");
    let expected = hex::encode(hmac::tag(b"k", &[b"x{nope}", body]));
    assert_eq!(lines, vec![("x-acme-signature".to_owned(), expected)]);
    let h = signed(&scheme(g.clone()), &key(b"k"), body, None, NOW);
    assert!(
        scheme(g)
            .verify(&[key(b"k")], TOLERANCE, &h, body, NOW)
            .is_ok()
    );
}

#[test]
fn validate_refuses_tables_that_cannot_work() {
    assert_eq!(github_like().validate(), Ok(()));
    assert_eq!(standard_like().validate(), Ok(()));
    assert_eq!(pointer_ids().validate(), Ok(()));
    let no_body = Generic {
        signed_payload: "{id}".into(),
        ..github_like()
    };
    let ts_without_header = Generic {
        timestamp_header: None,
        ..standard_like()
    };
    let header_without_ts = Generic {
        signed_payload: "{id}.{body}".into(),
        ..standard_like()
    };
    let id_from_pointer = Generic {
        event_id: Some(Locator::Pointer("/id".into())),
        ..standard_like()
    };
    let id_absent = Generic {
        event_id: None,
        ..standard_like()
    };
    for g in [
        no_body,
        ts_without_header,
        header_without_ts,
        id_from_pointer,
        id_absent,
    ] {
        assert!(g.validate().is_err(), "{g:?}");
    }
}

#[test]
fn validate_speaks_the_shape_rules_of_config() {
    // The rule config reports on `[source.generic]` holds for presets too.
    let cut = Generic {
        signature_delimiter: Some("a".into()),
        ..github_like()
    };
    assert_eq!(
        cut.validate(),
        Err(
            "signature_delimiter: is made of characters a signature itself uses; \
             pick a separator such as \",\" or \" \""
                .to_owned()
        )
    );
    let key_without_list = Generic {
        signature_key: Some("v1".into()),
        ..github_like()
    };
    assert!(key_without_list.validate().is_err());
    // An unknown encoding silences the rule that needs it.
    assert_eq!(cut.flaws(&["encoding"]), vec![]);
}

#[test]
fn ids_and_types_from_pointers() {
    let s = scheme(pointer_ids());
    let k = key(b"k");
    for (body, id, kind) in [
        (&br#"{"id":"evt_1","kind":"a.b"}"#[..], "evt_1", Some("a.b")),
        (br#"{"id":12345,"kind":7}"#, "12345", None),
        (br#"{"id":"evt_2"}"#, "evt_2", None),
    ] {
        let h = signed(&s, &k, body, None, NOW);
        let v = s.verify(std::slice::from_ref(&k), TOLERANCE, &h, body, NOW);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok((id.to_owned(), kind.map(str::to_owned)))
        );
    }
    for body in [
        &b"not json"[..],
        br#"{"kind":"a.b"}"#,
        br#"{"id":"","kind":"a.b"}"#,
        br#"{"id":null}"#,
        br#"{"id":{"nested":1}}"#,
    ] {
        let h = signed(&s, &k, body, None, NOW);
        assert!(
            matches!(
                s.verify(std::slice::from_ref(&k), TOLERANCE, &h, body, NOW),
                Err(Error::MalformedBody(_))
            ),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn ids_from_headers_and_the_body_digest() {
    // Id header configured but absent (and not signed): malformed body.
    let s = scheme(github_like());
    let k = key(b"k");
    let mut h = signed(&s, &k, b"{}", Some("d-1"), NOW);
    h.remove("x-github-delivery");
    assert_eq!(
        s.verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW),
        Err(Error::MalformedBody("event id header is missing"))
    );
    // No id configured: the body's digest, and no type.
    let g = Generic {
        event_id: None,
        event_type: None,
        ..github_like()
    };
    let h = signed(&scheme(g.clone()), &k, b"{}", None, NOW);
    assert_eq!(h.len(), 1, "no id header is sent when none is configured");
    let v = scheme(g).verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW);
    assert_eq!(
        v.map(|v| (v.event_id, v.event_type)),
        Ok((hmac::body_sha256_hex(b"{}"), None))
    );
}

#[test]
fn a_signed_id_or_timestamp_must_be_present() {
    let s = scheme(standard_like());
    let k = standard_key();
    let full = signed(&s, &k, b"{}", Some("msg_1"), NOW);
    for (removed, label) in [
        ("webhook-id", "event_id"),
        ("webhook-timestamp", "timestamp_header"),
    ] {
        let mut h = full.clone();
        h.remove(removed);
        assert_eq!(
            s.verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW),
            Err(Error::MalformedSignature(label))
        );
    }
}

#[test]
fn tampered_id_or_timestamp_is_refused() {
    let s = scheme(standard_like());
    let k = standard_key();
    let full = signed(&s, &k, b"{}", Some("msg_1"), NOW);
    let later = (NOW + 1).to_string();
    for (name, value) in [
        ("webhook-id", "msg_2"),
        ("webhook-timestamp", later.as_str()),
    ] {
        let mut h = full.clone();
        set(&mut h, name, value.as_bytes());
        assert_eq!(
            s.verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW),
            Err(Error::InvalidSignature),
            "{name}"
        );
    }
}

#[test]
fn prefix_and_encoding_are_enforced() {
    let s = scheme(github_like());
    let k = key(b"k");
    let full = signed(&s, &k, b"{}", Some("d"), NOW);
    let value = full
        .get("x-hub-signature-256")
        .expect("sign sets the signature header")
        .to_str()
        .expect("hex is ASCII")
        .to_owned();
    let bare = value.trim_start_matches("sha256=");
    let b64 = hmac::encode_base64(&hmac::tag_from_hex(bare.as_bytes()).expect("valid hex"));
    for bad in [
        bare.to_owned(),
        format!("sha1={bare}"),
        format!("sha256={b64}"),
    ] {
        let mut h = full.clone();
        set(&mut h, "x-hub-signature-256", bad.as_bytes());
        assert_eq!(
            s.verify(std::slice::from_ref(&k), TOLERANCE, &h, b"{}", NOW),
            Err(Error::MalformedSignature("signature_header")),
            "{bad}"
        );
    }
}

#[test]
fn garbage_never_panics() {
    let s = scheme(standard_like());
    let k = standard_key();
    let valid = signed(&s, &k, b"{}", Some("msg_1"), NOW);
    garbage_is_refused(
        &s,
        std::slice::from_ref(&k),
        &valid,
        b"{}",
        NOW,
        &["webhook-signature", "webhook-timestamp", "webhook-id"],
    );
    let s = scheme(github_like());
    let valid = signed(&s, &k, b"{}", Some("d"), NOW);
    garbage_is_refused(
        &s,
        std::slice::from_ref(&k),
        &valid,
        b"{}",
        NOW,
        &["x-hub-signature-256"],
    );
}

#[test]
fn non_utf8_body_round_trips() {
    let body = b"\xff{\"type\":\x80}\xfe";
    for g in [github_like(), standard_like()] {
        let s = scheme(g);
        let k = key(b"k");
        let h = signed(&s, &k, body, Some("bin-1"), NOW);
        let v = s.verify(std::slice::from_ref(&k), TOLERANCE, &h, body, NOW);
        assert_eq!(
            v.map(|v| (v.event_id, v.event_type)),
            Ok(("bin-1".to_owned(), None))
        );
    }
}
