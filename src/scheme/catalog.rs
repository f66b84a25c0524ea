//! The provider catalog: real senders described as rows of one declarative
//! table, each a configuration of the generic engine (`generic.rs`). Senders
//! whose check needs code (form parameters, public keys) are a type each
//! behind [`Provider`], in a file of their own; the docs table lists them
//! too (`catalog/docs.rs`), so it is complete.
//!
//! Every row names where its test vector comes from; `docs/providers.md` is
//! rendered from this file by a test (`HOOKGATE_WRITE_DOCS=1` rewrites it),
//! so the page cannot drift from the code.

use std::time::Duration;

use http::HeaderName;

use super::provider::{Delivery, Provider, Signing};
use super::{
    Algorithm, Encoding, Error, Generic, Handshake, Labels, Locator, SecretEncoding,
    TimestampFormat, Verified,
};
use crate::keyfetch::KeyPolicy;
use crate::secret::Secret;

/// Where a value comes from in a preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    Header(&'static str),
    Pointer(&'static str),
}

/// Where a provider's known-answer test comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vector {
    /// An example published in the provider's documentation.
    Docs(&'static str),
    /// A fixture in the provider's official SDK tests (repository and path).
    Sdk(&'static str),
    /// The provider signs with a shared standard; its published vector is used.
    Shared(&'static str),
    /// No published vector found: the expected values were computed by an
    /// independent implementation (`docs/crosscheck.py`, Python's `hmac`).
    CrossChecked,
}

impl Vector {
    pub fn describe(self) -> String {
        match self {
            Vector::Docs(url) => format!("docs: {url}"),
            Vector::Sdk(path) => format!("SDK test: {path}"),
            Vector::Shared(what) => format!("shared: {what}"),
            Vector::CrossChecked => {
                "cross-checked (no published vector found); `python3 docs/crosscheck.py`".to_owned()
            }
        }
    }

    /// Whether the vector was published by someone other than us.
    pub fn is_published(self) -> bool {
        !matches!(self, Vector::CrossChecked)
    }
}

/// The provider's official SDK, as `docs/sdkcheck.py` checks it against
/// hookgate: the SDK's verify on what `hookgate sign` prints and, where the
/// SDK has a signer, its deliveries sent through a running hookgate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// The packages and versions the check passed with (`npm pkg 1.2.3`,
    /// `PyPI pkg 4.5.6`).
    Checked(&'static str),
    /// No official SDK on npm or PyPI ships a webhook verifier.
    None,
    /// An official SDK has a verifier, but the check cannot run it: why.
    NotRun(&'static str),
}

impl Sdk {
    pub fn describe(self) -> String {
        match self {
            Sdk::Checked(what) => what.to_owned(),
            Sdk::None => "no SDK".to_owned(),
            Sdk::NotRun(why) => format!("not run: {why}"),
        }
    }
}

/// One catalog row: a provider described for the generic engine.
#[derive(Debug, PartialEq, Eq)]
pub struct Preset {
    /// The `scheme = "…"` word.
    pub name: &'static str,
    /// The provider as people call it.
    pub provider: &'static str,
    /// Signature headers, lowercase; the first is the one reported missing.
    pub signature_headers: &'static [&'static str],
    pub signature_prefix: Option<&'static str>,
    pub signature_delimiter: Option<&'static str>,
    pub signature_key: Option<&'static str>,
    pub encoding: Encoding,
    pub algorithm: Algorithm,
    pub signed_payload: &'static str,
    pub timestamp_header: Option<&'static str>,
    pub timestamp_key: Option<&'static str>,
    pub timestamp_format: TimestampFormat,
    pub secret_encoding: SecretEncoding,
    pub secret_prefix: Option<&'static str>,
    pub event_id: Option<Loc>,
    pub event_type: Option<Loc>,
    /// The replay window the provider documents; `None` = hookgate's default.
    pub tolerance_secs: Option<u64>,
    pub handshake: Option<Handshake>,
    /// Headers with a fixed value that the provider sends with every
    /// delivery and its own verifiers read (Box's signature version and
    /// algorithm); hookgate does not need them, `sign` prints them so its
    /// output is a complete delivery.
    pub sends: &'static [(&'static str, &'static str)],
    /// The official SDK checked against this row.
    pub sdk: Sdk,
    /// The provider's page describing the scheme.
    pub docs: &'static str,
    pub vector: Vector,
}

/// A body-signing HMAC-SHA256 sender with everything else at its default.
const fn hmac(
    name: &'static str,
    provider: &'static str,
    signature_headers: &'static [&'static str],
    encoding: Encoding,
    docs: &'static str,
) -> Preset {
    Preset {
        name,
        provider,
        signature_headers,
        signature_prefix: None,
        signature_delimiter: None,
        signature_key: None,
        encoding,
        algorithm: Algorithm::Sha256,
        signed_payload: "{body}",
        timestamp_header: None,
        timestamp_key: None,
        timestamp_format: TimestampFormat::Seconds,
        secret_encoding: SecretEncoding::Raw,
        secret_prefix: None,
        event_id: None,
        event_type: None,
        tolerance_secs: None,
        handshake: None,
        sends: &[],
        sdk: Sdk::None,
        docs,
        vector: Vector::CrossChecked,
    }
}

/// A sender that puts the shared secret itself in a header.
const fn token(
    name: &'static str,
    provider: &'static str,
    header: &'static [&'static str],
    docs: &'static str,
) -> Preset {
    Preset {
        algorithm: Algorithm::Token,
        signed_payload: "",
        ..hmac(name, provider, header, Encoding::Hex, docs)
    }
}

/// The Standard Webhooks layout (`v1,<base64>` entries, `whsec_` secrets)
/// under the given header family.
const fn standard_like(
    name: &'static str,
    provider: &'static str,
    signature: &'static [&'static str],
    timestamp: &'static str,
    id: &'static str,
    docs: &'static str,
) -> Preset {
    Preset {
        signature_prefix: Some("v1,"),
        signature_delimiter: Some(" "),
        signed_payload: "{id}.{timestamp}.{body}",
        timestamp_header: Some(timestamp),
        secret_encoding: SecretEncoding::Base64,
        secret_prefix: Some("whsec_"),
        event_id: Some(Loc::Header(id)),
        event_type: Some(Loc::Pointer("/type")),
        tolerance_secs: Some(300),
        ..hmac(name, provider, signature, Encoding::Base64, docs)
    }
}

