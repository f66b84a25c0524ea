//! The generic sender, from an arbitrary `[source.generic]` table: the config
//! refuses it with problems, or the scheme it builds signs and verifies
//! (round trip with arbitrary body, id and time), and verifies arbitrary
//! headers without panicking.
#![no_main]

use std::time::Duration;

use hookgate::config::Config;
use hookgate::scheme::Error;
use hookgate_fuzz::{FixedSecrets, headers, toml_string};
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let (Ok(template), Ok(prefix), Ok(flags), Ok(pointer)) = (
        u.arbitrary::<String>(),
        u.arbitrary::<Option<String>>(),
        u.arbitrary::<u8>(),
        u.arbitrary::<String>(),
    ) else {
        return;
    };
    let mut generic = format!(
        "[source.generic]\nsignature_header = \"X-Sig\"\nencoding = \"{}\"\nsigned_payload = {}\n",
        if flags & 1 == 0 { "hex" } else { "base64" },
        toml_string(&template)
    );
    if let Some(prefix) = &prefix {
        generic += &format!("signature_prefix = {}\n", toml_string(prefix));
    }
    if flags & 2 != 0 {
        generic += "timestamp_header = \"X-Ts\"\n";
    }
    match (flags >> 2) & 3 {
        1 => generic += "event_id = { header = \"X-Id\" }\n",
        2 => generic += &format!("event_id = {{ pointer = {} }}\n", toml_string(&pointer)),
        _ => {}
    }
    if flags & 16 != 0 {
        generic += &format!("event_type = {{ pointer = {} }}\n", toml_string(&pointer));
    }
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:8080\"\nupstream = \"http://127.0.0.1:3000\"\n\n\
         [[source]]\nname = \"g\"\npath = \"/g\"\nscheme = \"generic\"\nsecrets = [\"k\"]\n\n{generic}"
    );
    let config = match Config::from_toml_str(&text, &FixedSecrets) {
        Ok(config) => config,
        Err(problems) => {
            assert!(!problems.0.is_empty());
            let _ = problems.to_string();
            return;
        }
    };
    let source = &config.sources[0];
    let scheme = &source.scheme;

    let (Ok(id), Ok(ts)) = (u.arbitrary::<String>(), u.arbitrary::<i64>()) else {
        return;
    };
    let fuzzed = headers(&mut u);
    let body = u.take_rest();
    let _ = scheme.verify(&source.keys, source.tolerance, &fuzzed, body, ts);

    let mut signed = HeaderMap::new();
    for (name, value) in scheme.sign(&source.keys[0], body, Some(&id), ts) {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) else {
            return;
        };
        signed.insert(name, value);
    }
    match scheme.verify(&source.keys, Duration::from_secs(300), &signed, body, ts) {
        Ok(v) => assert_eq!(v.secret_index, 0),
        Err(Error::MalformedSignature(_)) if ts < 0 && scheme.signs_timestamp() => {}
        Err(_) if id.is_empty() => {}
        Err(Error::MalformedBody(_)) => {}
        Err(e) => panic!("generic round trip refused: {e:?}\n{text}"),
    }
});
