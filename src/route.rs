//! Routing: which `[[source]]` a request target belongs to.
//!
//! Two rules, applied in this order:
//!
//! 1. **Only canonical targets are routed** ([`canonical`]). A target that a
//!    server or framework behind hookgate could read as a different path
//!    (dot segments, `//`, `\`, `;` parameters, percent-encoded characters that
//!    decode to something meaningful) is refused before routing, so no alias of
//!    a source path can reach the app unverified, and no verified event can be
//!    steered out of its source's prefix.
//! 2. **The longest source path that the canonical path belongs to wins**
//!    ([`Router::route`]). A path belongs to a source path when it equals it in
//!    ASCII case-insensitive comparison, extends it on a segment boundary, or
//!    extends its last segment with `.` and a suffix (`/webhooks/stripe.json`,
//!    a format suffix frameworks route to the same handler).
//!    `/webhooks/stripe` owns `/Webhooks/Stripe`, `/webhooks/stripe/x` and
//!    `/webhooks/stripe.json`, never `/webhooks/stripe-test`.

/// Why a request target is not in canonical form (the `bad_request` row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotCanonical {
    #[error("the request target is not a path starting with /")]
    NotOriginForm,
    #[error("the path has an empty segment (//)")]
    EmptySegment,
    #[error("the path has a . or .. segment")]
    DotSegment,
    #[error("the path holds a backslash")]
    Backslash,
    #[error("the path holds a ; parameter")]
    Parameter,
    #[error("the path holds a malformed percent escape")]
    BadEscape,
    #[error("the path percent-encodes a character that must appear as itself or not at all")]
    EncodedSpecial,
    #[error("the path holds a byte outside the URL path alphabet")]
    BadByte,
    #[error("an HTTP/1.1 request needs exactly one Host header")]
    HostCount,
    #[error("the target's authority is not a valid Host value")]
    BadAuthority,
}

/// Brings a request to origin form, or says why it cannot be routed:
///
/// - an HTTP/1.1 request has exactly one `Host`, an HTTP/1.0 one at most one;
/// - an absolute-form target (`POST http://host/path`, and every HTTP/2
///   request) gives its authority as the `Host` the app sees, replacing any
///   sent (RFC 9112 §3.2.2, §7.2), and its path as the target;
/// - authority-form (`CONNECT host:443`) and asterisk-form (`OPTIONS *`)
///   targets have no path to route;
/// - the path is [`canonical`].
pub fn origin_form(parts: &mut http::request::Parts) -> Result<(), NotCanonical> {
    let hosts = parts.headers.get_all(http::header::HOST).iter().count();
    match parts.version {
        http::Version::HTTP_11 if hosts != 1 => return Err(NotCanonical::HostCount),
        http::Version::HTTP_10 | http::Version::HTTP_09 if hosts > 1 => {
            return Err(NotCanonical::HostCount);
        }
        _ => {}
    }
    let Some(target) = parts.uri.path_and_query() else {
        return Err(NotCanonical::NotOriginForm);
    };
    canonical(target.path())?;
    if parts.uri.scheme().is_none() {
        return Ok(());
    }
    let target = target.clone();
    if let Some(authority) = parts.uri.authority() {
        if authority.as_str().contains('@') {
            return Err(NotCanonical::BadAuthority);
        }
        let host = http::HeaderValue::from_str(authority.as_str())
            .map_err(|_| NotCanonical::BadAuthority)?;
        parts.headers.insert(http::header::HOST, host);
    }
    parts.uri = http::Uri::from(target);
    Ok(())
}

