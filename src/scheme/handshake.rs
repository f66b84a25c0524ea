//! Endpoint checks answered by hookgate itself, so the app never has to
//! know about them and a sender's setup works with hookgate in front.
//!
//! `before` runs before the method check and before the body is read: GET
//! and HEAD checks, and the unsigned POSTs some senders open with (Asana's
//! `X-Hook-Secret`, Microsoft Graph's `?validationToken=`). It only ever
//! echoes what the caller sent, or proves knowledge of a key the way the
//! provider specifies, so answering an unauthenticated caller gives nothing
//! away; Meta's check is answered only when the caller knows the source's
//! `verify_token`. `after` runs on a verified POST. Challenges are echoed
//! only when short and printable, as text with `nosniff`, so a challenge
//! cannot be turned into a page of the caller's choosing.

use http::{HeaderMap, HeaderName, Method, Uri};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::json::{Field, json_fields};
use super::{Algorithm, Error, Reply, Secret, Verified, hmac};

/// Longest challenge echoed back.
const MAX_CHALLENGE: usize = 512;

/// An endpoint check a provider makes, answered by hookgate itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Slack: a signed `{"type":"url_verification","challenge":…}` POST,
    /// answered `{"challenge":…}`.
    SlackUrlVerification,
    /// Zoom: a signed `endpoint.url_validation` POST, answered with
    /// `plainToken` and its HMAC-SHA256 (hex) under the matching secret.
    ZoomUrlValidation,
    /// Twitch EventSub: a signed POST with message type
    /// `webhook_callback_verification`, answered with `/challenge` as text.
    TwitchChallenge,
    /// Discord: a signed PING (`"type":1`), answered `{"type":1}`.
    DiscordPing,
    /// Dropbox, Nylas: `GET ?challenge=…`, echoed as text.
    EchoChallenge,
    /// Okta event hooks: `GET` with `X-Okta-Verification-Challenge`,
    /// answered `{"verification":…}`.
    OktaVerification,
    /// X (Twitter): `GET ?crc_token=…`, answered with
    /// `sha256=` + base64 HMAC-SHA256 of the token under the first secret.
    TwitterCrc,
    /// Trello: a `HEAD` when the webhook is created, answered 200.
    TrelloHead,
    /// Meta: `GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`,
    /// answered with the challenge when the token is the source's
    /// `verify_token`.
    MetaVerifyToken,
    /// Asana: an unsigned POST with `X-Hook-Secret`, answered 200 with the
    /// same header.
    AsanaHookSecret,
    /// Microsoft Graph: `POST ?validationToken=…`, answered with the token
    /// as text.
    GraphValidationToken,
    /// Worldline (GCS): `GET` with `X-GCS-Webhooks-Endpoint-Verification`,
    /// answered 200 with the header's value as text.
    WorldlineEndpointVerification,
}

impl Handshake {
    /// A short description for the docs table.
    pub fn describe(self) -> &'static str {
        match self {
            Handshake::SlackUrlVerification => "signed `url_verification` POST → `{\"challenge\"}`",
            Handshake::ZoomUrlValidation => {
                "signed `endpoint.url_validation` POST → `plainToken` + `encryptedToken`"
            }
            Handshake::TwitchChallenge => {
                "signed `webhook_callback_verification` POST → challenge text"
            }
            Handshake::DiscordPing => "signed PING (`type` 1) → `{\"type\":1}`",
            Handshake::EchoChallenge => "`GET ?challenge=` → challenge text",
            Handshake::OktaVerification => {
                "`GET` with `X-Okta-Verification-Challenge` → `{\"verification\"}`"
            }
            Handshake::TwitterCrc => "`GET ?crc_token=` → `{\"response_token\"}`",
            Handshake::TrelloHead => "`HEAD` → 200",
            Handshake::MetaVerifyToken => {
                "`GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…` → challenge text, when the token is the source's `verify_token`"
            }
            Handshake::AsanaHookSecret => "unsigned POST with `X-Hook-Secret` → 200, header echoed",
            Handshake::GraphValidationToken => "`POST ?validationToken=` → token text",
            Handshake::WorldlineEndpointVerification => {
                "`GET` with `X-GCS-Webhooks-Endpoint-Verification` → its value as text"
            }
        }
    }
}

