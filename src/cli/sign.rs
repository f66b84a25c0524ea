//! `hookgate sign`: the headers that make a valid request for a source.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

use crate::config::Config;

pub fn sign(
    path: &Path,
    source: &str,
    body_file: Option<&Path>,
    id: Option<&str>,
    timestamp: Option<i64>,
) -> ExitCode {
    let (config, index) = match load_source(path, "sign", source) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let found = &config.sources[index];
    let body = match read_body(body_file) {
        Ok(body) => body,
        Err(e) => {
            eprintln!("hookgate sign: {e}");
            return ExitCode::FAILURE;
        }
    };
    let no_key = crate::secret::Secret::new(Vec::new());
    // Schemes whose key comes from the provider hold no secret; `sign`
    // refuses them with its own reason.
    let key = match found.scheme.signing_key(&found.keys).or(found.keys.first()) {
        Some(key) => Some(key),
        None if found.scheme.fetches_keys() => Some(&no_key),
        None => None,
    };
    let Some(key) = key else {
        eprintln!("hookgate sign: source {source:?} has no secret");
        return ExitCode::FAILURE;
    };
    let timestamp = timestamp.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    });
    let lines = match found.scheme.sign(key, &body, id, timestamp) {
        Ok(lines) => lines,
        Err(why) => {
            eprintln!(
                "hookgate sign: source {source:?} uses scheme \"{}\": {why}",
                found.scheme.name()
            );
            return ExitCode::FAILURE;
        }
    };
    for (name, value) in lines {
        println!("{name}: {value}");
    }
    ExitCode::SUCCESS
}

/// The config at `path` and the index of its source `name`, for `hookgate
/// COMMAND`; what went wrong is printed.
pub(crate) fn load_source(
    path: &Path,
    command: &str,
    name: &str,
) -> Result<(Config, usize), ExitCode> {
    let config = Config::load(path).map_err(|e| {
        eprintln!("{}", e.display_in(path));
        ExitCode::FAILURE
    })?;
    match config.sources.iter().position(|s| s.name == name) {
        Some(index) => Ok((config, index)),
        None => {
            let names: Vec<&str> = config.sources.iter().map(|s| s.name.as_str()).collect();
            eprintln!(
                "hookgate {command}: no source named {name:?} (configured: {})",
                names.join(", ")
            );
            Err(ExitCode::FAILURE)
        }
    }
}

pub(crate) fn read_body(body_file: Option<&Path>) -> Result<Vec<u8>, String> {
    match body_file {
        Some(path) => {
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        }
        None if std::io::stdin().is_terminal() => {
            Err("give the body with --body-file FILE (or pipe it on standard input)".to_owned())
        }
        None => {
            let mut body = Vec::new();
            std::io::stdin()
                .read_to_end(&mut body)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
            Ok(body)
        }
    }
}