/// Checks that `path` (the path of a request target, without its query) is
/// in the one form routing and the app agree on:
///
/// - it starts with `/`, and no segment but a final one is empty (no `//`);
/// - no segment is `.` or `..`;
/// - no `\` and no `;` (matrix parameters some servers strip before routing);
/// - every `%` starts a two-digit hex escape, and none encodes an unreserved
///   character (letters, digits, `-._~`: they must be written as themselves),
///   `/`, `\`, `;`, `%` (double encoding), or a control character (`%00`).
///
/// Everything else RFC 3986 allows in a path passes as it is, `%20` included.
pub fn canonical(path: &str) -> Result<(), NotCanonical> {
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') {
        return Err(NotCanonical::NotOriginForm);
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => return Err(NotCanonical::Backslash),
            b';' => return Err(NotCanonical::Parameter),
            b'%' => {
                let decoded = match (bytes.get(i + 1), bytes.get(i + 2)) {
                    (Some(&h), Some(&l)) => match (hex_value(h), hex_value(l)) {
                        (Some(h), Some(l)) => h << 4 | l,
                        _ => return Err(NotCanonical::BadEscape),
                    },
                    _ => return Err(NotCanonical::BadEscape),
                };
                if is_unreserved(decoded)
                    || matches!(decoded, b'/' | b'\\' | b';' | b'%')
                    || decoded < 0x20
                    || decoded == 0x7f
                {
                    return Err(NotCanonical::EncodedSpecial);
                }
                i += 3;
                continue;
            }
            b if !is_path_byte(b) => return Err(NotCanonical::BadByte),
            _ => {}
        }
        i += 1;
    }
    let segments = path[1..].split('/');
    let count = path[1..].split('/').count();
    for (n, segment) in segments.enumerate() {
        if segment.is_empty() && n + 1 != count {
            return Err(NotCanonical::EmptySegment);
        }
        if segment == "." || segment == ".." {
            return Err(NotCanonical::DotSegment);
        }
    }
    Ok(())
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 `pchar` and `/`, without `%` (checked as escapes) and `;`.
fn is_path_byte(b: u8) -> bool {
    is_unreserved(b)
        || matches!(
            b,
            b'/' | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b'='
                | b':'
                | b'@'
        )
}

/// Source paths by their ASCII-lowercased text, so a request finds its
/// source by a few lookups rather than a scan: its time depends on the
/// request's path (bounded by the longest source path), never on how many
/// sources there are.
#[derive(Debug, Clone, Default)]
pub struct Router {
    /// Lowercased source path to the index of the first source that has it.
    by_path: std::collections::HashMap<String, usize, foldhash::fast::RandomState>,
    /// The source at `/`, which every path belongs to.
    root: Option<usize>,
    /// The length of the longest source path: no longer prefix is looked up.
    longest: usize,
}

impl Router {
    /// A router over the sources' paths, in config order (the index of a
    /// path is its source's index). Of two paths equal but for case the
    /// first wins (the config refuses such a pair anyway).
    pub fn new<'a>(paths: impl Iterator<Item = &'a str>) -> Self {
        let mut router = Router::default();
        for (i, path) in paths.enumerate() {
            if path == "/" {
                router.root.get_or_insert(i);
                continue;
            }
            router.longest = router.longest.max(path.len());
            router.by_path.entry(path.to_ascii_lowercase()).or_insert(i);
        }
        router
    }

    /// The index of the source that the canonical `path` belongs to, if any:
    /// the longest source path among the prefixes of `path` that end where
    /// rule 2 of the module docs allows (the end, before a `/`, or before a
    /// `.` and a suffix), each looked up once, longest first.
    pub fn route(&self, path: &str) -> Option<usize> {
        if !self.by_path.is_empty() {
            let cut = self.cut(path);
            let lower = path[..cut].to_ascii_lowercase();
            for end in ends(path, cut) {
                if let Some(prefix) = lower.get(..end)
                    && let Some(i) = self.by_path.get(prefix)
                {
                    return Some(*i);
                }
            }
        }
        self.root
    }

    /// How many lookups [`Router::route`] makes for `path` at most: one per
    /// boundary within the longest source path's length, whatever the
    /// number of sources.
    pub fn probes(&self, path: &str) -> usize {
        ends(path, self.cut(path)).count()
    }

    /// The length of `path` that can hold a source path (on a char boundary).
    fn cut(&self, path: &str) -> usize {
        let mut cut = path.len().min(self.longest);
        while !path.is_char_boundary(cut) {
            cut -= 1;
        }
        cut
    }
}

