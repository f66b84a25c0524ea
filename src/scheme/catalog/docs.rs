//! Renders `docs/providers.md` from the catalog and checks the committed
//! file matches; `HOOKGATE_WRITE_DOCS=1 cargo test --lib scheme::catalog`
//! rewrites it.

use std::fmt::Write as _;

use super::super::{Algorithm, Encoding, SecretEncoding, TimestampFormat};
use super::{Loc, PRESETS, Preset, Sdk};

/// A provider whose scheme is code rather than a preset.
struct Coded {
    name: &'static str,
    provider: &'static str,
    headers: &'static str,
    signed: &'static str,
    algorithm: &'static str,
    tolerance: &'static str,
    id: &'static str,
    kind: &'static str,
    handshake: &'static str,
    vector: &'static str,
    sdk: Sdk,
    /// Whether `vector` was published (docs, SDK, standard) rather than
    /// computed by our own cross-check.
    published: bool,
}

const CODED: &[Coded] = &[
    Coded {
        name: "stripe",
        provider: "Stripe",
        headers: "`Stripe-Signature: t=…,v1=…[,v1=…]`",
        signed: "`{t}.{body}`",
        algorithm: "HMAC-SHA256, hex; secret `whsec_…` used as is",
        tolerance: "5m (default)",
        id: "body `/id`",
        kind: "body `/type`",
        handshake: "—",
        vector: "SDK test: stripe/stripe-dotnet src/StripeTests/Services/Events/EventUtilityTest.cs",
        sdk: Sdk::Checked("npm stripe 23.1.0"),
        published: true,
    },
    Coded {
        name: "github",
        provider: "GitHub",
        headers: "`X-Hub-Signature-256: sha256=…`",
        signed: "`{body}`",
        algorithm: "HMAC-SHA256, hex",
        tolerance: "— (no signed time)",
        id: "header `X-GitHub-Delivery`",
        kind: "header `X-GitHub-Event`",
        handshake: "—",
        vector: "docs: https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation",
        sdk: Sdk::Checked("npm @octokit/webhooks-methods 6.0.0"),
        published: true,
    },
    Coded {
        name: "shopify",
        provider: "Shopify",
        headers: "`X-Shopify-Hmac-Sha256` (or without `X-`)",
        signed: "`{body}`",
        algorithm: "HMAC-SHA256, base64",
        tolerance: "— (no signed time)",
        id: "header `X-Shopify-Webhook-Id`",
        kind: "header `X-Shopify-Topic`",
        handshake: "—",
        vector: "SDK test: Shopify/shopify-api-js packages/shopify-api/lib/webhooks/__tests__/validate.test.ts (secret from lib/__tests__/test-config.ts)",
        sdk: Sdk::Checked("npm @shopify/shopify-api 13.1.0 (verify; the SDK has no signer)"),
        published: true,
    },
    Coded {
        name: "slack",
        provider: "Slack",
        headers: "`X-Slack-Signature: v0=…`, `X-Slack-Request-Timestamp`",
        signed: "`v0:{timestamp}:{body}`",
        algorithm: "HMAC-SHA256, hex",
        tolerance: "5m (default)",
        id: "body `/event_id`, else SHA-256 of body",
        kind: "body `/event/type`, else `/type`",
        handshake: "signed `url_verification` POST → `{\"challenge\"}`",
        vector: "docs: https://api.slack.com/authentication/verifying-requests-from-slack",
        sdk: Sdk::Checked("PyPI slack_sdk 3.48.0"),
        published: true,
    },
    Coded {
        name: "standard",
        provider: "Standard Webhooks (webhook-* or svix-*)",
        headers: "`webhook-signature: v1,… [v1a,…]`, `webhook-timestamp`, `webhook-id`",
        signed: "`{id}.{timestamp}.{body}`",
        algorithm: "`v1`: HMAC-SHA256, base64, secret `whsec_` + base64; `v1a`: Ed25519, base64, public key `whpk_` + base64 in `secrets` or OKP keys of a JWK Set at `[source.keys] jwks_url` (both kinds in one list)",
        tolerance: "5m (default)",
        id: "header `webhook-id`",
        kind: "body `/type`",
        handshake: "—",
        vector: "shared: standard-webhooks/standard-webhooks libraries/go/webhook_test.go (v1); v1a: acidb/mobiscroll-connect-sdks sdks/ruby/spec/fixtures/webhook-vectors.json @ 3da3f497 (the standard publishes none) and RFC 8032 §7.1",
        sdk: Sdk::Checked(
            "npm standardwebhooks 1.1.1 (v1; the current releases, PyPI standardwebhooks 1.3.0 and npm 1.3.0, verify v1 only)",
        ),
        published: true,
    },
    Coded {
        name: "twilio",
        provider: "Twilio",
        headers: "`X-Twilio-Signature`",
        signed: "`{url}` + sorted form parameters `name` + `value` (needs `public_url`)",
        algorithm: "HMAC-SHA1, base64 (key: auth token)",
        tolerance: "— (no signed time)",
        id: "header `I-Twilio-Idempotency-Token`, else SHA-256 of body",
        kind: "—",
        handshake: "—",
        vector: "SDK test: twilio/twilio-python tests/unit/test_request_validator.py",
        sdk: Sdk::Checked("PyPI twilio 9.13.0"),
        published: true,
    },
    Coded {
        name: "sendgrid",
        provider: "SendGrid Event Webhook",
        headers: "`X-Twilio-Email-Event-Webhook-Signature`, `X-Twilio-Email-Event-Webhook-Timestamp`",
        signed: "`{timestamp}{body}`",
        algorithm: "ECDSA P-256 / SHA-256, DER base64; secret = verification key (SPKI base64 or PEM)",
        tolerance: "5m (default)",
        id: "SHA-256 of body (a batch)",
        kind: "—",
        handshake: "—",
        vector: "SDK test: sendgrid/sendgrid-python test/unit/test_eventwebhook.py",
        sdk: Sdk::Checked(
            "npm @sendgrid/eventwebhook 8.0.0 (verify, on a delivery signed with a key pair made for the check: hookgate holds no private key)",
        ),
        published: true,
    },
    Coded {
        name: "discord",
        provider: "Discord interactions",
        headers: "`X-Signature-Ed25519`, `X-Signature-Timestamp`",
        signed: "`{timestamp}{body}`",
        algorithm: "Ed25519, hex; secret = application public key (64 hex)",
        tolerance: "5m (default)",
        id: "body `/id`, else SHA-256 of body",
        kind: "body `/type` (number)",
        handshake: "signed PING (`type` 1) → `{\"type\":1}`",
        vector: "no published vector; signed with Python `cryptography` and the RFC 8032 test key (see discord.rs)",
        sdk: Sdk::Checked(
            "npm discord-interactions 4.4.0 (verify, on a delivery signed with a key pair made for the check: hookgate holds no private key)",
        ),
        published: false,
    },
    Coded {
        name: "metronome",
        provider: "Metronome",
        headers: "`Metronome-Webhook-Signature`, `X-Metronome-Date` (HTTP date; older senders: `Date`)",
        signed: "`{X-Metronome-Date}` (or `{Date}`) + newline + `{body}`; both present with different values is refused",
        algorithm: "HMAC-SHA256, hex",
        tolerance: "5m (default; Metronome's SDKs use 5m)",
        id: "body `/id`",
        kind: "body `/type`",
        handshake: "—",
        vector: "SDK test: Metronome-Industries/metronome-node tests/api-resources/webhooks.test.ts (`Date`); values from `@metronome/sdk` 3.10.0's signer (`X-Metronome-Date`)",
        sdk: Sdk::Checked("npm @metronome/sdk 3.10.0"),
        published: true,
    },
    Coded {
        name: "increase",
        provider: "[Increase](https://increase.com/documentation/webhooks)",
        headers: "`webhook-signature: v1,…[ v1,…]`, `webhook-timestamp`, `webhook-id`; older senders: `increase-webhook-signature: t=…,v1=…`",
        signed: "`{id}.{timestamp}.{body}`; older: `{t}.{body}` (`t` RFC 3339); both formats in one request is refused",
        algorithm: "HMAC-SHA256, base64 (older: hex); key: the secret's own bytes (not base64-decoded)",
        tolerance: "5m (default)",
        id: "body `/id`",
        kind: "body `/category`",
        handshake: "—",
        vector: "SDK test: Increase/increase-python tests/api_resources/test_webhooks.py (older format); values checked with npm `increase` 0.583.0 `events.unwrap` (current format)",
        sdk: Sdk::Checked("npm increase 0.583.0 (verify; the SDK has no signer)"),
        published: true,
    },
    Coded {
        name: "mailgun",
        provider: "Mailgun",
        headers: "— (body `/signature/{timestamp,token,signature}`)",
        signed: "`{timestamp}{token}` from the body; the event itself is not signed by Mailgun",
        algorithm: "HMAC-SHA256, hex (key: HTTP webhook signing key)",
        tolerance: "5m (default)",
        id: "body `/event-data/id`, else the token",
        kind: "body `/event-data/event`",
        handshake: "—",
        vector: "SDK test: mailgun/mailgun-php tests/Api/WebhookTest.php (testVerifyWebhookGood)",
        sdk: Sdk::None,
        published: true,
    },
    Coded {
        name: "messagebird",
        provider: "MessageBird (Bird)",
        headers: "`MessageBird-Signature-JWT` (a JWT)",
        signed: "JWT claims `url_hash` = SHA-256 of `{url}`, `payload_hash` = SHA-256 of `{body}` (needs `public_url`)",
        algorithm: "HMAC JWT (HS256, HS384, HS512); `iss` `MessageBird`; key: signing key",
        tolerance: "5m (default) around `nbf`",
        id: "SHA-256 of body (`jti` when empty)",
        kind: "body `/type`",
        handshake: "—",
        vector: "SDK test: messagebird/go-rest-api signature_jwt/testdata/reference.json (read by signature_jwt/signature_test.go)",
        sdk: Sdk::Checked("npm messagebird 4.0.1 (verify; the SDK has no signer)"),
        published: true,
    },
    Coded {
        name: "adyen",
        provider: "Adyen standard notifications (payments)",
        headers: "— (body `/notificationItems/*/NotificationRequestItem/additionalData/hmacSignature`)",
        signed: "each item's `pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success`; other fields are not signed by Adyen",
        algorithm: "HMAC-SHA256, base64; secret hex (HMAC key)",
        tolerance: "— (no signed time)",
        id: "`pspReference:eventCode:success` of a single item, else SHA-256 of body",
        kind: "`eventCode` of a single item",
        handshake: "—",
        vector: "SDK test: Adyen/adyen-python-api-library test/test_util.py (test_notification_request_item_hmac, test_webhooks_with_slashes with test/mocks/util/)",
        sdk: Sdk::Checked(
            "npm @adyen/api-library 32.1.0 (its signer; `hookgate sign` cannot print a body-carried signature)",
        ),
        published: true,
    },
    Coded {
        name: "plivo",
        provider: "Plivo Voice (signature V3)",
        headers: "`X-Plivo-Signature-V3: …[,…]`, `X-Plivo-Signature-V3-Nonce`",
        signed: "`{url}` without query + `?` + sorted query `k=v&…` + `.` + sorted form parameters `k` + `v` + `.` + nonce (needs `public_url`)",
        algorithm: "HMAC-SHA256, base64 (key: auth token)",
        tolerance: "— (no signed time)",
        id: "SHA-256 of body",
        kind: "form parameter `Event`",
        handshake: "—",
        vector: "SDK test: plivo/plivo-go utils_test.go (TestValidateSignatureV3Pass1, TestValidateSignatureV3Pass3)",
        sdk: Sdk::Checked("PyPI plivo 4.63.0"),
        published: true,
    },
    Coded {
        name: "sinch-voice",
        provider: "Sinch Voice and Verification callbacks",
        headers: "`Authorization: Application <key>:…`, `x-timestamp`, `Content-Type`",
        signed: "lines `POST`, base64 MD5 of `{body}`, `{Content-Type}`, `x-timestamp:{timestamp}`, path of `{url}` (needs `public_url`)",
        algorithm: "HMAC-SHA256, base64; secret base64 (application secret)",
        tolerance: "5m (default)",
        id: "SHA-256 of body",
        kind: "body `/event`",
        handshake: "—",
        vector: "docs: https://developers.sinch.com/docs/voice/api-reference/authentication/callback-signed-request (its example)",
        sdk: Sdk::Checked("npm @sinch/sdk-client 1.5.0 (its authorization helper, loaded by path)"),
        published: true,
    },
    Coded {
        name: "microsoft-graph",
        provider: "Microsoft Graph change notifications",
        headers: "— (body `/value/*/clientState`)",
        signed: "nothing: every item's `clientState` must be one of `secrets` (compared in constant time); the body is not signed",
        algorithm: "shared value (the subscription's `clientState`, at most 255 characters)",
        tolerance: "— (no signed time)",
        id: "SHA-256 of body",
        kind: "`changeType` (or `lifecycleEvent`) when every item agrees; not stamped",
        handshake: "`POST ?validationToken=` → token text",
        vector: "docs: clientState `secretClientValue` of the subscription examples in Microsoft Graph's docs (microsoftgraph/microsoft-graph-docs), in a notification shaped like its webhook delivery example (msgraph.rs)",
        sdk: Sdk::None,
        published: true,
    },
    Coded {
        name: "sns",
        provider: "AWS SNS (HTTP/S subscriptions)",
        headers: "— (body `Signature`, `SignatureVersion`, `SigningCertURL`)",
        signed: "`Name\\nValue\\n` of `Message`, `MessageId`, `Subject` (if any), `Timestamp`, `TopicArn`, `Type`; confirmations: `Message`, `MessageId`, `SubscribeURL`, `Timestamp`, `Token`, `TopicArn`, `Type`",
        algorithm: "RSA PKCS#1 v1.5, SHA1 (`SignatureVersion` 1) or SHA256 (2), base64; certificate fetched from `SigningCertURL` on `sns.<region>.amazonaws.com[.cn]` only",
        tolerance: "1h (SNS retries keep the publish time)",
        id: "body `MessageId`",
        kind: "body `Type`",
        handshake: "`SubscriptionConfirmation` verified, forwarded, and with `confirm_subscription` confirmed by hookgate; only topics in `topic_arns`",
        vector: "SDK test: aws/aws-sdk-java-v2 services/sns/src/test/resources/software/amazon/awssdk/services/sns/sample-message.json with unit-test-public-cert.pem (SignatureVersion 1, checked offline); version 2 signed with a test key against a local key server (tests/it/keys.rs)",
        sdk: Sdk::NotRun(
            "AWS's verifiers (npm sns-validator, aws-sdk-java-v2 SnsMessageManager) fetch the certificate from AWS hosts only; the SDK's own signed sample is the test vector",
        ),
        published: true,
    },
    Coded {
        name: "paypal",
        provider: "PayPal",
        headers: "`PAYPAL-TRANSMISSION-SIG`, `PAYPAL-TRANSMISSION-ID`, `PAYPAL-TRANSMISSION-TIME`, `PAYPAL-CERT-URL`, `PAYPAL-AUTH-ALGO`",
        signed: "`{transmission id}|{transmission time}|{webhook_id}|{CRC-32 of body, decimal}`",
        algorithm: "RSA PKCS#1 v1.5 SHA-256 (`SHA256withRSA`), base64; certificate fetched from `PAYPAL-CERT-URL` on PayPal's API hosts only",
        tolerance: "5m (default) around the transmission time",
        id: "body `/id`",
        kind: "body `/event_type`",
        handshake: "—",
        vector: "SDK test: paypal/PayPal-Java-SDK rest-api-sdk/src/test/java/com/paypal/base/ValidateCertTest.java (testValidEndpoint) with src/test/resources/clientCertTest.crt",
        sdk: Sdk::NotRun(
            "PayPal's current SDKs verify by calling PayPal's verify-webhook-signature API, which needs live credentials",
        ),
        published: true,
    },
    Coded {
        name: "google-oidc",
        provider: "Google-signed pushes (Pub/Sub push, Cloud Tasks, Eventarc)",
        headers: "`Authorization: Bearer <ID token>`",
        signed: "the token (RS256); the body is not signed",
        algorithm: "RS256 JWT; key by `kid` from Google's JWK Set; `iss` Google, `aud` = `audience`, `email` = `email` with `email_verified`",
        tolerance: "5m (default) clock skew around `iat` and `exp`",
        id: "body `/message/messageId`, else SHA-256 of body (unsigned: duplicates told by the body)",
        kind: "—",
        handshake: "—",
        vector: "no published vector verifies offline (Google's keys rotate); tokens signed with a test RSA key, as Google signs them (see google_oidc.rs, tests/it/keys.rs)",
        sdk: Sdk::NotRun(
            "google-auth-library verifyIdToken fetches Google's live keys, so a token signed for the check cannot pass it",
        ),
        published: false,
    },
    Coded {
        name: "gemini",
        provider: "[Google Gemini API](https://ai.google.dev/gemini-api/docs/webhooks) webhooks (per-request `webhook_config`)",
        headers: "`webhook-signature: v1a,…`, `webhook-timestamp`, `webhook-id`",
        signed: "`{id}.{timestamp}.{body}`",
        algorithm: "Ed25519 (Standard Webhooks `v1a`), base64; keys: the OKP keys of Google's JWK Set (`https://generativelanguage.googleapis.com/.well-known/jwks.json`), every one tried; no `secrets` needed (`whsec_` ones for project-level `v1` webhooks may be listed too)",
        tolerance: "5m (default; Google's docs: 5 minutes)",
        id: "header `webhook-id`",
        kind: "body `/type`",
        handshake: "—",
        vector: "no published Gemini delivery; Google's docs show RS256 JWTs while live deliveries carry v1a (googleapis/python-genai issue 2927); checked with the standard's v1a vectors and keys served as a JWK Set by a local server (tests/it/keys.rs)",
        sdk: Sdk::NotRun(
            "google-genai 3.6.1 ships no webhook verifier, and standardwebhooks 1.3.0 skips v1a",
        ),
        published: false,
    },
];

