//! Sender address allowlists: a source's `allow_ips`, and the client address
//! they are checked against (DESIGN §2, §3).
//!
//! The client is the TCP peer, unless the peer is one of `[server]
//! trusted_proxies`: then `X-Forwarded-For` (every such header, each a comma
//! list, in order) is walked from the right, past every entry that is itself
//! a trusted proxy, and the first entry that is not one is the client. Every
//! entry to the left of it was written by whoever sent the request to that
//! client, so it proves nothing; the entries to its right were appended by
//! proxies the operator trusts. When every entry is trusted, the left-most is
//! the client. An entry that is not an address ends the walk and leaves no
//! client address, which no allowlist admits.
//!
//! IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, how a dual-stack listener
//! sees an IPv4 peer) are compared as the IPv4 address they carry.

use std::net::{IpAddr, SocketAddr};

use http::HeaderMap;
use ipnet::IpNet;

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// A set of IPv4 and IPv6 networks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ranges(Vec<IpNet>);

impl Ranges {
    pub fn new(nets: Vec<IpNet>) -> Ranges {
        Ranges(nets)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` (IPv4-mapped IPv6 as IPv4) is inside one of the networks.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// Parses one range as the config writes it: a CIDR (`10.0.0.0/8`,
/// `2600:1f18::/32`) or a bare address (`/32`, `/128`). A CIDR with bits set
/// past its prefix is refused: `3.18.12.63/23` is more likely a typo for `/32`
/// than a wish for the 512 addresses around it.
pub fn parse_range(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(IpNet::from(ip.to_canonical()));
    }
    let net: IpNet = text.parse().map_err(|_| {
        format!(
            "\"{text}\" is not an IP address or CIDR range such as \"192.0.2.0/24\" or \
             \"2001:db8::/32\""
        )
    })?;
    if net.trunc() != net {
        return Err(format!(
            "\"{text}\" has bits set past its /{} prefix; write the network \"{}\", or the \
             address alone for just that address",
            net.prefix_len(),
            net.trunc()
        ));
    }
    Ok(net)
}

/// The client address of a request that came from `peer`, as described in
/// the module docs. `None`: the walk met an entry that is not an address
/// (or no peer is known), so no client address can be vouched for.
pub fn client_address(
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    trusted: &Ranges,
) -> Option<IpAddr> {
    let peer = peer?.to_canonical();
    if !trusted.contains(peer) {
        return Some(peer);
    }
    let mut leftmost = peer;
    for value in headers.get_all(X_FORWARDED_FOR).iter().rev() {
        // A value that is not visible ASCII is no list of addresses.
        let list = value.to_str().ok()?;
        // Empty list elements are allowed and carry nothing (RFC 9110 §5.6.1).
        for entry in list.rsplit(',').map(str::trim).filter(|e| !e.is_empty()) {
            let ip = parse_entry(entry)?.to_canonical();
            if !trusted.contains(ip) {
                return Some(ip);
            }
            leftmost = ip;
        }
    }
    Some(leftmost)
}

/// One `X-Forwarded-For` entry: an address, or an address with a port as
/// some proxies write it (`192.0.2.1:4711`, `[2001:db8::1]:4711`), or a
/// bracketed IPv6 address.
fn parse_entry(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = entry.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    entry
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .and_then(|e| e.parse::<std::net::Ipv6Addr>().ok())
        .map(IpAddr::V6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(list: &[&str]) -> Ranges {
        Ranges::new(
            list.iter()
                .map(|r| parse_range(r).expect("a valid range"))
                .collect(),
        )
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    fn xff(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(X_FORWARDED_FOR, v.parse().expect("a header value"));
        }
        headers
    }

    #[test]
    fn ranges_parse_cidrs_and_bare_addresses() {
        assert_eq!(
            parse_range("192.0.2.7").map(|n| n.to_string()),
            Ok("192.0.2.7/32".into())
        );
        assert_eq!(
            parse_range("2001:db8::1").map(|n| n.to_string()),
            Ok("2001:db8::1/128".into())
        );
        assert_eq!(
            parse_range("::ffff:192.0.2.7").map(|n| n.to_string()),
            Ok("192.0.2.7/32".into())
        );
        assert_eq!(
            parse_range(" 10.0.0.0/8 ").map(|n| n.to_string()),
            Ok("10.0.0.0/8".into())
        );
        assert_eq!(
            parse_range("2600:1f18::/32").map(|n| n.to_string()),
            Ok("2600:1f18::/32".into())
        );
        assert_eq!(
            parse_range("0.0.0.0/0").map(|n| n.to_string()),
            Ok("0.0.0.0/0".into())
        );
        for bad in [
            "",
            "10.0.0.0/33",
            "2001:db8::/129",
            "10.0.0/8",
            "example.com",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "256.0.0.1",
        ] {
            assert!(parse_range(bad).is_err(), "{bad:?} was accepted");
        }
        let host_bits = parse_range("3.18.12.63/23").expect_err("host bits refused");
        assert!(host_bits.contains("\"3.18.12.0/23\""), "{host_bits}");
    }

    #[test]
    fn membership_compares_mapped_ipv6_as_ipv4() {
        let r = ranges(&["127.0.0.2", "10.0.0.0/8", "2001:db8::/32"]);
        assert!(r.contains(ip("127.0.0.2")));
        assert!(r.contains(ip("::ffff:127.0.0.2")));
        assert!(!r.contains(ip("127.0.0.3")));
        assert!(!r.contains(ip("::ffff:127.0.0.3")));
        assert!(r.contains(ip("10.255.0.1")));
        assert!(!r.contains(ip("11.0.0.1")));
        assert!(r.contains(ip("2001:db8:ffff::1")));
        assert!(!r.contains(ip("2001:db9::1")));
        // An IPv4 range never matches a plain IPv6 address and vice versa.
        assert!(!ranges(&["0.0.0.0/0"]).contains(ip("::1")));
        assert!(!ranges(&["::/0"]).contains(ip("127.0.0.1")));
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted = ranges(&["10.0.0.0/8"]);
        let forged = xff(&["203.0.113.9"]);
        assert_eq!(
            client_address(Some(ip("198.51.100.1")), &forged, &trusted),
            Some(ip("198.51.100.1"))
        );
        assert_eq!(
            client_address(Some(ip("198.51.100.1")), &forged, &Ranges::default()),
            Some(ip("198.51.100.1"))
        );
        assert_eq!(
            client_address(Some(ip("::ffff:198.51.100.1")), &forged, &trusted),
            Some(ip("198.51.100.1"))
        );
        assert_eq!(client_address(None, &forged, &trusted), None);
    }

    #[test]
    fn a_trusted_peer_is_walked_from_the_right() {
        let trusted = ranges(&["10.0.0.0/8", "2001:db8::/32"]);
        let peer = Some(ip("10.0.0.1"));
        // The right-most untrusted entry is the client, not the left-most
        // (which the client itself may have written).
        let headers = xff(&["192.0.2.66, 198.51.100.7, 10.1.1.1"]);
        assert_eq!(
            client_address(peer, &headers, &trusted),
            Some(ip("198.51.100.7"))
        );
        // Several headers are one list, in order.
        let headers = xff(&["192.0.2.66", "198.51.100.7,10.1.1.1", " 10.2.2.2 "]);
        assert_eq!(
            client_address(peer, &headers, &trusted),
            Some(ip("198.51.100.7"))
        );
        // Every entry trusted: the left-most is the client.
        let headers = xff(&["10.3.3.3, 2001:db8::5", "10.1.1.1"]);
        assert_eq!(
            client_address(peer, &headers, &trusted),
            Some(ip("10.3.3.3"))
        );
        // No header: the peer.
        assert_eq!(
            client_address(peer, &HeaderMap::new(), &trusted),
            Some(ip("10.0.0.1"))
        );
        // Empty elements are skipped; ports and brackets are read.
        let headers = xff(&["198.51.100.7:4711, , [2001:db8::9]:80,"]);
        assert_eq!(
            client_address(peer, &headers, &trusted),
            Some(ip("198.51.100.7"))
        );
        let headers = xff(&["[2001:db9::9]"]);
        assert_eq!(
            client_address(peer, &headers, &trusted),
            Some(ip("2001:db9::9"))
        );
        // Mapped entries compare as IPv4, on the peer and in the list.
        let headers = xff(&["::ffff:198.51.100.7, ::ffff:10.1.1.1"]);
        assert_eq!(
            client_address(Some(ip("::ffff:10.0.0.1")), &headers, &trusted),
            Some(ip("198.51.100.7"))
        );
    }

    #[test]
    fn an_unparseable_entry_ends_the_walk_with_no_client() {
        let trusted = ranges(&["10.0.0.0/8"]);
        let peer = Some(ip("10.0.0.1"));
        for list in ["198.51.100.7, unknown", "_hidden", "198.51.100.7 10.1.1.1"] {
            assert_eq!(
                client_address(peer, &xff(&[list]), &trusted),
                None,
                "{list}"
            );
        }
        // Left of the client, garbage is never read.
        assert_eq!(
            client_address(peer, &xff(&["garbage, 198.51.100.7"]), &trusted),
            Some(ip("198.51.100.7"))
        );
        // A value that is not visible ASCII is not a list of addresses.
        let mut headers = xff(&["garbage"]);
        headers.append(
            X_FORWARDED_FOR,
            http::HeaderValue::from_bytes(b"198.51.100.7\xff").expect("obs-text is allowed"),
        );
        assert_eq!(client_address(peer, &headers, &trusted), None);
    }
}