fn printable(value: &str) -> Option<&str> {
    let ok =
        !value.is_empty() && value.len() <= MAX_CHALLENGE && value.chars().all(|c| !c.is_control());
    ok.then_some(value)
}

/// `%XX` and `+` decoded; invalid escapes kept as written.
pub(crate) fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < text.len() => match hex::decode(&text[i + 1..i + 3]) {
                Ok(byte) => {
                    out.extend_from_slice(&byte);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            other => out.push(other),
        }
        i += 1;
    }
    out
}

/// `key=value` pairs of a query string or form body, decoded.
pub(crate) fn form_pairs(text: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    text.split(|&b| b == b'&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.iter().position(|&b| b == b'=') {
            Some(eq) => (percent_decode(&pair[..eq]), percent_decode(&pair[eq + 1..])),
            None => (percent_decode(pair), Vec::new()),
        })
        .collect()
}

fn query_param(uri: &Uri, name: &str) -> Option<String> {
    let query = uri.query()?;
    form_pairs(query.as_bytes())
        .into_iter()
        .find(|(k, _)| k == name.as_bytes())
        .and_then(|(_, v)| String::from_utf8(v).ok())
}

fn text(value: &str) -> Reply {
    Reply {
        content_type: "text/plain; charset=utf-8",
        body: value.as_bytes().to_vec(),
        echo: None,
    }
}

/// Whether `given` is `token`, in time that does not depend on where they
/// differ or on the token's length (both are compared as SHA-256 digests).
fn token_matches(given: &[u8], token: &Secret) -> bool {
    let given = Sha256::digest(given);
    let want = Sha256::digest(token.expose());
    given.ct_eq(&want).into()
}

/// Asana's handshake header: what it sends and what it expects back.
const HOOK_SECRET: HeaderName = HeaderName::from_static("x-hook-secret");

/// An endpoint check answered before the method check. `None`: not this
/// provider's check (carry on: a POST is verified, anything else is 405);
/// `Some(Err)`: a check that fails, refused with that error's 400.
pub(super) fn before(
    kind: Handshake,
    keys: &[Secret],
    verify_token: Option<&Secret>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
) -> Option<Result<Reply, Error>> {
    match kind {
        Handshake::EchoChallenge if method == Method::GET => {
            let challenge = query_param(uri, "challenge")?;
            Some(Ok(text(printable(&challenge)?)))
        }
        Handshake::OktaVerification if method == Method::GET => {
            let value = headers
                .get("x-okta-verification-challenge")?
                .to_str()
                .ok()?;
            Some(Ok(Reply::json(
                &json!({ "verification": printable(value)? }),
            )))
        }
        Handshake::TwitterCrc if method == Method::GET => {
            let token = query_param(uri, "crc_token")?;
            let key = keys.first()?;
            let tag = hmac::mac(
                Algorithm::Sha256,
                key.expose(),
                &[printable(&token)?.as_bytes()],
            );
            Some(Ok(Reply::json(&json!({
                "response_token": format!("sha256={}", hmac::encode_base64(&tag))
            }))))
        }
        Handshake::TrelloHead if method == Method::HEAD => Some(Ok(text(""))),
        // Meta: `GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`,
        // answered with the challenge only when the token is the source's
        // `verify_token`. Without one configured it is not answered (405).
        Handshake::MetaVerifyToken if method == Method::GET => {
            let token = verify_token?;
            if query_param(uri, "hub.mode")? != "subscribe" {
                return None;
            }
            let Some(given) = query_param(uri, "hub.verify_token") else {
                return Some(Err(Error::MissingSignature("hub.verify_token")));
            };
            if !token_matches(given.as_bytes(), token) {
                return Some(Err(Error::InvalidSignature));
            }
            let challenge = query_param(uri, "hub.challenge");
            Some(
                challenge
                    .as_deref()
                    .and_then(printable)
                    .map(text)
                    .ok_or(Error::MalformedSignature("hub.challenge")),
            )
        }
        // Asana: the request that opens a webhook carries `X-Hook-Secret`
        // and no signature; it is answered 200 with the same header. The
        // secret is Asana's to hand over (in its answer to the API call
        // that created the webhook), never logged here.
        Handshake::AsanaHookSecret if method == Method::POST => {
            let value = headers.get(&HOOK_SECRET)?;
            let ok = !value.is_empty()
                && value.len() <= MAX_CHALLENGE
                && value.as_bytes().iter().all(|b| b.is_ascii_graphic());
            if !ok {
                return Some(Err(Error::MalformedSignature("x-hook-secret")));
            }
            tracing::info!(
                handshake = "asana",
                "X-Hook-Secret handshake answered (the value is not logged); put the \
                 X-Hook-Secret of Asana's answer to the webhook's creation in this source's secrets"
            );
            Some(Ok(Reply {
                echo: Some((HOOK_SECRET, value.clone())),
                ..text("")
            }))
        }
        // Microsoft Graph: `POST ?validationToken=…` when a subscription is
        // created (or its lifecycle URL checked), answered 200 text/plain
        // with the token, URL-decoded.
        Handshake::GraphValidationToken if method == Method::POST => {
            let token = query_param(uri, "validationToken")?;
            Some(
                printable(&token)
                    .map(text)
                    .ok_or(Error::MalformedSignature("validationToken")),
            )
        }
        // Worldline: a new endpoint is checked with a `GET` carrying
        // `X-GCS-Webhooks-Endpoint-Verification`; the answer is 200 with the
        // header's value as a text body.
        Handshake::WorldlineEndpointVerification if method == Method::GET => {
            let value = headers
                .get("x-gcs-webhooks-endpoint-verification")?
                .to_str()
                .ok()?;
            Some(Ok(text(printable(value)?)))
        }
        _ => None,
    }
}