fn loc(l: Option<Loc>) -> String {
    match l {
        None => "—".to_owned(),
        Some(Loc::Header(h)) => format!("header `{h}`"),
        Some(Loc::Pointer(p)) => format!("body `{p}`"),
    }
}

fn headers(p: &Preset) -> String {
    let value = |h: &str| -> String {
        let prefix = p.signature_prefix.unwrap_or("");
        match (p.signature_key, p.timestamp_key, p.signature_delimiter) {
            (Some(k), Some(t), Some(d)) => format!("`{h}: {t}=…{d}{k}={prefix}…`"),
            (Some(k), None, Some(d)) => format!("`{h}: {k}={prefix}…[{d}…]`"),
            (None, _, Some(d)) => format!("`{h}: {prefix}…[{d}{prefix}…]`"),
            _ if p.algorithm == Algorithm::Token => format!("`{h}: {prefix}<secret>`"),
            _ => format!("`{h}: {prefix}…`"),
        }
    };
    let mut parts: Vec<String> = p.signature_headers.iter().map(|h| value(h)).collect();
    if let Some(t) = p.timestamp_header {
        parts.push(format!("`{t}`"));
    }
    parts.join(", ")
}

fn algorithm(p: &Preset) -> String {
    let mac = match p.algorithm {
        Algorithm::Sha1 => "HMAC-SHA1",
        Algorithm::Sha256 => "HMAC-SHA256",
        Algorithm::Sha512 => "HMAC-SHA512",
        Algorithm::Token => {
            return "shared token, constant-time compare (body not signed)".to_owned();
        }
    };
    let enc = match p.encoding {
        Encoding::Hex => "hex",
        Encoding::Base64 => "base64",
        Encoding::Base64Url => "base64url",
    };
    let secret = match (p.secret_encoding, p.secret_prefix) {
        (SecretEncoding::Raw, _) => String::new(),
        (SecretEncoding::Base64, Some(pre)) => format!("; secret `{pre}` + base64"),
        (SecretEncoding::Base64, None) => "; secret base64".to_owned(),
        (SecretEncoding::Hex, _) => "; secret hex".to_owned(),
    };
    format!("{mac}, {enc}{secret}")
}

