//! One signature scheme's behaviour behind one trait.
//!
//! Every scheme with code of its own is one type implementing [`Provider`]
//! in its module (`stripe.rs`: `Stripe`, `twilio.rs`: `Twilio { public_url }`,
//! `sns.rs`: `SnsSource`, …), and so is the generic engine (`Generic`, and
//! a catalog preset over it). [`Scheme`](super::Scheme) holds the provider
//! (a named variant for the core five and `generic`, [`Coded`] for the
//! others, listed in `CODED` in `scheme.rs`) and every method of `Scheme`
//! calls through it. Most providers implement only `name`,
//! `signs_timestamp`, `verify` and `sign`; the other methods have the
//! defaults most schemes share. `verify` sees a [`Delivery`] and `sign`
//! gets a [`Signing`], each built by `Scheme` on the stack; a provider
//! forwards their fields to its module's functions. The providers whose
//! key is fetched (`sns.rs`, `paypal.rs`, `google_oidc.rs`) write their
//! shared `key_policy`, `verify`, `verify_fetching`, `sign` and
//! `resign_names` with `fetched_key!`.

use std::any::Any;
use std::fmt::{self, Debug};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use http::HeaderMap;

use super::{Error, Handshake, Verified};
use crate::keyfetch::{Fetcher, KeyPolicy};
use crate::secret::Secret;

/// A verification that fetches the provider's key first.
pub type Fetching<'a> = Pin<Box<dyn Future<Output = Result<Verified, Error>> + Send + 'a>>;

/// What a verification sees: the request as it arrived and what it is
/// checked against. Built on the stack by [`Scheme`](super::Scheme) for each
/// request and lent to the provider.
#[derive(Clone, Copy)]
pub struct Delivery<'a> {
    /// The active keys, in `secrets` order (`Verified::secret_index` counts
    /// in it); unused by a scheme whose key is fetched.
    pub keys: &'a [Secret],
    /// The replay window, both directions, for schemes that sign a timestamp.
    pub tolerance: Duration,
    pub headers: &'a HeaderMap,
    /// The raw body bytes, as received.
    pub body: &'a [u8],
    /// Unix seconds.
    pub now: i64,
}

/// What a signing gets: the key, the body, and the event id and time to
/// sign them under.
#[derive(Clone, Copy)]
pub struct Signing<'a> {
    pub key: &'a Secret,
    pub body: &'a [u8],
    /// The event id, where the scheme carries one in a header (a fresh
    /// random id when `None`).
    pub id: Option<&'a str>,
    /// Unix seconds.
    pub timestamp: i64,
}

/// A signature scheme: how a sender signs, and what hookgate does about it.
/// The methods are those of [`Scheme`](super::Scheme), which documents them
/// in full.
pub trait Provider: Debug + Send + Sync {
    /// The `scheme = "…"` word.
    fn name(&self) -> &'static str;

    /// Whether the scheme signs a timestamp (and so whether `tolerance` applies).
    fn signs_timestamp(&self) -> bool;

    /// Verifies a delivery: signature (any key, any signature value), then
    /// the timestamp window, then the body parse for id and type. A scheme
    /// whose key is fetched answers [`Error::KeyUnavailable`] here: it
    /// verifies in [`Provider::verify_fetching`].
    fn verify(&self, d: &Delivery<'_>) -> Result<Verified, Error>;

    /// Every header of a delivery of `s.body` signed with `s.key` at
    /// `s.timestamp`, as the provider sends it, or why hookgate cannot sign
    /// for this scheme.
    fn sign(&self, s: &Signing<'_>) -> Result<Vec<(String, String)>, &'static str>;

    /// Whether the event id read is covered by the signature.
    fn signs_event_id(&self) -> bool {
        true
    }

    /// Whether the event type read is covered by the signature.
    fn signs_event_type(&self) -> bool {
        true
    }

    /// Whether the scheme signs the URL the sender posts to (`public_url`).
    fn needs_public_url(&self) -> bool {
        false
    }

    /// The replay window the provider documents; `None` leaves hookgate's default.
    fn default_tolerance(&self) -> Option<Duration> {
        None
    }

    /// A configured secret as the key this scheme uses; by default the
    /// secret itself, refused when empty. The error names what is wrong
    /// with the value's shape, never the value.
    fn prepare_key(&self, secret: &Secret) -> Result<Secret, String> {
        if secret.expose().is_empty() {
            Err("secret is empty".to_owned())
        } else {
            Ok(secret.clone())
        }
    }

    /// Whether `key` (prepared) can sign: a public key only verifies.
    fn can_sign_with(&self, _key: &Secret) -> bool {
        true
    }

    /// Whether the source takes `secrets` even though its keys are also
    /// fetched (a JWK Set beside configured keys); by default only schemes
    /// that fetch nothing do.
    fn takes_secrets(&self) -> bool {
        self.key_policy().is_none()
    }

    /// The `[source.keys]` policy of a scheme whose key comes from the
    /// provider; `None` for every scheme keyed by `secrets`.
    fn key_policy(&self) -> Option<&KeyPolicy> {
        None
    }

    /// For a scheme whose key comes from the provider: the verification,
    /// fetching the key first (from `fetcher`'s cache when it holds it), with
    /// `source` naming the source in what it logs. Boxed, since a fetch's
    /// future is large; `None` (the default, and no allocation) for every
    /// scheme that verifies with `secrets`.
    fn verify_fetching<'a>(
        &'a self,
        _fetcher: &'a Fetcher,
        _source: &'a str,
        _d: &Delivery<'a>,
    ) -> Option<Fetching<'a>> {
        None
    }