/// A Stripe-style `t=…,v1=…` list over `{t}.{body}`, hex.
const fn t_v1(
    name: &'static str,
    provider: &'static str,
    header: &'static [&'static str],
    docs: &'static str,
) -> Preset {
    Preset {
        signature_delimiter: Some(","),
        signature_key: Some("v1"),
        timestamp_key: Some("t"),
        signed_payload: "{timestamp}.{body}",
        ..hmac(name, provider, header, Encoding::Hex, docs)
    }
}

use Encoding::{Base64, Base64Url, Hex};
use Loc::{Header as H, Pointer as P};

/// What `sign` prints where the provider sends an identifier beside the
/// signature (Worldline's key id, Pusher's app key): hookgate tries every
/// secret and does not read it, so the real value is not in its config; a
/// verifier that looks its secret up by this identifier must be told it.
pub const SIGN_KEY_ID: &str = "hookgate-sign";

const STANDARD_SPEC: &str = "Standard Webhooks spec vector, standard-webhooks/standard-webhooks libraries/go/webhook_test.go";

/// Every catalog preset, in docs order.
pub static PRESETS: &[Preset] = &[
    // ---- Published vectors: provider docs or official SDK tests ----
    Preset {
        sdk: Sdk::Checked("npm @paddle/paddle-node-sdk 3.10.0 (verify; the SDK has no signer)"),
        signature_delimiter: Some(";"),
        signature_key: Some("h1"),
        timestamp_key: Some("ts"),
        signed_payload: "{timestamp}:{body}",
        event_id: Some(P("/event_id")),
        event_type: Some(P("/event_type")),
        tolerance_secs: Some(5),
        vector: Vector::Sdk("PaddleHQ/paddle-python-sdk tests/Unit/Notification/test_Verifier.py"),
        ..hmac(
            "paddle",
            "Paddle Billing",
            &["paddle-signature"],
            Hex,
            "https://developer.paddle.com/webhooks/signature-verification",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @mux/mux-node 15.3.0 (verify; the SDK has no signer)"),
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        tolerance_secs: Some(300),
        vector: Vector::Sdk("muxinc/mux-node-sdk tests/api-resources/webhooks.test.ts"),
        ..t_v1(
            "mux",
            "Mux",
            &["mux-signature"],
            "https://docs.mux.com/core/verify-webhook-signatures",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @hubspot/api-client 13.5.0"),
        signed_payload: "POST{url}{body}{timestamp}",
        timestamp_header: Some("x-hubspot-request-timestamp"),
        timestamp_format: TimestampFormat::Milliseconds,
        tolerance_secs: Some(300),
        vector: Vector::Sdk("HubSpot/hubspot-api-python tests/spec/utils/test_signature.py"),
        ..hmac(
            "hubspot",
            "HubSpot (signature v3)",
            &["x-hubspot-signature-v3"],
            Base64,
            "https://developers.hubspot.com/docs/api/webhooks/validating-requests",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm square 46.0.0 (verify; the SDK has no signer)"),
        signed_payload: "{url}{body}",
        event_id: Some(P("/event_id")),
        event_type: Some(P("/type")),
        vector: Vector::Sdk("square/square-python-sdk tests/utilities/test_webhooks_helper.py"),
        ..hmac(
            "square",
            "Square",
            &["x-square-hmacsha256-signature"],
            Base64,
            "https://developer.squareup.com/docs/webhooks/step3validate",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm box-typescript-sdk-gen 1.19.1"),
        signed_payload: "{body}{timestamp}",
        timestamp_header: Some("box-delivery-timestamp"),
        timestamp_format: TimestampFormat::Rfc3339,
        event_id: Some(H("box-delivery-id")),
        event_type: Some(P("/trigger")),
        tolerance_secs: Some(600),
        sends: &[
            ("box-signature-version", "1"),
            ("box-signature-algorithm", "HmacSHA256"),
        ],
        vector: Vector::Sdk(
            "box/box-python-sdk test/unit/object/test_webhook.py (test_validate_message)",
        ),
        ..hmac(
            "box",
            "Box",
            &["box-signature-primary", "box-signature-secondary"],
            Base64,
            "https://developer.box.com/guides/webhooks/v2/signatures-v2/",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm coinbase-commerce-node 1.0.4 (verify; the SDK has no signer)"),
        event_id: Some(P("/event/id")),
        event_type: Some(P("/event/type")),
        vector: Vector::Sdk("coinbase/coinbase-commerce-node test/testWebhook.spec.js"),
        ..hmac(
            "coinbase-commerce",
            "Coinbase Commerce",
            &["x-cc-webhook-signature"],
            Hex,
            "https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm razorpay 2.9.8 (verify; the SDK has no signer)"),
        event_id: Some(H("x-razorpay-event-id")),
        event_type: Some(P("/event")),
        vector: Vector::Sdk(
            "razorpay/razorpay-python tests/test_client_utility.py with tests/mocks/fake_payment_authorized_webhook.json",
        ),
        ..hmac(
            "razorpay",
            "Razorpay",
            &["x-razorpay-signature"],
            Hex,
            "https://razorpay.com/docs/webhooks/validate-test/",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm gocardless-nodejs 10.1.2 (verify; the SDK has no signer)"),
        vector: Vector::Sdk("gocardless/gocardless-pro-ruby spec/webhook_spec.rb"),
        ..hmac(
            "gocardless",
            "GoCardless",
            &["webhook-signature"],
            Hex,
            "https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @sanity/webhook 4.0.4"),
        encoding: Base64Url,
        timestamp_format: TimestampFormat::Milliseconds,
        vector: Vector::Sdk("sanity-io/webhook-toolkit test/signature.test.ts"),
        ..t_v1(
            "sanity",
            "Sanity (GROQ webhooks)",
            &["sanity-webhook-signature"],
            "https://www.sanity.io/docs/webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm orb-billing 6.11.0 (verify; the SDK has no signer)"),
        signature_prefix: Some("v1="),
        signature_delimiter: Some(" "),
        signed_payload: "v1:{timestamp}:{body}",
        timestamp_header: Some("x-orb-timestamp"),
        timestamp_format: TimestampFormat::Rfc3339,
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        tolerance_secs: Some(300),
        vector: Vector::Sdk("orbcorp/orb-python tests/api_resources/test_webhooks.py"),
        ..hmac(
            "orb",
            "Orb",
            &["x-orb-signature"],
            Hex,
            "https://docs.withorb.com/guides/integrations-and-exports/webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm lithic 0.145.0 (verify; the SDK has no signer)"),
        event_type: Some(P("/event_type")),
        vector: Vector::Sdk("lithic-com/lithic-python tests/api_resources/test_webhooks.py"),
        ..standard_like(
            "lithic",
            "Lithic",
            &["webhook-signature"],
            "webhook-timestamp",
            "webhook-id",
            "https://docs.lithic.com/docs/events-api",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm modern-treasury 3.3.0"),
        event_type: Some(P("/event")),
        vector: Vector::Sdk(
            "Modern-Treasury/modern-treasury-python tests/api_resources/test_webhooks.py",
        ),
        ..hmac(
            "modern-treasury",
            "Modern Treasury",
            &["x-signature"],
            Hex,
            "https://docs.moderntreasury.com/platform/reference/verifying-webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @tryfinch/finch-api 10.7.0 (verify; the SDK has no signer)"),
        secret_prefix: None,
        vector: Vector::Sdk("Finch-API/finch-api-python tests/api_resources/test_webhooks.py"),
        ..standard_like(
            "finch",
            "Finch",
            &["finch-signature"],
            "finch-timestamp",
            "finch-event-id",
            "https://developer.tryfinch.com/developer-resources/Webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @onfido/api 6.2.0 (verify; the SDK has no signer)"),
        vector: Vector::Sdk(
            "onfido/onfido-python tests/test_classic_webhook_event_verification.py",
        ),
        event_type: Some(P("/payload/action")),
        ..hmac(
            "onfido",
            "Onfido (Entrust identity verification)",
            &["x-sha2-signature"],
            Hex,
            "https://documentation.identity.entrust.com/api/manual-webhook-signature-verification/",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @adyen/api-library 32.1.0"),
        secret_encoding: SecretEncoding::Hex,
        event_type: Some(P("/type")),
        vector: Vector::Sdk(
            "Adyen/adyen-python-api-library test/test_util.py (test_is_valid_hmac_payload)",
        ),
        ..hmac(
            "adyen-platform",
            "Adyen platform webhooks (Balance Platform, Management API)",
            &["hmacsignature"],
            Base64,
            "https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @line/bot-sdk 11.0.0 (verify; the SDK has no signer)"),
        vector: Vector::Sdk("line/line-bot-sdk-python tests/test_signature.py"),
        ..hmac(
            "line",
            "LINE Messaging API",
            &["x-line-signature"],
            Base64,
            "https://developers.line.biz/en/docs/messaging-api/verify-webhook-signature/",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm openai 6.49.0 (verify; the SDK has no signer)"),
        vector: Vector::Sdk("openai/openai-node tests/api-resources/webhooks.test.ts"),
        ..standard_like(
            "openai",
            "OpenAI",
            &["webhook-signature"],
            "webhook-timestamp",
            "webhook-id",
            "https://platform.openai.com/docs/guides/webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm replicate 1.4.0 (verify; the SDK has no signer)"),
        event_type: None,
        vector: Vector::Sdk(
            "replicate/replicate-python tests/test_webhooks.py (test_get_webhook_secret)",
        ),
        ..standard_like(
            "replicate",
            "Replicate",
            &["webhook-signature"],
            "webhook-timestamp",
            "webhook-id",
            "https://replicate.com/docs/topics/webhooks/verify-webhook",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @workos-inc/node 8.13.0"),
        timestamp_format: TimestampFormat::Milliseconds,
        event_id: Some(P("/id")),
        event_type: Some(P("/event")),
        tolerance_secs: Some(180),
        vector: Vector::Sdk("workos/workos-python tests/test_webhooks.py"),
        ..t_v1(
            "workos",
            "WorkOS",
            &["workos-signature"],
            "https://workos.com/docs/sso/webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @easypost/api 8.9.0 (verify; the SDK has no signer)"),
        signature_prefix: Some("hmac-sha256-hex="),
        event_id: Some(P("/id")),
        event_type: Some(P("/description")),
        vector: Vector::Sdk(
            "EasyPost/easypost-go tests/webhook_test.go (TestValidateWebhook) with tests/fixture_test.go (EventBody)",
        ),
        ..hmac(
            "easypost",
            "EasyPost",
            &["x-hmac-signature"],
            Hex,
            "https://support.easypost.com/hc/en-us/articles/39826034964237-Webhook-HMAC-Validation",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @sinch/sdk-client 1.5.0 (its authorization helper, loaded by path)"),
        signed_payload: "{body}.{header:x-sinch-webhook-signature-nonce}.{timestamp}",
        timestamp_header: Some("x-sinch-webhook-signature-timestamp"),
        sends: &[("x-sinch-webhook-signature-algorithm", "HmacSHA256")],
        vector: Vector::Sdk(
            "sinch/sinch-sdk-dotnet tests/Sinch.Tests/Conversation/WebhooksTests.cs (ValidateRequest)",
        ),
        ..hmac(
            "sinch",
            "Sinch Conversation API",
            &["x-sinch-webhook-signature"],
            Base64,
            "https://developers.sinch.com/docs/conversation/",
        )
    },
    Preset {
        sdk: Sdk::Checked(
            "npm @sinch/sdk-client 1.5.0 (verify; its authorization helper, loaded by path)",
        ),
        algorithm: Algorithm::Sha1,
        event_id: Some(P("/eventId")),
        event_type: Some(P("/eventType")),
        vector: Vector::Sdk(
            "sinch/sinch-sdk-node packages/sdk-client/tests/utils/authorization.helper.test.ts",
        ),
        ..hmac(
            "sinch-numbers",
            "Sinch Numbers API callbacks",
            &["x-sinch-signature"],
            Hex,
            "https://developers.sinch.com/docs/numbers/api-reference/imported-hosting/tag/Imported-Numbers-and-Hosting-Orders-Callbacks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm connect-sdk-nodejs 5.2.0 (verify; the SDK has no signer)"),
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        sends: &[("x-gcs-keyid", SIGN_KEY_ID)],
        handshake: Some(Handshake::WorldlineEndpointVerification),
        vector: Vector::Sdk(
            "Ingenico-ePayments/connect-sdk-php tests/Ingenico/Connect/Sdk/Webhooks/WebhooksHelperTest.php (testUnmarshalBytesSuccess)",
        ),
        ..hmac(
            "worldline",
            "Worldline Connect / Direct (formerly Ingenico ePayments)",
            &["x-gcs-signature"],
            Base64,
            "https://docs.connect.worldline-solutions.com/documentation/webhooks/",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm viber-bot 1.0.18 (verify; the SDK has no signer)"),
        event_type: Some(P("/event")),
        vector: Vector::Sdk("Viber/viber-bot-python tests/api/test_api.py (test_verify_signature)"),
        ..hmac(
            "viber",
            "Viber bots",
            &["x-viber-content-signature"],
            Hex,
            "https://creators.viber.com/docs/bots-api/getting-started/authentication",
        )
    },
    // ---- Shared standards: the standard's published vector ----
    Preset {
        sdk: Sdk::Checked("npm @octokit/webhooks-methods 6.0.0"),
        signature_prefix: Some("sha256="),
        event_id: Some(H("x-github-delivery")),
        event_type: Some(H("x-github-event")),
        vector: Vector::Shared(
            "GitHub's published test values (same algorithm and headers as github.com)",
        ),
        ..hmac(
            "github-enterprise",
            "GitHub Enterprise Server",
            &["x-hub-signature-256"],
            Hex,
            "https://docs.github.com/en/enterprise-server@latest/webhooks/using-webhooks/validating-webhook-deliveries",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm svix 1.99.1"),
        vector: Vector::Shared(STANDARD_SPEC),
        ..standard_like(
            "svix",
            "Svix",
            &["svix-signature"],
            "svix-timestamp",
            "svix-id",
            "https://docs.svix.com/receiving/verifying-payloads/how-manual",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm svix 1.99.1 (the library Clerk's docs verify with)"),
        vector: Vector::Shared(STANDARD_SPEC),
        ..standard_like(
            "clerk",
            "Clerk",
            &["svix-signature"],
            "svix-timestamp",
            "svix-id",
            "https://clerk.com/docs/webhooks/verify-webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm resend 6.38.0 (verify; the SDK has no signer)"),
        vector: Vector::Shared(STANDARD_SPEC),
        ..standard_like(
            "resend",
            "Resend",
            &["svix-signature"],
            "svix-timestamp",
            "svix-id",
            "https://resend.com/docs/dashboard/webhooks/verify-webhooks-requests",
        )
    },
    // ---- Cross-checked: no published vector found ----
    Preset {
        signature_prefix: Some("v0="),
        signed_payload: "v0:{timestamp}:{body}",
        timestamp_header: Some("x-zm-request-timestamp"),
        event_type: Some(P("/event")),
        handshake: Some(Handshake::ZoomUrlValidation),
        ..hmac(
            "zoom",
            "Zoom",
            &["x-zm-signature"],
            Hex,
            "https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        signed_payload: "{id}{timestamp}{body}",
        timestamp_header: Some("twitch-eventsub-message-timestamp"),
        timestamp_format: TimestampFormat::Rfc3339,
        event_id: Some(H("twitch-eventsub-message-id")),
        event_type: Some(H("twitch-eventsub-subscription-type")),
        tolerance_secs: Some(600),
        handshake: Some(Handshake::TwitchChallenge),
        ..hmac(
            "twitch",
            "Twitch EventSub",
            &["twitch-eventsub-message-signature"],
            Hex,
            "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message",
        )
    },
    Preset {
        handshake: Some(Handshake::EchoChallenge),
        ..hmac(
            "dropbox",
            "Dropbox",
            &["x-dropbox-signature"],
            Hex,
            "https://www.dropbox.com/developers/reference/webhooks",
        )
    },
    Preset {
        event_id: Some(P("/eventId")),
        event_type: Some(P("/eventType")),
        handshake: Some(Handshake::OktaVerification),
        ..token(
            "okta",
            "Okta event hooks",
            &["authorization"],
            "https://developer.okta.com/docs/concepts/event-hooks/",
        )
    },
    Preset {
        event_id: Some(H("x-gitlab-event-uuid")),
        event_type: Some(H("x-gitlab-event")),
        ..token(
            "gitlab",
            "GitLab",
            &["x-gitlab-token"],
            "https://docs.gitlab.com/user/project/integrations/webhooks/",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        handshake: Some(Handshake::TwitterCrc),
        ..hmac(
            "twitter",
            "X (Twitter) Account Activity",
            &["x-twitter-webhooks-signature"],
            Base64,
            "https://docs.x.com/x-api/webhooks/introduction",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        event_id: Some(H("x-request-uuid")),
        event_type: Some(H("x-event-key")),
        ..hmac(
            "bitbucket",
            "Bitbucket Cloud",
            &["x-hub-signature"],
            Hex,
            "https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        event_id: Some(P("/event_id")),
        event_type: Some(P("/event_type")),
        ..hmac(
            "typeform",
            "Typeform",
            &["typeform-signature"],
            Base64,
            "https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
        )
    },
    Preset {
        event_type: Some(P("/event")),
        tolerance_secs: Some(180),
        ..t_v1(
            "calendly",
            "Calendly",
            &["calendly-webhook-signature"],
            "https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures",
        )
    },
    Preset {
        signature_prefix: Some("sha1="),
        algorithm: Algorithm::Sha1,
        event_id: Some(P("/id")),
        event_type: Some(P("/topic")),
        ..hmac(
            "intercom",
            "Intercom",
            &["x-hub-signature"],
            Hex,
            "https://developers.intercom.com/docs/references/webhooks/webhook-models",
        )
    },
    Preset {
        signature_prefix: Some("v1="),
        signature_delimiter: Some(","),
        event_id: Some(P("/event/id")),
        event_type: Some(P("/event/event_type")),
        vector: Vector::Sdk(
            "PagerDuty/go-pagerduty webhookv3/webhookv3_test.go (TestVerifySignature)",
        ),
        ..hmac(
            "pagerduty",
            "PagerDuty (v3 webhooks)",
            &["x-pagerduty-signature"],
            Hex,
            "https://developer.pagerduty.com/docs/webhooks-overview#verifying-signatures",
        )
    },
    Preset {
        event_id: Some(H("x-wc-webhook-delivery-id")),
        event_type: Some(H("x-wc-webhook-topic")),
        ..hmac(
            "woocommerce",
            "WooCommerce",
            &["x-wc-webhook-signature"],
            Base64,
            "https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks",
        )
    },
    Preset {
        event_id: Some(H("request-id")),
        event_type: Some(H("sentry-hook-resource")),
        ..hmac(
            "sentry",
            "Sentry integration platform",
            &["sentry-hook-signature"],
            Hex,
            "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/",
        )
    },
    Preset {
        algorithm: Algorithm::Sha1,
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        ..hmac(
            "vercel",
            "Vercel",
            &["x-vercel-signature"],
            Hex,
            "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks",
        )
    },
    Preset {
        event_type: Some(H("x-event-name")),
        ..hmac(
            "lemonsqueezy",
            "Lemon Squeezy",
            &["x-signature"],
            Hex,
            "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
        )
    },
    Preset {
        event_type: Some(P("/event")),
        ..hmac(
            "docusign",
            "DocuSign Connect",
            &["x-docusign-signature-1", "x-docusign-signature-2"],
            Base64,
            "https://developers.docusign.com/platform/webhooks/connect/hmac/",
        )
    },
    hmac(
        "xero",
        "Xero",
        &["x-xero-signature"],
        Base64,
        "https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/",
    ),
    Preset {
        signed_payload: "{timestamp}{body}",
        timestamp_header: Some("x-zendesk-webhook-signature-timestamp"),
        timestamp_format: TimestampFormat::Rfc3339,
        event_type: Some(P("/type")),
        ..hmac(
            "zendesk",
            "Zendesk",
            &["x-zendesk-webhook-signature"],
            Base64,
            "https://developer.zendesk.com/documentation/webhooks/verifying/",
        )
    },
    Preset {
        algorithm: Algorithm::Sha1,
        signed_payload: "{body}{url}",
        event_id: Some(P("/action/id")),
        event_type: Some(P("/action/type")),
        handshake: Some(Handshake::TrelloHead),
        ..hmac(
            "trello",
            "Trello",
            &["x-trello-webhook"],
            Base64,
            "https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        event_id: Some(H("x-atlassian-webhook-identifier")),
        event_type: Some(P("/webhookEvent")),
        ..hmac(
            "jira",
            "Jira Cloud",
            &["x-hub-signature"],
            Hex,
            "https://developer.atlassian.com/cloud/jira/platform/webhooks/#secure-admin-webhooks",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        event_type: Some(P("/object")),
        handshake: Some(Handshake::MetaVerifyToken),
        ..hmac(
            "meta",
            "Meta (Facebook, Instagram, WhatsApp)",
            &["x-hub-signature-256"],
            Hex,
            "https://developers.facebook.com/docs/graph-api/webhooks/getting-started#event-notifications",
        )
    },
    Preset {
        event_id: Some(H("x-gitea-delivery")),
        event_type: Some(H("x-gitea-event")),
        ..hmac(
            "gitea",
            "Gitea / Forgejo",
            &["x-gitea-signature"],
            Hex,
            "https://docs.gitea.com/usage/webhooks",
        )
    },
    Preset {
        signature_prefix: Some("v1="),
        signature_delimiter: Some(","),
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        ..hmac(
            "circleci",
            "CircleCI",
            &["circleci-signature"],
            Hex,
            "https://circleci.com/docs/webhooks/#validate-webhooks",
        )
    },
    Preset {
        algorithm: Algorithm::Sha512,
        ..hmac(
            "terraform-cloud",
            "HCP Terraform / Terraform Enterprise",
            &["x-tfe-notification-signature"],
            Hex,
            "https://developer.hashicorp.com/terraform/cloud-docs/api-docs/notification-configurations#notification-authenticity",
        )
    },
    Preset {
        algorithm: Algorithm::Sha512,
        event_type: Some(P("/event")),
        ..hmac(
            "paystack",
            "Paystack",
            &["x-paystack-signature"],
            Hex,
            "https://paystack.com/docs/payments/webhooks/#verify-event-origin",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm webflow-api 3.3.4 (verify; the SDK has no signer)"),
        signed_payload: "{timestamp}:{body}",
        timestamp_header: Some("x-webflow-timestamp"),
        timestamp_format: TimestampFormat::Milliseconds,
        event_type: Some(P("/triggerType")),
        tolerance_secs: Some(300),
        ..hmac(
            "webflow",
            "Webflow",
            &["x-webflow-signature"],
            Hex,
            "https://developers.webflow.com/data/docs/working-with-webhooks#validating-request-signatures",
        )
    },
    Preset {
        algorithm: Algorithm::Sha1,
        event_type: Some(H("x-helpscout-event")),
        vector: Vector::Sdk(
            "helpscout/helpscout-api-java src/test/java/net/helpscout/api/WebhookApiTest.java with src/test/resources/responses/webhook_customer.json",
        ),
        ..hmac(
            "helpscout",
            "Help Scout",
            &["x-helpscout-signature"],
            Base64,
            "https://developer.helpscout.com/webhooks/",
        )
    },
    Preset {
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        handshake: Some(Handshake::EchoChallenge),
        ..hmac(
            "nylas",
            "Nylas (v3)",
            &["x-nylas-signature"],
            Hex,
            "https://developer.nylas.com/docs/v3/notifications/webhooks/",
        )
    },
    Preset {
        signature_prefix: Some("HMAC "),
        secret_encoding: SecretEncoding::Base64,
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        ..hmac(
            "teams",
            "Microsoft Teams outgoing webhooks",
            &["authorization"],
            Base64,
            "https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-outgoing-webhook",
        )
    },
    Preset {
        event_id: Some(H("heroku-webhook-id")),
        ..hmac(
            "heroku",
            "Heroku app webhooks",
            &["heroku-webhook-hmac-sha256"],
            Base64,
            "https://devcenter.heroku.com/articles/app-webhooks#securing-webhook-requests",
        )
    },
    Preset {
        event_type: Some(P("/kind")),
        ..hmac(
            "launchdarkly",
            "LaunchDarkly",
            &["x-ld-signature"],
            Hex,
            "https://docs.launchdarkly.com/home/connect/webhooks#signing-webhooks",
        )
    },
    Preset {
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        ..hmac(
            "alchemy",
            "Alchemy Notify",
            &["x-alchemy-signature"],
            Hex,
            "https://docs.alchemy.com/reference/notify-api-quickstart#webhook-signature--security",
        )
    },
    Preset {
        event_type: Some(P("/triggerEvent")),
        ..hmac(
            "calcom",
            "Cal.com",
            &["x-cal-signature-256"],
            Hex,
            "https://cal.com/docs/developing/guides/automation/webhooks#verifying-the-authenticity-of-the-received-payload",
        )
    },
    Preset {
        event_type: Some(P("/event")),
        ..token(
            "flutterwave",
            "Flutterwave",
            &["verif-hash"],
            "https://developer.flutterwave.com/docs/integration-guides/webhooks#verifying-webhook-signatures",
        )
    },
    Preset {
        handshake: Some(Handshake::AsanaHookSecret),
        ..hmac(
            "asana",
            "Asana",
            &["x-hook-signature"],
            Hex,
            "https://developers.asana.com/docs/webhooks-guide#security",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm pusher 5.3.4 (verify; the SDK has no signer)"),
        sends: &[("x-pusher-key", SIGN_KEY_ID)],
        vector: Vector::Sdk("pusher/pusher-http-go webhook_test.go (TestClientWebhookValidation)"),
        ..hmac(
            "pusher",
            "Pusher Channels",
            &["x-pusher-signature"],
            Hex,
            "https://pusher.com/docs/channels/server_api/webhooks/#authentication",
        )
    },
    // ---- Added with the breadth pass: documented recipes, cross-checked ----
    Preset {
        sdk: Sdk::Checked("npm @linear/sdk 98.0.0 (verify; the SDK has no signer)"),
        event_id: Some(H("linear-delivery")),
        event_type: Some(H("linear-event")),
        ..hmac(
            "linear",
            "Linear",
            &["linear-signature"],
            Hex,
            "https://linear.app/developers/webhooks#securing-webhooks",
        )
    },
    Preset {
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        ..hmac(
            "checkout-com",
            "Checkout.com",
            &["cko-signature"],
            Hex,
            "https://www.checkout.com/docs/developer-resources/webhooks",
        )
    },
    Preset {
        signed_payload: "v0:{timestamp}:{body}",
        timestamp_header: Some("x-cio-timestamp"),
        event_id: Some(P("/event_id")),
        event_type: Some(P("/metric")),
        ..hmac(
            "customerio",
            "Customer.io reporting webhooks",
            &["x-cio-signature"],
            Hex,
            "https://docs.customer.io/journeys/webhooks/",
        )
    },
    Preset {
        signature_delimiter: Some(","),
        signature_key: Some("signature"),
        timestamp_key: Some("timestamp"),
        signed_payload: "{timestamp}.{body}",
        event_type: Some(H("x-buildkite-event")),
        ..hmac(
            "buildkite",
            "Buildkite",
            &["x-buildkite-signature"],
            Hex,
            "https://buildkite.com/docs/apis/webhooks#webhook-signature",
        )
    },
    Preset {
        event_id: Some(P("/data/id")),
        event_type: Some(P("/data/attributes/name")),
        ..t_v1(
            "persona",
            "Persona",
            &["persona-signature"],
            "https://docs.withpersona.com/docs/webhooks",
        )
    },
    Preset {
        signature_prefix: Some("hmac-sha256="),
        secret_encoding: SecretEncoding::Base64,
        ..hmac(
            "airtable",
            "Airtable",
            &["x-airtable-content-mac"],
            Hex,
            "https://airtable.com/developers/web/api/webhooks-overview",
        )
    },
    Preset {
        algorithm: Algorithm::Sha1,
        event_type: Some(P("/event")),
        ..hmac(
            "webex",
            "Webex",
            &["x-spark-signature"],
            Hex,
            "https://developer.webex.com/docs/webhooks",
        )
    },
    hmac(
        "quickbooks",
        "QuickBooks Online (Intuit)",
        &["intuit-signature"],
        Base64,
        "https://developer.intuit.com/app/developer/qbo/docs/develop/webhooks",
    ),
    Preset {
        event_id: Some(P("/update_id")),
        ..token(
            "telegram",
            "Telegram Bot API",
            &["x-telegram-bot-api-secret-token"],
            "https://core.telegram.org/bots/api#setwebhook",
        )
    },
    Preset {
        algorithm: Algorithm::Sha1,
        event_id: Some(P("/messageId")),
        event_type: Some(P("/type")),
        ..hmac(
            "segment",
            "Segment webhooks destination",
            &["x-signature"],
            Hex,
            "https://segment.com/docs/connections/destinations/catalog/webhooks/",
        )
    },
    Preset {
        event_id: Some(P("/id")),
        event_type: Some(P("/topic")),
        ..hmac(
            "dwolla",
            "Dwolla",
            &["x-request-signature-sha-256"],
            Hex,
            "https://developers.dwolla.com/docs/webhooks",
        )
    },
    Preset {
        event_type: Some(P("/event")),
        ..hmac(
            "clickup",
            "ClickUp",
            &["x-signature"],
            Hex,
            "https://developer.clickup.com/docs/webhooksignature",
        )
    },
    Preset {
        signature_prefix: Some("v0="),
        signed_payload: "v0:{timestamp}:{body}",
        timestamp_header: Some("x-frameio-request-timestamp"),
        event_type: Some(P("/type")),
        ..hmac(
            "frameio",
            "Frame.io",
            &["x-frameio-signature"],
            Hex,
            "https://developer.frame.io/docs/automations-webhooks/webhooks-overview",
        )
    },
    Preset {
        event_id: Some(H("x-gogs-delivery")),
        event_type: Some(H("x-gogs-event")),
        ..hmac(
            "gogs",
            "Gogs",
            &["x-gogs-signature"],
            Hex,
            "https://gogs.io/docs/features/webhook",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        event_id: Some(H("x-request-id")),
        event_type: Some(H("x-event-key")),
        ..hmac(
            "bitbucket-server",
            "Bitbucket Data Center / Server",
            &["x-hub-signature"],
            Hex,
            "https://confluence.atlassian.com/bitbucketserver/manage-webhooks-938025878.html",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        event_type: Some(H("x-snyk-event")),
        ..hmac(
            "snyk",
            "Snyk",
            &["x-hub-signature"],
            Hex,
            "https://docs.snyk.io/snyk-api/how-to-use-snyk-webhooks-to-integrate-snyk-with-third-party-apps",
        )
    },
    hmac(
        "sonarqube",
        "SonarQube / SonarCloud",
        &["x-sonar-webhook-hmac-sha256"],
        Hex,
        "https://docs.sonarsource.com/sonarqube-server/latest/project-administration/webhooks/",
    ),
    Preset {
        event_id: Some(H("pulumi-webhook-id")),
        event_type: Some(H("pulumi-webhook-kind")),
        ..hmac(
            "pulumi",
            "Pulumi Cloud",
            &["pulumi-webhook-signature"],
            Hex,
            "https://www.pulumi.com/docs/pulumi-cloud/webhooks/",
        )
    },
    hmac(
        "grafana",
        "Grafana Alerting webhook contact point",
        &["x-grafana-alerting-signature"],
        Hex,
        "https://grafana.com/docs/grafana/latest/alerting/configure-notifications/manage-contact-points/integrations/webhook-notifier/",
    ),
    token(
        "huggingface",
        "Hugging Face Hub",
        &["x-webhook-secret"],
        "https://huggingface.co/docs/hub/webhooks",
    ),
    Preset {
        event_type: Some(P("/message/type")),
        ..token(
            "vapi",
            "Vapi server URL",
            &["x-vapi-secret"],
            "https://docs.vapi.ai/server-url/server-authentication",
        )
    },
    Preset {
        event_id: Some(H("webhook-id")),
        ..token(
            "xendit",
            "Xendit",
            &["x-callback-token"],
            "https://docs.xendit.co/webhook",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @elevenlabs/elevenlabs-js 2.73.0 (verify; the SDK has no signer)"),
        signature_delimiter: Some(","),
        signature_key: Some("v0"),
        timestamp_key: Some("t"),
        signed_payload: "{timestamp}.{body}",
        event_type: Some(P("/type")),
        tolerance_secs: Some(1800),
        ..hmac(
            "elevenlabs",
            "ElevenLabs",
            &["elevenlabs-signature"],
            Hex,
            "https://elevenlabs.io/docs/product-guides/administration/webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm stream-chat 9.53.0 (verify; the SDK has no signer)"),
        event_id: Some(H("x-webhook-id")),
        event_type: Some(P("/type")),
        ..hmac(
            "stream-chat",
            "Stream Chat",
            &["x-signature"],
            Hex,
            "https://getstream.io/chat/docs/node/webhooks_overview/",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @liveblocks/node 3.24.2 (verify; the SDK has no signer)"),
        ..standard_like(
            "liveblocks",
            "Liveblocks",
            &["webhook-signature"],
            "webhook-timestamp",
            "webhook-id",
            "https://liveblocks.io/docs/platform/webhooks",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm @polar-sh/sdk 0.49.0 (verify; the SDK has no signer)"),
        secret_encoding: SecretEncoding::Raw,
        secret_prefix: None,
        ..standard_like(
            "polar",
            "Polar",
            &["webhook-signature"],
            "webhook-timestamp",
            "webhook-id",
            "https://docs.polar.sh/integrate/webhooks/endpoints",
        )
    },
    Preset {
        sdk: Sdk::Checked("npm dodopayments 2.52.0 (verify; the SDK has no signer)"),
        ..standard_like(
            "dodopayments",
            "Dodo Payments",
            &["webhook-signature"],
            "webhook-timestamp",
            "webhook-id",
            "https://docs.dodopayments.com/developer-resources/webhooks",
        )
    },
    standard_like(
        "yoco",
        "Yoco",
        &["webhook-signature"],
        "webhook-timestamp",
        "webhook-id",
        "https://developer.yoco.com/online/resources/webhooks",
    ),
    Preset {
        sdk: Sdk::Checked("npm svix 1.99.1 (the library Stytch's docs verify with)"),
        ..standard_like(
            "stytch",
            "Stytch",
            &["svix-signature"],
            "svix-timestamp",
            "svix-id",
            "https://stytch.com/docs/guides/webhooks/getting-started",
        )
    },
    Preset {
        signature_delimiter: Some(","),
        signature_key: Some("sig1"),
        timestamp_key: Some("time"),
        signed_payload: "{timestamp}.{body}",
        ..hmac(
            "cloudflare-stream",
            "Cloudflare Stream",
            &["webhook-signature"],
            Hex,
            "https://developers.cloudflare.com/stream/manage-video-library/using-webhooks/",
        )
    },
    Preset {
        signature_prefix: Some("v1="),
        signature_delimiter: Some(","),
        signed_payload: "v1.{timestamp}.{body}",
        timestamp_header: Some("revolut-request-timestamp"),
        timestamp_format: TimestampFormat::Milliseconds,
        event_type: Some(P("/event")),
        tolerance_secs: Some(300),
        ..hmac(
            "revolut",
            "Revolut Merchant",
            &["revolut-signature"],
            Hex,
            "https://developer.revolut.com/docs/guides/accept-payments/tutorials/work-with-webhooks/verify-the-payload-signature",
        )
    },
    Preset {
        signed_payload: "{timestamp}{body}",
        timestamp_header: Some("x-timestamp"),
        timestamp_format: TimestampFormat::Milliseconds,
        event_id: Some(P("/id")),
        event_type: Some(P("/name")),
        ..hmac(
            "airwallex",
            "Airwallex",
            &["x-signature"],
            Hex,
            "https://www.airwallex.com/docs/developer-tools/webhooks/listen-for-webhook-events",
        )
    },
    Preset {
        event_id: Some(P("/eventId")),
        event_type: Some(P("/eventType")),
        ..hmac(
            "tally",
            "Tally",
            &["tally-signature"],
            Base64,
            "https://tally.so/help/webhooks",
        )
    },
    Preset {
        event_id: Some(H("x-todoist-delivery-id")),
        event_type: Some(P("/event_name")),
        ..hmac(
            "todoist",
            "Todoist",
            &["x-todoist-hmac-sha256"],
            Base64,
            "https://developer.todoist.com/sync/v9/#webhooks",
        )
    },
    Preset {
        event_id: Some(P("/uuid")),
        event_type: Some(P("/event_type")),
        ..hmac(
            "gusto",
            "Gusto",
            &["x-gusto-signature"],
            Hex,
            "https://docs.gusto.com/embedded-payroll/docs/webhooks",
        )
    },
    Preset {
        signature_prefix: Some("sha256="),
        event_id: Some(P("/deliveryId")),
        event_type: Some(P("/type")),
        ..hmac(
            "btcpay",
            "BTCPay Server",
            &["btcpay-sig"],
            Hex,
            "https://docs.btcpayserver.org/API/Greenfield/v1/#tag/Webhooks",
        )
    },
    Preset {
        event_id: Some(P("/id")),
        event_type: Some(P("/type")),
        ..hmac(
            "checkr",
            "Checkr",
            &["x-checkr-signature"],
            Hex,
            "https://docs.checkr.com/#section/Webhooks",
        )
    },
    hmac(
        "veriff",
        "Veriff",
        &["x-hmac-signature"],
        Hex,
        "https://devdocs.veriff.com/docs/hmac-authentication-and-endpoint-security",
    ),
    Preset {
        event_type: Some(P("/type")),
        ..hmac(
            "sumsub",
            "Sumsub",
            &["x-payload-digest"],
            Hex,
            "https://docs.sumsub.com/docs/webhooks",
        )
    },
    Preset {
        event_type: Some(P("/category")),
        ..hmac(
            "sendbird",
            "Sendbird Chat",
            &["x-sendbird-signature"],
            Hex,
            "https://sendbird.com/docs/chat/platform-api/v3/webhook/webhook-overview",
        )
    },
    hmac(
        "hookdeck",
        "Hookdeck (outbound)",
        &["x-hookdeck-signature"],
        Base64,
        "https://hookdeck.com/docs/authentication",
    ),
    Preset {
        event_id: Some(P("/event_id")),
        event_type: Some(P("/event")),
        ..hmac(
            "aftership",
            "AfterShip",
            &["aftership-hmac-sha256"],
            Base64,
            "https://www.aftership.com/docs/tracking/webhook/webhook-signature",
        )
    },
    hmac(
        "fastspring",
        "FastSpring",
        &["x-fs-signature"],
        Base64,
        "https://developer.fastspring.com/reference/message-secret-security",
    ),
    Preset {
        event_type: Some(P("/type")),
        ..hmac(
            "mailersend",
            "MailerSend",
            &["signature"],
            Hex,
            "https://developers.mailersend.com/api/v1/webhooks.html#security",
        )
    },
    Preset {
        signed_payload: "{timestamp}{body}",
        timestamp_header: Some("close-sig-timestamp"),
        secret_encoding: SecretEncoding::Hex,
        event_id: Some(P("/event/id")),
        ..hmac(
            "close",
            "Close CRM",
            &["close-sig-hash"],
            Hex,
            "https://developer.close.com/topics/webhooks/",
        )
    },
    Preset {
        event_id: Some(H("x-chargify-webhook-id")),
        ..hmac(
            "maxio",
            "Maxio Advanced Billing (Chargify)",
            &["x-chargify-webhook-signature-hmac-sha-256"],
            Hex,
            "https://docs.maxio.com/hc/en-us/articles/24266136649869-Webhooks-Reference",
        )
    },
    Preset {
        event_type: Some(P("/type")),
        ..hmac(
            "bolt",
            "Bolt",
            &["x-bolt-hmac-sha256"],
            Base64,
            "https://help.bolt.com/developers/webhooks/",
        )
    },
    hmac(
        "acuity",
        "Acuity Scheduling",
        &["x-acuity-signature"],
        Base64,
        "https://developers.acuityscheduling.com/docs/webhooks",
    ),
];

/// The preset called `name`.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

fn loc(l: Loc) -> Locator {
    match l {
        Loc::Header(h) => Locator::Header(HeaderName::from_static(h)),
        Loc::Pointer(p) => Locator::Pointer(p.to_owned()),
    }
}

impl Preset {
    /// The engine configuration for this provider. Header names in the
    /// table are lowercase literals, checked by `every_preset_is_valid`.
    pub fn generic(&self, public_url: Option<&str>) -> Generic {
        let primary = self.signature_headers.first().copied().unwrap_or("");
        let names = |s: &[&'static str]| -> Vec<HeaderName> {
            s.iter().map(|h| HeaderName::from_static(h)).collect()
        };
        Generic {
            signature_header: HeaderName::from_static(primary),
            alternate_signature_headers: names(self.signature_headers.get(1..).unwrap_or(&[])),
            signature_prefix: self.signature_prefix.map(str::to_owned),
            signature_delimiter: self.signature_delimiter.map(str::to_owned),
            signature_key: self.signature_key.map(str::to_owned),
            encoding: self.encoding,
            algorithm: self.algorithm,
            signed_payload: self.signed_payload.to_owned(),
            timestamp_header: self.timestamp_header.map(HeaderName::from_static),
            timestamp_key: self.timestamp_key.map(str::to_owned),
            timestamp_format: self.timestamp_format,
            secret_encoding: self.secret_encoding,
            secret_prefix: self.secret_prefix.map(str::to_owned),
            public_url: public_url.map(str::to_owned),
            event_id: self.event_id.map(loc),
            event_type: self.event_type.map(loc),
            labels: Labels {
                signature: primary,
                timestamp: self.timestamp_header.unwrap_or(primary),
                id: match self.event_id {
                    Some(Loc::Header(h)) => h,
                    _ => primary,
                },
            },
        }
    }
}

/// A catalog preset as a provider: the source's generic description of the
/// sender, under the preset's name, with what the preset adds (its
/// documented window, the fixed headers it sends, its endpoint check).
#[derive(Debug, Clone, Copy)]
pub(super) struct PresetScheme<'a> {
    pub(super) preset: &'static Preset,
    pub(super) generic: &'a Generic,
}

impl Provider for PresetScheme<'_> {
    fn name(&self) -> &'static str {
        self.preset.name
    }

    fn signs_timestamp(&self) -> bool {
        self.generic.signs_timestamp()
    }

    fn signs_event_id(&self) -> bool {
        Provider::signs_event_id(self.generic)
    }

    fn signs_event_type(&self) -> bool {
        Provider::signs_event_type(self.generic)
    }

    fn needs_public_url(&self) -> bool {
        self.generic.uses_url()
    }

    fn default_tolerance(&self) -> Option<Duration> {
        self.preset.tolerance_secs.map(Duration::from_secs)
    }

    fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        self.generic.prepare_key(secret)
    }

    fn key_policy(&self) -> Option<&KeyPolicy> {
        self.generic.key_policy()
    }

    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error> {
        self.generic.verify(d)
    }

    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str> {
        let mut lines = self.generic.sign(s)?;
        lines.extend(
            self.preset
                .sends
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
        );
        Ok(lines)
    }

    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        self.generic.resign_names()
    }

    fn handshake_before(&self) -> Option<Handshake> {
        self.preset.handshake
    }

    fn handshake_after(&self) -> Option<Handshake> {
        self.preset.handshake
    }

    fn takes_verify_token(&self) -> bool {
        self.preset.handshake == Some(Handshake::MetaVerifyToken)
    }
}

#[cfg(test)]
mod docs;
#[cfg(test)]
mod tests;