pub(super) fn after(
    kind: Handshake,
    keys: &[Secret],
    verified: &Verified,
    headers: &HeaderMap,
    body: &[u8],
) -> Option<Reply> {
    match kind {
        Handshake::SlackUrlVerification => {
            let [kind, challenge] = json_fields(body, ["/type", "/challenge"])?;
            if kind.as_str()? != "url_verification" {
                return None;
            }
            Some(Reply::json(
                &json!({ "challenge": printable(challenge.as_str()?)? }),
            ))
        }
        Handshake::ZoomUrlValidation => {
            let [event, plain] = json_fields(body, ["/event", "/payload/plainToken"])?;
            if event.as_str()? != "endpoint.url_validation" {
                return None;
            }
            let plain = printable(plain.as_str()?)?;
            let key = keys.get(verified.secret_index)?;
            let tag = hmac::mac(Algorithm::Sha256, key.expose(), &[plain.as_bytes()]);
            Some(Reply::json(&json!({
                "plainToken": plain,
                "encryptedToken": hex::encode(tag),
            })))
        }
        Handshake::TwitchChallenge => {
            let kind = headers.get("twitch-eventsub-message-type")?.as_bytes();
            if kind != b"webhook_callback_verification" {
                return None;
            }
            let [challenge] = json_fields(body, ["/challenge"])?;
            Some(text(printable(challenge.as_str()?)?))
        }
        Handshake::DiscordPing => {
            let [kind] = json_fields(body, ["/type"])?;
            let ping = matches!(kind, Field::Number(n) if n.as_u64() == Some(1));
            ping.then(|| Reply::json(&json!({ "type": 1 })))
        }
        Handshake::EchoChallenge
        | Handshake::OktaVerification
        | Handshake::TwitterCrc
        | Handshake::TrelloHead
        | Handshake::MetaVerifyToken
        | Handshake::AsanaHookSecret
        | Handshake::GraphValidationToken
        | Handshake::WorldlineEndpointVerification => None,
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn verified(index: usize) -> Verified {
        Verified {
            event_id: "e".into(),
            event_type: None,
            timestamp: None,
            secret_index: index,
        }
    }

    /// The body of an answered check.
    fn answered(got: Option<Result<Reply, Error>>) -> Option<Vec<u8>> {
        got.map(|r| r.expect("the check is answered").body)
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode(b"a%2Bb+c%zz%4"), b"a+b c%zz%4".to_vec());
        assert_eq!(percent_decode(b"%"), b"%".to_vec());
        assert_eq!(percent_decode(b"%4"), b"%4".to_vec());
        assert_eq!(percent_decode(b"%41"), b"A".to_vec());
        assert_eq!(
            form_pairs(b"a=1&&b=%3D&c"),
            vec![
                (b"a".to_vec(), b"1".to_vec()),
                (b"b".to_vec(), b"=".to_vec()),
                (b"c".to_vec(), Vec::new())
            ]
        );
    }

    #[test]
    fn get_challenges() {
        let keys = [Secret::new(b"consumer-secret".to_vec())];
        let h = HeaderMap::new();
        let uri: Uri = "/hook?challenge=abc%20def".parse().expect("test uri");
        let got = before(
            Handshake::EchoChallenge,
            &keys,
            None,
            &Method::GET,
            &uri,
            &h,
        );
        assert_eq!(answered(got), Some(b"abc def".to_vec()));
        // Not for POST, and not without the parameter.
        assert_eq!(
            before(
                Handshake::EchoChallenge,
                &keys,
                None,
                &Method::POST,
                &uri,
                &h
            ),
            None
        );
        let bare: Uri = "/hook".parse().expect("test uri");
        assert_eq!(
            before(
                Handshake::EchoChallenge,
                &keys,
                None,
                &Method::GET,
                &bare,
                &h
            ),
            None
        );
        // Control characters and huge challenges are not echoed.
        let nasty: Uri = "/hook?challenge=a%0Ab".parse().expect("test uri");
        assert_eq!(
            before(
                Handshake::EchoChallenge,
                &keys,
                None,
                &Method::GET,
                &nasty,
                &h
            ),
            None
        );
        let long: Uri = format!("/hook?challenge={}", "a".repeat(600))
            .parse()
            .expect("test uri");
        assert_eq!(
            before(
                Handshake::EchoChallenge,
                &keys,
                None,
                &Method::GET,
                &long,
                &h
            ),
            None
        );

        let mut okta = HeaderMap::new();
        okta.insert(
            "x-okta-verification-challenge",
            "c0ffee".parse().expect("v"),
        );
        let got = before(
            Handshake::OktaVerification,
            &keys,
            None,
            &Method::GET,
            &bare,
            &okta,
        );
        assert_eq!(
            answered(got),
            Some(br#"{"verification":"c0ffee"}"#.to_vec())
        );

        // Worldline: the header's value comes back as the text body; a GET
        // without it, or a POST with it, is not this check.
        let mut worldline = HeaderMap::new();
        worldline.insert(
            "x-gcs-webhooks-endpoint-verification",
            "d2b5c1a0-7e3f".parse().expect("v"),
        );
        let got = before(
            Handshake::WorldlineEndpointVerification,
            &keys,
            None,
            &Method::GET,
            &bare,
            &worldline,
        )
        .expect("the check is answered")
        .expect("and accepted");
        assert_eq!(got.body, b"d2b5c1a0-7e3f".to_vec());
        assert_eq!(got.content_type, "text/plain; charset=utf-8");
        for (method, headers) in [(Method::GET, &h), (Method::POST, &worldline)] {
            assert_eq!(
                before(
                    Handshake::WorldlineEndpointVerification,
                    &keys,
                    None,
                    &method,
                    &bare,
                    headers
                ),
                None,
                "{method}"
            );
        }

        // python3 -c "import hmac,hashlib,base64;print(base64.b64encode(hmac.new(b'consumer-secret',b'token123',hashlib.sha256).digest()).decode())"
        let crc: Uri = "/hook?crc_token=token123".parse().expect("test uri");
        let got = before(Handshake::TwitterCrc, &keys, None, &Method::GET, &crc, &h)
            .expect("a CRC is answered")
            .expect("and accepted");
        let json: serde_json::Value = serde_json::from_slice(&got.body).expect("json");
        assert_eq!(
            json["response_token"],
            "sha256=5Xv1uxqeLsnOqHDm6c8H8Mmk7r6pb46WZtPOekAmPsQ="
        );
        assert_eq!(
            before(Handshake::TwitterCrc, &[], None, &Method::GET, &crc, &h),
            None
        );

        let head = before(Handshake::TrelloHead, &keys, None, &Method::HEAD, &bare, &h);
        assert_eq!(answered(head), Some(Vec::new()));
        assert_eq!(
            before(Handshake::TrelloHead, &keys, None, &Method::GET, &bare, &h),
            None
        );
    }

    #[test]
    fn post_challenges() {
        let keys = [
            Secret::new(b"old".to_vec()),
            Secret::new(b"zoom-secret".to_vec()),
        ];
        let h = HeaderMap::new();
        let slack = br#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
        let got = after(
            Handshake::SlackUrlVerification,
            &keys,
            &verified(0),
            &h,
            slack,
        );
        assert_eq!(
            got.map(|r| r.body),
            Some(
                br#"{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}"#.to_vec()
            )
        );
        let event = br#"{"type":"event_callback","challenge":"x"}"#;
        assert_eq!(
            after(
                Handshake::SlackUrlVerification,
                &keys,
                &verified(0),
                &h,
                event
            ),
            None
        );

        // python3 -c "import hmac,hashlib;print(hmac.new(b'zoom-secret',b'qgg8vlvZRS6UYooatFL8Aw',hashlib.sha256).hexdigest())"
        let zoom = br#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
        let got = after(Handshake::ZoomUrlValidation, &keys, &verified(1), &h, zoom)
            .expect("zoom validation is answered");
        let json: serde_json::Value = serde_json::from_slice(&got.body).expect("json");
        assert_eq!(json["plainToken"], "qgg8vlvZRS6UYooatFL8Aw");
        assert_eq!(
            json["encryptedToken"],
            "b17f0320a1322a509340a1a835b3d9edbc491f0b0790ed2d20d0604d39dfe922"
        );

        let mut twitch = HeaderMap::new();
        twitch.insert(
            "twitch-eventsub-message-type",
            "webhook_callback_verification".parse().expect("v"),
        );
        let body = br#"{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{}}"#;
        let got = after(
            Handshake::TwitchChallenge,
            &keys,
            &verified(0),
            &twitch,
            body,
        );
        assert_eq!(
            got.map(|r| r.body),
            Some(b"pogchamp-kappa-360noscope-vohiyo".to_vec())
        );
        assert_eq!(
            after(Handshake::TwitchChallenge, &keys, &verified(0), &h, body),
            None
        );

        let ping = br#"{"id":"787053080478613555","type":1}"#;
        let got = after(Handshake::DiscordPing, &keys, &verified(0), &h, ping);
        assert_eq!(got.map(|r| r.body), Some(br#"{"type":1}"#.to_vec()));
        let command = br#"{"id":"787053080478613556","type":2}"#;
        assert_eq!(
            after(Handshake::DiscordPing, &keys, &verified(0), &h, command),
            None
        );
    }

    #[test]
    fn meta_verify_token() {
        let token = Secret::new(b"meta-verify-token".to_vec());
        let h = HeaderMap::new();
        let check = |query: &str, token: Option<&Secret>| {
            let uri: Uri = format!("/hook?{query}").parse().expect("test uri");
            before(
                Handshake::MetaVerifyToken,
                &[],
                token,
                &Method::GET,
                &uri,
                &h,
            )
        };
        let ok = "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meta-verify-token";
        assert_eq!(
            answered(check(ok, Some(&token))),
            Some(b"1158201444".to_vec())
        );
        // A wrong, near-miss or missing token is refused, never echoed.
        for query in [
            "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meta-verify-tokeN",
            "hub.mode=subscribe&hub.challenge=1&hub.verify_token=meta-verify-token%20",
            "hub.mode=subscribe&hub.challenge=1&hub.verify_token=",
        ] {
            assert_eq!(
                check(query, Some(&token)),
                Some(Err(Error::InvalidSignature))
            );
        }
        assert_eq!(
            check("hub.mode=subscribe&hub.challenge=1", Some(&token)),
            Some(Err(Error::MissingSignature("hub.verify_token")))
        );
        // The right token with a challenge that cannot be echoed.
        assert_eq!(
            check(
                "hub.mode=subscribe&hub.challenge=a%0Ab&hub.verify_token=meta-verify-token",
                Some(&token)
            ),
            Some(Err(Error::MalformedSignature("hub.challenge")))
        );
        assert_eq!(
            check(
                "hub.mode=subscribe&hub.verify_token=meta-verify-token",
                Some(&token)
            ),
            Some(Err(Error::MalformedSignature("hub.challenge")))
        );
        // Not a subscription check, or no token configured: not answered.
        assert_eq!(
            check(
                "hub.mode=unsubscribe&hub.challenge=1&hub.verify_token=meta-verify-token",
                Some(&token)
            ),
            None
        );
        assert_eq!(
            check(
                "hub.challenge=1&hub.verify_token=meta-verify-token",
                Some(&token)
            ),
            None
        );
        assert_eq!(check(ok, None), None);
        let uri: Uri = format!("/hook?{ok}").parse().expect("test uri");
        assert_eq!(
            before(
                Handshake::MetaVerifyToken,
                &[],
                Some(&token),
                &Method::POST,
                &uri,
                &h
            ),
            None
        );
    }

    #[test]
    fn asana_hook_secret_is_echoed_in_the_header() {
        let uri: Uri = "/hook".parse().expect("test uri");
        let mut h = HeaderMap::new();
        // The value from Asana's "Establish a webhook" reference.
        let secret = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";
        h.insert("x-hook-secret", secret.parse().expect("v"));
        let got = before(
            Handshake::AsanaHookSecret,
            &[],
            None,
            &Method::POST,
            &uri,
            &h,
        )
        .expect("answered")
        .expect("accepted");
        assert_eq!(got.body, Vec::<u8>::new());
        let (name, value) = got.echo.clone().expect("the header is echoed");
        assert_eq!(name.as_str(), "x-hook-secret");
        assert_eq!(value.as_bytes(), secret.as_bytes());
        let response = got.into_response();
        assert_eq!(response.headers()["x-hook-secret"], secret);
        // Without the header it is an ordinary delivery; not for GET.
        assert_eq!(
            before(
                Handshake::AsanaHookSecret,
                &[],
                None,
                &Method::POST,
                &uri,
                &HeaderMap::new()
            ),
            None
        );
        assert_eq!(
            before(
                Handshake::AsanaHookSecret,
                &[],
                None,
                &Method::GET,
                &uri,
                &h
            ),
            None
        );
        // A value that is not plain visible text is not echoed.
        for bad in [&b"a b"[..], b"", b"\xff\xfe", &[b'a'; 600]] {
            let mut h = HeaderMap::new();
            h.insert("x-hook-secret", HeaderValue::from_bytes(bad).expect("v"));
            assert_eq!(
                before(
                    Handshake::AsanaHookSecret,
                    &[],
                    None,
                    &Method::POST,
                    &uri,
                    &h
                ),
                Some(Err(Error::MalformedSignature("x-hook-secret")))
            );
        }
    }

    #[test]
    fn graph_validation_token_is_echoed_decoded() {
        let h = HeaderMap::new();
        let check = |target: &str, method: &Method| {
            let uri: Uri = target.parse().expect("test uri");
            before(Handshake::GraphValidationToken, &[], None, method, &uri, &h)
        };
        let got = check(
            "/hook?validationToken=Validation%3a+Testing+client+application+reachability+for+subscription+Request-Id%3a+9c4ba3a6-ad3f-4b12-9e8a-6ba4c5ef2b0f",
            &Method::POST,
        )
        .expect("answered")
        .expect("accepted");
        assert_eq!(got.content_type, "text/plain; charset=utf-8");
        assert_eq!(
            got.body,
            b"Validation: Testing client application reachability for subscription Request-Id: 9c4ba3a6-ad3f-4b12-9e8a-6ba4c5ef2b0f".to_vec()
        );
        let response = got.into_response();
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        assert_eq!(check("/hook", &Method::POST), None);
        assert_eq!(check("/hook?validationToken=x", &Method::GET), None);
        assert_eq!(
            check("/hook?validationToken=%3Cscript%3E%0A", &Method::POST),
            Some(Err(Error::MalformedSignature("validationToken")))
        );
    }
}
