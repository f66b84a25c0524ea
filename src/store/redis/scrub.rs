//! Keeping credentials out of messages: a Redis URL and `[store] password`
//! can carry secrets, and nothing this store says may repeat them.

/// The strings that must not leave this module: each URL, its userinfo, and
/// the user name and password, raw and percent-decoded. Longest first, so a
/// URL is replaced whole before its parts.
pub(super) fn secrets_of(urls: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for url in urls {
        out.push((*url).to_string());
        let Some((_, rest)) = url.split_once("://") else {
            continue;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
        let Some((userinfo, _host)) = authority.rsplit_once('@') else {
            continue;
        };
        out.push(userinfo.to_string());
        for part in userinfo.split(':') {
            out.push(part.to_string());
            out.push(percent_decode(part));
        }
    }
    out.retain(|s| !s.is_empty());
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

pub(super) fn scrub(message: &str, secrets: &[String]) -> String {
    let mut message = message.to_string();
    for secret in secrets {
        message = message.replace(secret.as_str(), "[redacted]");
    }
    message
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
