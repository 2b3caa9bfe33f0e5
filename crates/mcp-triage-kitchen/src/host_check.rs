//! DNS-rebinding protection, shared by `/mcp` and the admin API under `/kitchen/*`.
//!
//! A web page on `http://evil.example` whose name an attacker re-points at 127.0.0.1 can make a
//! browser send requests to the kitchen that carry `Host: evil.example:8765` and
//! `Origin: http://evil.example`. Both endpoints can change what the server does (the admin API
//! most of all: `PUT /kitchen/selection`), so both refuse a request whose `Host`, or `Origin`
//! when present, names anything but this machine's loopback, the bound address or a value the
//! operator allowed ([`KitchenOptions::allowed_hosts`], [`KitchenOptions::allowed_origins`]).
//!
//! Loopback names accepted: `localhost` (any case), `[::1]` in any IPv6 spelling (and
//! `[::ffff:127.x.y.z]`), and every IPv4 address in 127.0.0.0/8 written in any of the forms
//! `inet_aton(3)` and the WHATWG URL parser accept: `127.0.0.1`, `127.1`, `127.0.1`,
//! `2130706433`, `0x7f.1`, `0177.0.0.1`, with or without a trailing dot and a port. A name whose
//! last label is numeric can never be a DNS name an attacker registers (URL parsers treat it as
//! an IPv4 address or refuse it), so accepting these spellings opens nothing.
//!
//! [`KitchenOptions::allowed_hosts`]: crate::KitchenOptions::allowed_hosts
//! [`KitchenOptions::allowed_origins`]: crate::KitchenOptions::allowed_origins

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use axum::http::{header, HeaderMap};

use crate::state::Shared;

/// The sentence both endpoints answer a refused request with (status 403).
pub(crate) const FORBIDDEN: &str = "Forbidden: invalid Host or Origin header";

/// True when `Host` and (when present) `Origin` name this machine: its loopback, the bound
/// address, or an explicitly allowed value. A request without `Host` (HTTP/1.0) passes on `Host`.
pub(crate) fn request_allowed(shared: &Shared, headers: &HeaderMap) -> bool {
    let bound = shared.local_addr.lock().expect("addr lock").map(|a| a.ip());
    let host_ok = |h: &str| {
        ip_of_host(h).is_some_and(|ip| is_loopback(ip) || Some(ip) == bound)
            || h.eq_ignore_ascii_case("localhost")
            || shared
                .options
                .allowed_hosts
                .iter()
                .any(|a| a.eq_ignore_ascii_case(h))
    };
    if let Some(h) = headers.get(header::HOST) {
        let Ok(h) = h.to_str() else { return false };
        if !host_ok(host_of(h)) {
            return false;
        }
    }
    if let Some(o) = headers.get(header::ORIGIN) {
        let Ok(o) = o.to_str() else { return false };
        if shared.options.allowed_origins.iter().any(|a| a == o) {
            return true;
        }
        let Some(rest) = o
            .strip_prefix("http://")
            .or_else(|| o.strip_prefix("https://"))
        else {
            return false;
        };
        if !host_ok(host_of(rest.split('/').next().unwrap_or(""))) {
            return false;
        }
    }
    true
}

/// The host part of an authority (`host[:port]`, `[v6][:port]`), brackets removed.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(authority)
}

/// The address a host names when it is an IP literal: IPv6 (already without brackets) or IPv4
/// in any inet_aton form. `None` for a name.
fn ip_of_host(h: &str) -> Option<IpAddr> {
    if h.contains(':') {
        return h.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    ipv4_any_form(h).map(IpAddr::V4)
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.is_loopback(),
        IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|m| m.is_loopback()),
    }
}

/// IPv4 as `inet_aton(3)` and the WHATWG URL parser read it: one to four dot-separated parts,
/// each decimal, octal (leading `0`) or hex (`0x`); the last part fills the remaining bytes
/// (`127.1` is 127.0.0.1). One trailing dot is allowed. `None` when it is not such a literal.
fn ipv4_any_form(h: &str) -> Option<Ipv4Addr> {
    let h = h.strip_suffix('.').unwrap_or(h);
    let parts: Vec<&str> = h.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let numbers: Vec<u32> = parts.iter().map(|p| ipv4_part(p)).collect::<Option<_>>()?;
    let (last, leading) = numbers.split_last()?;
    if leading.iter().any(|&n| n > 255) {
        return None;
    }
    let last_bits = 8 * (4 - leading.len() as u32);
    if last_bits < 32 && *last >= 1 << last_bits {
        return None;
    }
    let high = leading
        .iter()
        .enumerate()
        .fold(0u32, |acc, (i, &n)| acc | (n << (24 - 8 * i as u32)));
    Some(Ipv4Addr::from(high | last))
}

fn ipv4_part(p: &str) -> Option<u32> {
    let (digits, radix) = if let Some(hex) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        (hex, 16)
    } else if p.len() > 1 && p.starts_with('0') {
        (&p[1..], 8)
    } else {
        (p, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback_host(authority: &str) -> bool {
        let h = host_of(authority);
        ip_of_host(h).is_some_and(is_loopback) || h.eq_ignore_ascii_case("localhost")
    }

    #[test]
    fn host_names_are_checked_without_port() {
        assert_eq!(host_of("localhost:3000"), "localhost");
        assert_eq!(host_of("[::1]:80"), "::1");
        assert_eq!(host_of("[::1]"), "::1");
        assert_eq!(host_of("127.1"), "127.1");
    }

    #[test]
    fn every_spelling_of_loopback_is_loopback() {
        for h in [
            "127.0.0.1",
            "127.0.0.1:8765",
            "127.1",
            "127.1:8765",
            "127.0.1",
            "127.0.1:80",
            "127.255.255.254",
            "127.16777214",
            "127.256",
            "2130706433",
            "0x7f.1",
            "0x7F000001",
            "0177.0.0.1",
            "127.0.0.1.",
            "localhost",
            "LocalHost:1",
            "[::1]",
            "[::1]:8765",
            "[0:0:0:0:0:0:0:1]:80",
            "[::ffff:127.0.0.1]",
        ] {
            assert!(loopback_host(h), "{h} is loopback");
        }
    }

    #[test]
    fn names_and_other_addresses_are_not_loopback() {
        for h in [
            "evil.example.com",
            "evil.example:8765",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "127.1.evil",
            "128.0.0.1",
            "10.0.0.1",
            "0.0.0.0",
            "127.16777216",
            "127.0.65536",
            "256.0.0.1",
            "1.2.3.4.5",
            "127..1",
            "0x",
            "09.0.0.1",
            "",
            "[::2]",
            "::1",
            "[::ffff:10.0.0.1]",
        ] {
            assert!(!loopback_host(h), "{h} is not loopback");
        }
    }

    #[test]
    fn short_forms_fill_the_last_bytes() {
        assert_eq!(ipv4_any_form("127.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(ipv4_any_form("127.0.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(ipv4_any_form("127.258"), Some(Ipv4Addr::new(127, 0, 1, 2)));
        assert_eq!(
            ipv4_any_form("10.1.65535"),
            Some(Ipv4Addr::new(10, 1, 255, 255))
        );
        assert_eq!(ipv4_any_form("4294967295"), Some(Ipv4Addr::BROADCAST));
        assert_eq!(ipv4_any_form("4294967296"), None);
    }
}
