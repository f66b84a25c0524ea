//! Endpoint checks answered by hookgate itself, so the app never has to
//! know about them and a sender's setup works with hookgate in front.
//!
//! `before` runs for requests other than a signed POST (GET/HEAD checks);
//! it only ever echoes what the caller sent or proves knowledge of a key the
//! way the provider specifies, so answering an unauthenticated caller gives
//! nothing away. `after` runs on a verified POST. Challenges are echoed only
//! when short and printable, as text with `nosniff`, so a challenge cannot be
//! turned into a page of the caller's choosing.

use http::{HeaderMap, Method, Uri};
use serde_json::json;

use super::catalog::Handshake;
use super::json::{Field, json_fields};
use super::{Algorithm, Reply, Secret, Verified, hmac};

/// Longest challenge echoed back.
const MAX_CHALLENGE: usize = 512;

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
    }
}

pub(super) fn before(
    kind: Handshake,
    keys: &[Secret],
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
) -> Option<Reply> {
    match kind {
        Handshake::EchoChallenge if method == Method::GET => {
            let challenge = query_param(uri, "challenge")?;
            Some(text(printable(&challenge)?))
        }
        Handshake::OktaVerification if method == Method::GET => {
            let value = headers
                .get("x-okta-verification-challenge")?
                .to_str()
                .ok()?;
            Some(Reply::json(&json!({ "verification": printable(value)? })))
        }
        Handshake::TwitterCrc if method == Method::GET => {
            let token = query_param(uri, "crc_token")?;
            let key = keys.first()?;
            let tag = hmac::mac(
                Algorithm::Sha256,
                key.expose(),
                &[printable(&token)?.as_bytes()],
            );
            Some(Reply::json(&json!({
                "response_token": format!("sha256={}", hmac::encode_base64(&tag))
            })))
        }
        Handshake::TrelloHead if method == Method::HEAD => Some(text("")),
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
        | Handshake::TrelloHead => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verified(index: usize) -> Verified {
        Verified {
            event_id: "e".into(),
            event_type: None,
            timestamp: None,
            secret_index: index,
        }
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
        let got = before(Handshake::EchoChallenge, &keys, &Method::GET, &uri, &h);
        assert_eq!(got.map(|r| r.body), Some(b"abc def".to_vec()));
        // Not for POST, and not without the parameter.
        assert_eq!(
            before(Handshake::EchoChallenge, &keys, &Method::POST, &uri, &h),
            None
        );
        let bare: Uri = "/hook".parse().expect("test uri");
        assert_eq!(
            before(Handshake::EchoChallenge, &keys, &Method::GET, &bare, &h),
            None
        );
        // Control characters and huge challenges are not echoed.
        let nasty: Uri = "/hook?challenge=a%0Ab".parse().expect("test uri");
        assert_eq!(
            before(Handshake::EchoChallenge, &keys, &Method::GET, &nasty, &h),
            None
        );
        let long: Uri = format!("/hook?challenge={}", "a".repeat(600))
            .parse()
            .expect("test uri");
        assert_eq!(
            before(Handshake::EchoChallenge, &keys, &Method::GET, &long, &h),
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
            &Method::GET,
            &bare,
            &okta,
        );
        assert_eq!(
            got.map(|r| r.body),
            Some(br#"{"verification":"c0ffee"}"#.to_vec())
        );

        // python3 -c "import hmac,hashlib,base64;print(base64.b64encode(hmac.new(b'consumer-secret',b'token123',hashlib.sha256).digest()).decode())"
        let crc: Uri = "/hook?crc_token=token123".parse().expect("test uri");
        let got = before(Handshake::TwitterCrc, &keys, &Method::GET, &crc, &h)
            .expect("a CRC is answered");
        let json: serde_json::Value = serde_json::from_slice(&got.body).expect("json");
        assert_eq!(
            json["response_token"],
            "sha256=5Xv1uxqeLsnOqHDm6c8H8Mmk7r6pb46WZtPOekAmPsQ="
        );
        assert_eq!(
            before(Handshake::TwitterCrc, &[], &Method::GET, &crc, &h),
            None
        );

        let head = before(Handshake::TrelloHead, &keys, &Method::HEAD, &bare, &h);
        assert_eq!(head.map(|r| r.body), Some(Vec::new()));
        assert_eq!(
            before(Handshake::TrelloHead, &keys, &Method::GET, &bare, &h),
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
}