fn signed(p: &Preset) -> String {
    if p.algorithm == Algorithm::Token {
        return "— (the header is the secret)".to_owned();
    }
    let fmt = match p.timestamp_format {
        TimestampFormat::Seconds => "",
        TimestampFormat::Milliseconds => " (timestamp in ms)",
        TimestampFormat::Rfc3339 => " (timestamp RFC 3339)",
    };
    let url = if p.signed_payload.contains("{url}") {
        " (needs `public_url`)"
    } else {
        ""
    };
    format!("`{}`{fmt}{url}", p.signed_payload)
}

fn tolerance(p: &Preset) -> String {
    if p.timestamp_header.is_none() && p.timestamp_key.is_none() {
        return "— (no signed time)".to_owned();
    }
    match p.tolerance_secs {
        Some(s) if s % 60 == 0 => format!("{}m (provider docs)", s / 60),
        Some(s) => format!("{s}s (provider docs)"),
        None => "5m (default)".to_owned(),
    }
}

fn id(p: &Preset) -> String {
    match p.event_id {
        None => "SHA-256 of body".to_owned(),
        some => loc(some),
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

pub(super) fn render() -> String {
    let mut out = String::new();
    let published = CODED.iter().filter(|c| c.published).count()
        + PRESETS.iter().filter(|p| p.vector.is_published()).count();
    let total = CODED.len() + PRESETS.len();
    let _ = writeln!(
        out,
        "# Providers\n\n\
         {total} providers; {published} with published vectors; {} cross-checked only.\n",
        total - published
    );
    out.push_str(
        "<!-- Generated from src/scheme/catalog.rs by `HOOKGATE_WRITE_DOCS=1 cargo test --lib \
         scheme::catalog`; do not edit by hand. -->\n\n\
         `scheme = \"<name>\"` in a `[[source]]` selects one of these senders. Every one takes \
         several `secrets` (rotation), dedupes on its event id and forwards only verified, \
         fresh requests. Header names are case-insensitive. Where a scheme signs the URL the \
         sender posts to, set `public_url` on the source to that URL exactly as configured at \
         the sender. Public-key schemes take the provider's public key in `secrets`, except \
         `sns`, `paypal`, `google-oidc` and `gemini`, which take none: hookgate fetches the \
         provider's key itself (docs/configuration.md). `hookgate sign` cannot sign for a \
         source that holds only public keys.\n\n\
         The last column says where each known-answer test comes from: the provider's \
         documentation, its official SDK's tests, a shared standard's published vector, or — \
         where no published vector was found — an independent computation of the \
         documented recipe (`python3 docs/crosscheck.py`, Python's `hmac`). A published vector \
         is copied into the test as published; every vector is also checked against a tampered \
         body, a wrong secret and, where a time is signed, a stale timestamp.\n\n\
         The \"SDK checked\" column names the provider's current official SDK release that \
         `python3 docs/sdkcheck.py` ran against hookgate: the SDK's own verify accepts what \
         `hookgate sign` prints, and, where the SDK has a signer, its delivery sent through a \
         running hookgate is forwarded to the app. \"no SDK\": no official SDK on npm or PyPI \
         ships a webhook verifier (for example mailgun.js 14.0.1, @lemonsqueezy/lemonsqueezy.js \
         4.0.0, nylas 8.4.0 and xero-node 20.0.0 have none). `hookgate sign` prints every header \
         a provider's verifiers read; where that is an identifier shown beside the secret \
         (Worldline `X-GCS-KeyId`, Pusher `X-Pusher-Key`) or the shop and topic of a Shopify \
         delivery, it prints a stand-in (`hookgate-sign`), since hookgate does not read them.\n\n",
    );
    let _ = writeln!(
        out,
        "{} built in as code, {} catalog presets.\n",
        CODED.len(),
        PRESETS.len(),
    );
    out.push_str(
        "| scheme | provider | headers | signed bytes | algorithm | tolerance | event id | event type | handshake | test vector | SDK checked |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in CODED {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            c.provider,
            cell(c.headers),
            cell(c.signed),
            cell(c.algorithm),
            c.tolerance,
            cell(c.id),
            cell(c.kind),
            cell(c.handshake),
            cell(c.vector),
            cell(&c.sdk.describe())
        );
    }
    for p in PRESETS {
        let _ = writeln!(
            out,
            "| `{}` | [{}]({}) | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.name,
            p.provider,
            p.docs,
            cell(&headers(p)),
            cell(&signed(p)),
            cell(&algorithm(p)),
            tolerance(p),
            cell(&id(p)),
            cell(&loc(p.event_type)),
            cell(p.handshake.map_or("—", |h| h.describe())),
            cell(&p.vector.describe()),
            cell(&p.sdk.describe())
        );
    }
    out.push_str(NOTES);
    out
}

const NOTES: &str = "\n## Handshakes\n\n\
Some senders check an endpoint before (or while) delivering. hookgate answers these itself:\n\n\
- **Slack** `url_verification`, **Zoom** `endpoint.url_validation`, **Twitch** \
`webhook_callback_verification` and **Discord** PING arrive as signed POSTs: they are verified \
like any event, then answered (not forwarded). Zoom's `encryptedToken` is the HMAC-SHA256 of \
`plainToken` under the secret that verified the request.\n\
- **Dropbox** and **Nylas** (`GET ?challenge=`), **Okta** (`GET` with \
`X-Okta-Verification-Challenge`), **X** (`GET ?crc_token=`, answered with the first secret) and \
**Trello** (`HEAD`) are unsigned checks answered before the POST-only rule. Echoed challenges are \
limited to 512 printable characters and sent as text with `X-Content-Type-Options: nosniff`.\n\
- **Meta** (`GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`) is answered with the \
challenge only when `hub.verify_token` equals the source's `verify_token` (a secret entry of its \
own, e.g. `verify_token = { env = \"META_VERIFY_TOKEN\" }`, never one of `secrets`: it travels in \
URLs, the app secret must not), compared in constant time. A wrong token is `400 \
invalid_signature`, a missing one `400 missing_signature`, a challenge that cannot be echoed `400 \
malformed_signature`; all are counted like signature failures and none reaches the app, in \
`observe` mode too. Without `verify_token` the check is not answered (`405`).\n\
- **Microsoft Graph** (`POST ?validationToken=…`, when a subscription is created and for its \
lifecycle URL) is answered `200` with the token, URL-decoded, as `text/plain` with `nosniff`, \
without reading the body. Notifications are then checked by their `clientState` (every item of \
`/value`, any of `secrets`); a mismatch is `400 invalid_signature`.\n\
- **Asana** opens a webhook with an unsigned POST carrying `X-Hook-Secret`; hookgate answers `200` \
with the same header and logs that a handshake was answered, never the value. Asana hands the same \
secret to whoever created the webhook: the `X-Hook-Secret` field of its answer to `POST \
/api/1.0/webhooks`. Put that value in the source's `secrets` (a `{ file = … }` entry is reloaded \
when the file changes; any placeholder will do until then). Deliveries refused in between are \
retried by Asana. Since anyone may send such a POST, answering it gives nothing away: the secret \
is the caller's own, nothing is forwarded, and events are accepted only under a configured secret.\n\
- Answers are counted as outcome `handshake`.\n\n\
## Not yet\n\n\
- **Notion** sends its signing secret (`verification_token`) in the body of its first, unsigned \
request, for the operator to paste back into Notion; hookgate would have to log it, so Notion is \
not in the catalog.\n\
- **Contentful** signs a canonical request (method, path, chosen headers); **Linear** puts its timestamp in the body; **Plaid** sends a JWT whose key must be fetched; \
**Netlify** sends a JWS. These need code not written yet.\n\
- **Mailgun** signs only the timestamp and token in the body's `signature` block, not the event: \
hookgate checks that block and the window and dedupes on the event id, but cannot detect an altered \
`event-data`. Only JSON webhooks are read (not the legacy form-encoded ones).\n\
- **Adyen**'s standard (payment) notifications sign eight fields of each item, not the body: \
hookgate checks every item's signature and dedupes on `pspReference:eventCode:success`, but cannot \
detect an altered `additionalData`, `reason` or `eventDate`, and no time is signed. Its platform \
webhooks (whole body signed) are `adyen-platform`.\n\
- **Postmark** and others that use HTTP Basic auth have no signature; a generic source with \
`algorithm = \"token\"`, `signature_header = \"Authorization\"` and `signature_prefix = \"Basic \"` \
checks the base64 credentials.\n\
- **Twilio** JSON bodies (signed through a `bodySHA256` query parameter) are not supported: their \
URL changes per request.\n\
- **Xero**'s intent-to-receive check expects 401 for a bad signature; hookgate answers 400.\n\
- **Linear** signs only the body; its SDK also holds the body's `webhookTimestamp` to a minute, \
which hookgate does not read (replays inside `nonce_ttl` are duplicates by the body's digest). \
**Buildkite**'s plain `X-Buildkite-Token` mode is a token: use a generic source with \
`algorithm = \"token\"`; `buildkite` checks `X-Buildkite-Signature`.\n\
- **Telegram**, **Hugging Face**, **Vapi** and **Xendit** send a shared token, not a MAC: the body \
is not covered. **Microsoft Graph**'s `clientState` is the same kind of proof, carried in the body.\n\
- **Polar** keys Standard Webhooks with the secret's own bytes (as its SDK does); the other \
Standard Webhooks senders (`liveblocks`, `dodopayments`, `yoco`, `stytch`) take `whsec_` + base64.\n\
- **EasyPost** normalizes its webhook secret to Unicode NFKD before signing; a secret with accented \
letters must be written in that decomposed form (ASCII secrets are unaffected). Its newer \
`X-Hmac-Signature-V2` (timestamp and path signed) is not read; `easypost` checks `X-Hmac-Signature`.\n\
- **Worldline** Connect checks a new endpoint with a `GET` carrying \
`X-GCS-Webhooks-Endpoint-Verification`; hookgate answers it (200, the header's value as a \
`text/plain` body) without involving the app. `X-GCS-KeyId` is not read: every configured \
secret is tried.\n\
- **Metronome** moved its signed date from `Date` to `X-Metronome-Date` (`@metronome/sdk` \
3.5.0); both are accepted. A request with both, holding different values, is refused \
(`malformed_signature`): if a proxy between Metronome and hookgate rewrites `Date`, strip it \
there or upgrade the sender.\n\
- **Increase** moved to Standard Webhooks headers keyed with the raw secret (npm `increase` \
0.405.0, PyPI 0.552.0); the older `Increase-Webhook-Signature` is still accepted, a request \
carrying both formats is refused (`malformed_signature`), and `hookgate sign` prints the new \
format.\n\
- **MessageBird** signs the full URL it requests: callbacks whose URL carries per-request query \
parameters (SMS status reports sent as `GET`) cannot match a fixed `public_url` and are refused.\n\
- **Plivo** messaging and Verify callbacks carry only the V2 signature (URL and nonce, not the \
parameters), which hookgate does not accept; `plivo` checks the V3 signature of Voice callbacks.\n\
- **Sinch** Conversation callbacks name their algorithm in `x-sinch-webhook-signature-algorithm`; \
`sinch` checks HMAC-SHA256 (the default). Voice and Verification callbacks sign differently \
(an `Authorization: Application …` header): use `sinch-voice`, whose `public_url` must be the \
callback URL configured at Sinch (its path is signed). The application key in that header is \
not compared; the signature proves the secret.\n\
- **AWS SNS** raw message delivery sends the bare message with no signature: hookgate cannot \
verify it (`missing_signature`); keep raw delivery off for an HTTP/S subscription behind \
hookgate. `UnsubscribeConfirmation` is verified and forwarded; hookgate never unsubscribes.\n\
- **PayPal** binds the body to its signature only by CRC-32, which is not a cryptographic \
hash: whoever sees one delivery can make another body with the same CRC-32 and send it with \
the same signed headers until the transmission time leaves the window. hookgate cannot detect \
this; keep the window short.\n\
- **Google-signed pushes**: the token signs the sender, not the body, and may be reused until \
it expires (at most an hour); the body of a request carrying a stolen token is not checked. \
Duplicates are told by the body's digest.\n";

#[test]
fn providers_md_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/providers.md");
    let rendered = render();
    if std::env::var_os("HOOKGATE_WRITE_DOCS").is_some() {
        std::fs::write(path, &rendered).expect("docs/providers.md is writable");
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/providers.md is out of date: run HOOKGATE_WRITE_DOCS=1 cargo test --lib scheme::catalog"
    );
}

#[test]
fn at_least_one_hundred_twenty_providers() {
    assert!(CODED.len() + PRESETS.len() >= 120);
}

#[test]
fn every_scheme_with_code_of_its_own_has_a_row() {
    let coded = super::super::Scheme::names().filter(|name| super::find(name).is_none());
    for name in coded {
        assert!(
            CODED.iter().any(|c| c.name == name),
            "{name} has no row in docs/providers.md"
        );
    }
}
