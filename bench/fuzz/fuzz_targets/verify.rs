//! `Scheme::verify` on arbitrary headers and bodies, for every scheme: it
//! refuses or accepts, and never panics.
#![no_main]

use std::time::Duration;

use hookgate_fuzz::{KEYS, NAMES, SCHEMES, headers};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(pick) = u.choose_index(SCHEMES.len()) else {
        return;
    };
    let scheme = &SCHEMES[pick];
    let keys = &KEYS[pick];
    let headers = headers(&mut u, &NAMES);
    let now: i64 = u.arbitrary().unwrap_or(0);
    let tolerance = Duration::from_secs(u.arbitrary::<u32>().unwrap_or(300).into());
    let body = u.take_rest();
    let _ = scheme.verify(keys, tolerance, &headers, body, now);
});