/// The ends, longest first and at most `cut`, of the prefixes of `path` that
/// rule 2 of the module docs could match: the end of the path, before a `/`, or before
/// a `.` and a suffix. Each falls before an ASCII byte (or at the end), so on
/// a char boundary.
fn ends(path: &str, cut: usize) -> impl Iterator<Item = usize> + '_ {
    let q = path.as_bytes();
    (1..=cut).rev().filter(move |&end| match q.get(end) {
        None | Some(b'/') => true,
        Some(b'.') => q.len() > end + 1 && q[end + 1] != b'/',
        Some(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `path` belongs to the source at `prefix` (module docs, rule 2).
    fn belongs_to(prefix: &str, path: &str) -> bool {
        if prefix == "/" {
            return true;
        }
        let (p, q) = (prefix.as_bytes(), path.as_bytes());
        if q.len() < p.len() || !q[..p.len()].eq_ignore_ascii_case(p) {
            return false;
        }
        match q.get(p.len()) {
            None | Some(b'/') => true,
            // A format suffix on the last segment: `.` and at least one more byte.
            Some(b'.') => q.len() > p.len() + 1 && q[p.len() + 1] != b'/',
            Some(_) => false,
        }
    }

    fn parts(version: http::Version, target: &str, hosts: &[&str]) -> http::request::Parts {
        let mut builder = http::Request::builder()
            .method("POST")
            .uri(target)
            .version(version);
        for host in hosts {
            builder = builder.header("host", *host);
        }
        builder.body(()).expect("a valid request").into_parts().0
    }

    #[test]
    fn absolute_form_takes_the_targets_authority_as_host() {
        let mut p = parts(
            http::Version::HTTP_11,
            "http://evil.example/webhooks/stripe?x=1",
            &["hooks.example"],
        );
        assert_eq!(origin_form(&mut p), Ok(()));
        assert_eq!(p.uri.to_string(), "/webhooks/stripe?x=1");
        assert_eq!(p.headers["host"], "evil.example");
        let mut p = parts(
            http::Version::HTTP_11,
            "http://evil//webhooks/stripe",
            &["h"],
        );
        assert_eq!(origin_form(&mut p), Err(NotCanonical::EmptySegment));
        let mut p = parts(http::Version::HTTP_2, "https://hooks.example/webhooks", &[]);
        assert_eq!(origin_form(&mut p), Ok(()));
        assert_eq!(p.headers["host"], "hooks.example");
    }

    #[test]
    fn host_must_be_there_once_on_http_1_1() {
        let mut p = parts(http::Version::HTTP_11, "/webhooks", &[]);
        assert_eq!(origin_form(&mut p), Err(NotCanonical::HostCount));
        let mut p = parts(http::Version::HTTP_11, "/webhooks", &["a", "b"]);
        assert_eq!(origin_form(&mut p), Err(NotCanonical::HostCount));
        let mut p = parts(http::Version::HTTP_10, "/webhooks", &[]);
        assert_eq!(origin_form(&mut p), Ok(()));
        let mut p = parts(http::Version::HTTP_10, "/webhooks", &["a", "a"]);
        assert_eq!(origin_form(&mut p), Err(NotCanonical::HostCount));
        let mut p = parts(http::Version::HTTP_11, "/webhooks", &["a"]);
        assert_eq!(origin_form(&mut p), Ok(()));
        assert_eq!(p.headers["host"], "a");
    }

    #[test]
    fn connect_and_asterisk_targets_have_no_path() {
        let mut p = parts(http::Version::HTTP_11, "evil.example:443", &["h"]);
        assert_eq!(origin_form(&mut p), Err(NotCanonical::NotOriginForm));
        let mut p = parts(http::Version::HTTP_11, "*", &["h"]);
        assert_eq!(origin_form(&mut p), Err(NotCanonical::NotOriginForm));
    }

    fn router(paths: &[&str]) -> Router {
        Router::new(paths.iter().copied())
    }

    #[test]
    fn segment_boundaries() {
        let r = router(&["/webhooks/stripe", "/webhooks"]);
        assert_eq!(r.route("/webhooks/stripe"), Some(0));
        assert_eq!(r.route("/webhooks/stripe/x"), Some(0));
        assert_eq!(r.route("/webhooks/stripe/"), Some(0));
        assert_eq!(r.route("/webhooks/stripe-test"), Some(1));
        assert_eq!(r.route("/webhooks"), Some(1));
        assert_eq!(r.route("/webhooksx"), None);
        assert_eq!(r.route("/other"), None);
    }

    #[test]
    fn case_and_format_suffix_belong_to_the_source() {
        let r = router(&["/webhooks/stripe", "/webhooks"]);
        assert_eq!(r.route("/Webhooks/Stripe"), Some(0));
        assert_eq!(r.route("/WEBHOOKS/STRIPE/x"), Some(0));
        assert_eq!(r.route("/webhooks/stripe.json"), Some(0));
        assert_eq!(r.route("/webhooks/stripe.json/x"), Some(0));
        assert_eq!(r.route("/webhooks/Stripe.XML"), Some(0));
        // A bare trailing dot is no suffix (and `/.` is refused earlier).
        assert_eq!(r.route("/webhooks/stripe."), Some(1));
        assert_eq!(r.route("/webhooks/stripes"), Some(1));
    }

    #[test]
    fn longest_prefix_wins_whatever_the_order() {
        let r = router(&["/a", "/a/b/c", "/a/b"]);
        assert_eq!(r.route("/a/b/c/d"), Some(1));
        assert_eq!(r.route("/a/b/x"), Some(2));
        assert_eq!(r.route("/a/x"), Some(0));
        assert_eq!(r.route("/A/B/C.json"), Some(1));
    }

    /// The lookup finds what a scan of every source path, longest first,
    /// finds, over paths and sources drawn from a small alphabet so that
    /// prefixes, case, suffixes and boundaries meet often.
    #[test]
    fn the_lookup_agrees_with_a_scan_of_every_source() {
        fn scan(paths: &[String], path: &str) -> Option<usize> {
            let mut order: Vec<(usize, &String)> = paths.iter().enumerate().collect();
            order.sort_by_key(|(_, p)| std::cmp::Reverse(p.len()));
            order
                .into_iter()
                .find(|(_, p)| belongs_to(p, path))
                .map(|(i, _)| i)
        }
        let pieces = ["a", "B", "ab", "a.b", "x", "a.", ".json"];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..300 {
            let mut paths: Vec<String> = Vec::new();
            for _ in 0..1 + next(6) {
                let mut p = String::new();
                for _ in 0..1 + next(3) {
                    p.push('/');
                    p.push_str(pieces[next(pieces.len())]);
                }
                if !paths.iter().any(|q| q.eq_ignore_ascii_case(&p)) {
                    paths.push(p);
                }
            }
            if next(5) == 0 {
                paths.push("/".into());
            }
            let r = Router::new(paths.iter().map(String::as_str));
            for _ in 0..40 {
                let mut q = String::new();
                for _ in 0..1 + next(4) {
                    q.push('/');
                    q.push_str(pieces[next(pieces.len())]);
                }
                assert_eq!(r.route(&q), scan(&paths, &q), "{q} among {paths:?}");
            }
        }
    }

    #[test]
    fn root_catches_everything() {
        let r = router(&["/", "/github"]);
        assert_eq!(r.route("/github/x"), Some(1));
        assert_eq!(r.route("/anything"), Some(0));
    }

    #[test]
    fn canonical_targets_pass() {
        for path in [
            "/",
            "/webhooks/stripe",
            "/webhooks/stripe/",
            "/webhooks/stripe.json",
            "/a%20b",
            "/a%C3%A9",
            "/a/b:c@d!$&'()*+,=",
            "/..a/b..",
            "/.well-known/x",
        ] {
            assert_eq!(canonical(path), Ok(()), "{path}");
        }
    }

    #[test]
    fn every_alias_seen_is_refused() {
        use NotCanonical::*;
        for (path, why) in [
            ("/webhooks/%73tripe", EncodedSpecial),
            ("/x/../webhooks/stripe", DotSegment),
            ("/./webhooks/stripe", DotSegment),
            ("/webhooks/stripe/..", DotSegment),
            ("/webhooks/stripe/.", DotSegment),
            ("//webhooks/stripe", EmptySegment),
            ("/webhooks//stripe", EmptySegment),
            ("/webhooks\\stripe", Backslash),
            ("/webhooks/stripe;x=1", Parameter),
            ("/webhooks%2fstripe", EncodedSpecial),
            ("/webhooks%2Fstripe", EncodedSpecial),
            ("/webhooks%5cstripe", EncodedSpecial),
            ("/webhooks/%2e%2e/admin", EncodedSpecial),
            ("/webhooks/stripe%00", EncodedSpecial),
            ("/webhooks/stripe%0a", EncodedSpecial),
            ("/webhooks/stripe%3bx", EncodedSpecial),
            ("/webhooks/%252e%252e", EncodedSpecial),
            ("/webhooks/stripe%", BadEscape),
            ("/webhooks/stripe%4", BadEscape),
            ("/webhooks/stripe%zz", BadEscape),
            ("/webhooks/stripe\"", BadByte),
            ("/webhooks/github/../../admin/refund", DotSegment),
            ("*", NotOriginForm),
            ("", NotOriginForm),
            ("webhooks/stripe", NotOriginForm),
        ] {
            assert_eq!(canonical(path), Err(why), "{path}");
        }
    }
}
