//! Re-signing a delivery (`[source.resign]`, DESIGN §3): the app receives the
//! scheme's signature headers made afresh, with the app's secret and the time
//! of this delivery, in place of the sender's; the body and every other header
//! stay as they came.
//!
//! The fresh headers come from the scheme's one signer ([`Scheme::sign`],
//! the same one `hookgate sign` prints), so what the app receives is what the
//! provider's own SDK accepts. Only the headers that carry the signature and
//! its signed time are replaced ([`Scheme::resign_names`]); the signer's other
//! lines (ids, topics, markers, which `hookgate sign` fills with stand-ins)
//! are not used. Where the sender used an alias family of those headers
//! (`svix-*` beside `webhook-*`, Shopify's names without `X-`), the same
//! names carry the fresh values.

use http::{HeaderMap, HeaderName, HeaderValue};

use super::Scheme;
use crate::secret::Secret;

/// Names that carry one value under two spellings; the second is the alias.
const ALIASES: [(&str, &str); 3] = [
    ("webhook-signature", "svix-signature"),
    ("webhook-timestamp", "svix-timestamp"),
    ("x-shopify-hmac-sha256", "shopify-hmac-sha256"),
];

impl Scheme {
    /// The request headers that carry this scheme's signature and signed
    /// time (lowercase), or why hookgate cannot sign for it.
    pub fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        self.provider().resign_names()
    }

    /// Replaces the signature headers in `headers` with ones made with `key`
    /// at `now` over `body`, for the event `id`.
    pub fn resign(
        &self,
        key: &Secret,
        headers: &mut HeaderMap,
        body: &[u8],
        id: &str,
        now: i64,
    ) -> Result<(), &'static str> {
        let names = self.resign_names()?;
        let fresh = self.sign(key, body, Some(id), now)?;
        let had = |name: &str| headers.contains_key(name);
        // Which alias spellings the sender used, before anything is removed.
        let aliases: Vec<(&str, &str, bool, bool)> = ALIASES
            .iter()
            .map(|(main, alias)| (*main, *alias, had(main), had(alias)))
            .collect();
        for name in &names {
            headers.remove(name.as_str());
        }
        for (name, value) in fresh {
            let lower = name.to_ascii_lowercase();
            if !names.contains(&lower) {
                continue;
            }
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(lower.as_bytes()),
                HeaderValue::from_str(&value),
            ) else {
                return Err("the signer made a header that is not valid HTTP");
            };
            match aliases.iter().find(|(main, ..)| *main == lower) {
                Some((_, alias, had_main, had_alias)) => {
                    if *had_alias {
                        headers.insert(HeaderName::from_static(alias), value.clone());
                    }
                    if *had_main || !*had_alias {
                        headers.insert(name, value);
                    }
                }
                None => {
                    headers.insert(name, value);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> Secret {
        Secret::new(s.as_bytes().to_vec())
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (n, v) in pairs {
            map.append(
                HeaderName::from_bytes(n.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        map
    }

    #[test]
    fn stripe_gets_a_fresh_signature_that_verifies_and_nothing_else_changes() {
        let body = br#"{"id":"evt_1","type":"invoice.paid"}"#;
        let mut h = headers(&[
            ("stripe-signature", "t=1,v1=stale"),
            ("content-type", "application/json"),
            ("x-custom", "kept"),
        ]);
        let app = secret("whsec_app");
        Scheme::Stripe
            .resign(&app, &mut h, body, "evt_1", 1_700_000_000)
            .expect("stripe signs");
        assert_eq!(h["content-type"], "application/json");
        assert_eq!(h["x-custom"], "kept");
        assert_eq!(h.get_all("stripe-signature").iter().count(), 1);
        let got = Scheme::Stripe.verify(
            &[app],
            std::time::Duration::from_secs(300),
            &h,
            body,
            1_700_000_010,
        );
        assert!(got.is_ok(), "{got:?}");
    }

    #[test]
    fn standard_keeps_the_senders_spelling_and_the_id() {
        let body = br#"{"type":"x"}"#;
        let key = Scheme::Standard
            .prepare_key(&secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
            .expect("a Standard Webhooks secret");
        let mut h = headers(&[
            ("svix-id", "msg_1"),
            ("svix-timestamp", "1"),
            ("svix-signature", "v1,stale"),
        ]);
        Scheme::Standard
            .resign(&key, &mut h, body, "msg_1", 1_700_000_000)
            .expect("standard signs");
        assert_eq!(h["svix-id"], "msg_1");
        assert_eq!(h["svix-timestamp"], "1700000000");
        assert!(!h.contains_key("webhook-signature"), "{h:?}");
        let got = Scheme::Standard.verify(
            &[key],
            std::time::Duration::from_secs(300),
            &h,
            body,
            1_700_000_000,
        );
        assert!(got.is_ok(), "{got:?}");
    }

    #[test]
    fn public_key_and_body_signed_schemes_cannot_be_resigned() {
        for name in ["discord", "sendgrid", "mailgun", "adyen"] {
            let scheme = Scheme::by_name(name, None).expect("a coded scheme");
            assert!(scheme.resign_names().is_err(), "{}", scheme.name());
        }
    }
}
