//! What `sign` makes, `verify` accepts, whatever the key, id, time and body:
//! the arbitrary body then reaches the post-signature parse (deep JSON and
//! all). The only refusals allowed are the documented ones.
#![no_main]

use std::time::Duration;

use hookgate::secret::Secret;
use hookgate::scheme::{Error, Scheme};
use hookgate_fuzz::{MAX_TIME, SCHEMES};
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(pick) = u.choose_index(SCHEMES.len()) else {
        return;
    };
    let scheme = &SCHEMES[pick];
    let Ok(raw_key) = u.arbitrary::<Vec<u8>>() else {
        return;
    };
    let raw_key = match scheme {
        Scheme::Standard => {
            use base64::Engine;
            let encoded = base64::engine::general_purpose::STANDARD.encode(&raw_key);
            format!("whsec_{encoded}").into_bytes()
        }
        _ => raw_key,
    };
    let Ok(key) = scheme.prepare_key(&Secret::new(raw_key)) else {
        return;
    };
    let Ok(id) = u.arbitrary::<String>() else {
        return;
    };
    let ts: i64 = u.arbitrary().unwrap_or(0);
    let body = u.take_rest();

    let mut headers = HeaderMap::new();
    // Public-key and token schemes cannot be signed here.
    let Ok(signed) = scheme.sign(&key, body, Some(&id), ts) else {
        return;
    };
    for (name, value) in signed {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) else {
            // An id no HTTP header can carry.
            return;
        };
        headers.insert(name, value);
    }
    let keys = [Secret::new(b"another key".to_vec()), key];
    match scheme.verify(&keys, Duration::from_secs(300), &headers, body, ts) {
        Ok(verified) => {
            assert_eq!(verified.secret_index, 1);
            if scheme.signs_timestamp() {
                assert_eq!(verified.timestamp, Some(ts));
            }
        }
        // Senders write times as unsigned numbers, up to what every format
        // (milliseconds, RFC 3339's four-digit years) can write.
        Err(Error::MalformedSignature(_) | Error::TimestampOutsideWindow { .. })
            if scheme.signs_timestamp() && !(0..=MAX_TIME).contains(&ts) => {}
        // An empty id header is no id.
        Err(_) if id.is_empty() => {}
        // The body is not the JSON the scheme needs for its id.
        Err(Error::MalformedBody(_)) => {}
        Err(e) => panic!("a signed request was refused: {e:?}"),
    }
});
