//! `Config::from_toml_str` on arbitrary text: a config or a list of
//! problems, never a panic; rendering the problems never panics either.
#![no_main]

use hookgate::config::Config;
use hookgate_fuzz::FixedSecrets;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::from_toml_str(text, &FixedSecrets) {
        Ok(config) => {
            assert!(!config.sources.is_empty());
            let _ = format!("{config:?}");
        }
        Err(problems) => {
            let _ = problems.to_string();
        }
    }
});