    /// The request headers (lowercase) that carry the signature and its
    /// signed time, replaced when a delivery is re-signed; or why hookgate
    /// cannot re-sign this scheme. By default it cannot: only a scheme that
    /// names its headers here is re-signed.
    fn resign_names(&self) -> Result<Vec<String>, &'static str> {
        Err("its signature binds request details hookgate does not rebuild")
    }

    /// The endpoint check answered before the method check and the body
    /// read, if the sender makes one.
    fn handshake_before(&self) -> Option<Handshake> {
        None
    }

    /// The endpoint check that arrives as a verified POST, if the sender
    /// makes one.
    fn handshake_after(&self) -> Option<Handshake> {
        None
    }

    /// Whether the source takes a `verify_token` (Meta's subscription check).
    fn takes_verify_token(&self) -> bool {
        false
    }
}

/// Why hookgate cannot sign a scheme: what `sign` answers, and what
/// `resign_names` answers.
pub(super) struct Refusal {
    pub(super) sign: &'static str,
    pub(super) resign: &'static str,
}

/// The sender signs with a private key whose public half is in `secrets`.
pub(super) const SENDER_PRIVATE_KEY: Refusal = Refusal {
    sign: "the sender signs with its private key; hookgate only holds the public key",
    resign: "the sender signs with its private key (hookgate holds only the public key)",
};

/// The provider signs with a private key whose public half hookgate fetches.
pub(super) const FETCHED_KEY: Refusal = Refusal {
    sign: "the provider signs with its private key; hookgate fetches only its public key",
    resign: "the provider signs with its private key (hookgate fetches only the public key)",
};

/// The methods every provider whose key hookgate fetches shares, written
/// inside its `impl Provider` as `fetched_key!(verify, keys);`: `verify` is
/// the module's `async fn(&Fetcher, &Self, &str, Delivery<'_>) ->
/// Result<Verified, Error>` and `keys` the provider's `KeyPolicy` field.
/// Such a provider verifies only with the key it fetches: `key_policy` is
/// `Some` (so `Scheme::fetches_keys` holds), `verify_fetching` boxes the
/// module's `verify`, and `verify` refuses with [`Error::KeyUnavailable`].
/// Hookgate holds no private key for it, so `sign` and `resign_names`
/// refuse with [`FETCHED_KEY`].
macro_rules! fetched_key {
    ($verify:path, $policy:ident) => {
        fn key_policy(&self) -> Option<&$crate::keyfetch::KeyPolicy> {
            Some(&self.$policy)
        }

        fn verify(
            &self,
            _: &$crate::scheme::Delivery<'_>,
        ) -> Result<$crate::scheme::Verified, $crate::scheme::Error> {
            Err($crate::scheme::Error::KeyUnavailable)
        }

        fn verify_fetching<'a>(
            &'a self,
            fetcher: &'a $crate::keyfetch::Fetcher,
            source: &'a str,
            d: &$crate::scheme::Delivery<'a>,
        ) -> Option<$crate::scheme::Fetching<'a>> {
            Some(Box::pin($verify(fetcher, self, source, *d)))
        }

        fn sign(
            &self,
            _: &$crate::scheme::Signing<'_>,
        ) -> Result<Vec<(String, String)>, &'static str> {
            Err($crate::scheme::provider::FETCHED_KEY.sign)
        }

        fn resign_names(&self) -> Result<Vec<String>, &'static str> {
            Err($crate::scheme::provider::FETCHED_KEY.resign)
        }
    };
}
pub(super) use fetched_key;

/// The signature is part of the body, which hookgate forwards as it came.
pub(super) const IN_BODY: Refusal = Refusal {
    sign: "the signature travels in the body, not in headers",
    resign: "the signature travels in the body, which stays as it came",
};

/// Lowercase header names, as [`Provider::resign_names`] returns them.
pub(super) fn names(list: &[&str]) -> Result<Vec<String>, &'static str> {
    Ok(list.iter().map(|n| (*n).to_owned()).collect())
}

/// Equality, cloning and downcasting for a provider held as a trait
/// object; implemented for every `Provider + Clone + PartialEq`.
pub trait DynEq: Provider + Any {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Whether `other` is a provider of the same type, equal to this one.
    fn dyn_eq(&self, other: &dyn Any) -> bool;
    fn clone_box(&self) -> Box<dyn DynEq>;
}

impl<T: Provider + Clone + PartialEq + 'static> DynEq for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn dyn_eq(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<T>().is_some_and(|other| self == other)
    }

    fn clone_box(&self) -> Box<dyn DynEq> {
        Box::new(self.clone())
    }
}

/// A provider with code of its own besides the core five, built once per
/// source from the list in `scheme.rs`.
pub struct Coded(Box<dyn DynEq>);

impl Coded {
    pub(super) fn new(provider: Box<dyn DynEq>) -> Coded {
        Coded(provider)
    }

    pub(super) fn provider(&self) -> &dyn Provider {
        &*self.0
    }

    pub(super) fn downcast_ref<T: Provider + 'static>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }

    pub(super) fn downcast_mut<T: Provider + 'static>(&mut self) -> Option<&mut T> {
        self.0.as_any_mut().downcast_mut()
    }
}

impl Clone for Coded {
    fn clone(&self) -> Coded {
        Coded(self.0.clone_box())
    }
}

impl PartialEq for Coded {
    fn eq(&self, other: &Coded) -> bool {
        self.0.dyn_eq(other.0.as_any())
    }
}

impl Eq for Coded {}

impl Debug for Coded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
