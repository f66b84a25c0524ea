//! Percent-encoding for the links the console makes, and the decoding of
//! query strings, form bodies and path segments it receives.

/// `s` percent-encoded for a path segment or a query value: every byte but
/// the unreserved ones (RFC 3986 §2.3) becomes `%XX`.
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` (and `+` as a space when `plus` is set); `None` when the
/// result is not UTF-8. A `%` not followed by two hex digits stays as it is.
pub fn dec(s: &str, plus: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex_val(bytes[i + 1]), hex_val(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

fn hex_val(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// The pairs of an `application/x-www-form-urlencoded` string (a query or
/// a form body); pairs that do not decode are left out.
pub fn pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Some((dec(k, true)?, dec(v, true)?))
        })
        .collect()
}

/// The first non-empty value of `name` among `pairs`.
pub fn value(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in ["evt_1", "a/b c", "<script>alert(1)</script>", "é?&=#%", ""] {
            assert_eq!(dec(&enc(s), false).as_deref(), Some(s));
        }
        assert_eq!(enc("a b/c"), "a%20b%2Fc");
    }

    #[test]
    fn forms() {
        let p = pairs("csrf=ab&id=1-0&source=a+b%2B&empty=&bad=%FF");
        assert_eq!(value(&p, "id").as_deref(), Some("1-0"));
        assert_eq!(value(&p, "source").as_deref(), Some("a b+"));
        assert_eq!(value(&p, "empty"), None);
        assert_eq!(value(&p, "bad"), None);
        assert_eq!(dec("100%", false).as_deref(), Some("100%"));
        assert_eq!(dec("%4", false).as_deref(), Some("%4"));
    }
}
