//! Console sessions, their CSRF tokens, and the brake on wrong tokens.
//!
//! A session is a random 128-bit id in an `HttpOnly`, `SameSite=Strict`
//! cookie scoped to `/console`; the server keeps, per id, its CSRF token,
//! its expiry and a digest of the admin token it signed in with. Nothing of
//! a session is written to disk: a restart signs everyone out.
//!
//! - A session lasts [`SESSION_TTL`] (12 h) from sign-in, then is gone.
//! - At most [`MAX_SESSIONS`] live at once; a new sign-in beyond that ends
//!   the session closest to expiring.
//! - A session is only valid while the admin token is the one it signed in
//!   with: changing the token (a new file, a reload) signs everyone out.
//! - Ids, CSRF tokens and admin tokens are compared in constant time (as
//!   SHA-256 digests, so lengths do not leak either).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::secret::Secret;

/// How long a session lasts after sign-in (the cookie's `Max-Age`).
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);

/// Sessions kept at once.
pub const MAX_SESSIONS: usize = 64;

/// The cookie's name.
pub const COOKIE: &str = "hookgate_console";

/// Wrong tokens within this window slow the next answer down.
const FAILURE_WINDOW: Duration = Duration::from_secs(5 * 60);

/// The delay of a refused sign-in with no recent failure before it; each
/// recent failure adds as much again, up to [`MAX_DELAY`].
const BASE_DELAY: Duration = Duration::from_millis(500);
const MAX_DELAY: Duration = Duration::from_secs(5);

/// Failures remembered (beyond it the delay is at its maximum anyway).
const MAX_FAILURES: usize = 64;

/// One signed-in browser.
#[derive(Clone)]
pub struct Session {
    /// Hex, in every form that POSTs.
    pub csrf: String,
    expires: Instant,
    /// SHA-256 of the admin token at sign-in.
    token_digest: [u8; 32],
}

/// The live sessions and the recent failures.
#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<String, Session>>,
    failures: Mutex<VecDeque<Instant>>,
}

/// A fresh random 128-bit value, hex.
fn random_hex() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Whether `given` is the admin token, in constant time.
pub fn token_matches(given: &str, token: &Secret) -> bool {
    digest(given.as_bytes())
        .ct_eq(&digest(token.expose()))
        .into()
}

/// Whether two strings are equal, in constant time.
pub fn same(a: &str, b: &str) -> bool {
    digest(a.as_bytes()).ct_eq(&digest(b.as_bytes())).into()
}

impl Sessions {
    /// Starts a session for a browser that gave the right `token`; returns
    /// its id (the cookie value).
    pub fn start(&self, token: &Secret) -> String {
        let now = Instant::now();
        let id = random_hex();
        let session = Session {
            csrf: random_hex(),
            expires: now + SESSION_TTL,
            token_digest: digest(token.expose()),
        };
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|_, s| s.expires > now);
        while live.len() >= MAX_SESSIONS {
            let Some(oldest) = live
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(id, _)| id.clone())
            else {
                break;
            };
            live.remove(&oldest);
        }
        live.insert(id.clone(), session);
        id
    }

    /// The session `id` names, if it is live and signed in with the current `token`.
    pub fn get(&self, id: &str, token: &Secret) -> Option<Session> {
        let now = Instant::now();
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        // The map is looked up by id; the id is 128 random bits, so a
        // timing difference in the lookup tells a guesser nothing useful.
        let session = live.get(id)?.clone();
        let current: bool = session.token_digest.ct_eq(&digest(token.expose())).into();
        if session.expires <= now || !current {
            live.remove(id);
            return None;
        }
        Some(session)
    }

    /// Ends the session `id`.
    pub fn end(&self, id: &str) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Notes a wrong token and returns how long to wait before answering:
    /// `BASE_DELAY` times one more than the failures of the last
    /// `FAILURE_WINDOW`, at most `MAX_DELAY`.
    pub fn failed(&self) -> Duration {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        while failures
            .front()
            .is_some_and(|t| now.duration_since(*t) > FAILURE_WINDOW)
        {
            failures.pop_front();
        }
        let recent = u32::try_from(failures.len()).unwrap_or(u32::MAX);
        if failures.len() >= MAX_FAILURES {
            failures.pop_front();
        }
        failures.push_back(now);
        BASE_DELAY
            .saturating_mul(recent.saturating_add(1))
            .min(MAX_DELAY)
    }
}

/// The session id in a `Cookie` header, if any.
pub fn cookie_value(header: &str) -> Option<&str> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
}

/// The `Set-Cookie` value that starts session `id`.
pub fn set_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; Path=/console; Max-Age={}; HttpOnly; SameSite=Strict",
        SESSION_TTL.as_secs()
    )
}

/// The `Set-Cookie` value that clears the session cookie.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(s: &str) -> Secret {
        Secret::new(s.as_bytes())
    }

    #[test]
    fn a_session_is_valid_only_with_the_token_it_signed_in_with() {
        let sessions = Sessions::default();
        let id = sessions.start(&token("one"));
        assert!(sessions.get(&id, &token("one")).is_some());
        assert!(sessions.get("0123", &token("one")).is_none());
        assert!(sessions.get(&id, &token("two")).is_none());
        // Gone for good, even with the first token again.
        assert!(sessions.get(&id, &token("one")).is_none());
    }

    #[test]
    fn sessions_are_bounded_and_ended() {
        let sessions = Sessions::default();
        let first = sessions.start(&token("t"));
        for _ in 0..MAX_SESSIONS {
            sessions.start(&token("t"));
        }
        assert!(sessions.get(&first, &token("t")).is_none());
        let last = sessions.start(&token("t"));
        sessions.end(&last);
        assert!(sessions.get(&last, &token("t")).is_none());
    }

    #[test]
    fn each_failure_waits_longer_up_to_the_bound() {
        let sessions = Sessions::default();
        assert_eq!(sessions.failed(), BASE_DELAY);
        assert_eq!(sessions.failed(), BASE_DELAY * 2);
        for _ in 0..100 {
            sessions.failed();
        }
        assert_eq!(sessions.failed(), MAX_DELAY);
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        assert_eq!(cookie_value("a=b; hookgate_console=abc; c=d"), Some("abc"));
        assert_eq!(cookie_value("a=b"), None);
        let set = set_cookie("abc");
        for attribute in [
            "HttpOnly",
            "SameSite=Strict",
            "Path=/console",
            "Max-Age=43200",
        ] {
            assert!(set.contains(attribute), "{set}");
        }
    }
}
