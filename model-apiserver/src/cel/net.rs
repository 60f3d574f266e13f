//! `library.IP` and `library.CIDR`: `ip(s)`, `isIP(s)`, `cidr(s)`, `isCIDR(s)` and their
//! methods, with Go's `net/netip` parsing (a port of `ParseAddr` and `ParsePrefix`, for their
//! exact error messages; std's parser accepts the same addresses but says only "invalid IP
//! address syntax").
//!
//! Upstream refuses zones (`fe80::1%eth0`) and IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`), so
//! an address here is an IPv4 or a plain IPv6 one, and std's types hold it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::Env;
use cel::common::types::STRING_TYPE;
use cel::objects::Opaque;

use super::library::{DeclarationError, KubeValue, error, go_quote, overload};

/// An IP address (`net.IP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ip(IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        Self::TYPE_NAME
    }
}

impl KubeValue for Ip {
    const TYPE_NAME: &'static str = "net.IP";
}

/// A network, an address and a prefix length (`net.CIDR`). The address keeps the bits past the
/// prefix, as `netip.Prefix` does (`masked()` clears them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        Self::TYPE_NAME
    }
}

impl KubeValue for Cidr {
    const TYPE_NAME: &'static str = "net.CIDR";
}

/// A parsed address as `netip.ParseAddr` returns it (before upstream's checks).
struct Parsed {
    addr: IpAddr,
    zone: String,
}

/// `parseAddrError.Error()`.
fn addr_error(input: &str, msg: &str, at: &str) -> String {
    if at.is_empty() {
        format!("ParseAddr({}): {msg}", go_quote(input))
    } else {
        format!("ParseAddr({}): {msg} (at {})", go_quote(input), go_quote(at))
    }
}

/// `netip.ParseAddr`.
fn parse_addr(s: &str) -> Result<Parsed, String> {
    for c in s.bytes() {
        match c {
            b'.' => return parse_ipv4(s).map(|a| Parsed { addr: IpAddr::V4(a), zone: String::new() }),
            b':' => return parse_ipv6(s),
            b'%' => return Err(addr_error(s, "missing IPv6 address", "")),
            _ => {}
        }
    }
    Err(addr_error(s, "unable to parse IP", ""))
}

/// `parseIPv4`.
fn parse_ipv4(s: &str) -> Result<Ipv4Addr, String> {
    let b = s.as_bytes();
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for (i, &c) in b.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                return Err(addr_error(s, "IPv4 field has octet with leading zero", ""));
            }
            val = val * 10 + u32::from(c - b'0');
            digits += 1;
            if val > 255 {
                return Err(addr_error(s, "IPv4 field has value >255", ""));
            }
        } else if c == b'.' {
            if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                return Err(addr_error(s, "IPv4 field must have at least one digit", &s[i..]));
            }
            if pos == 3 {
                return Err(addr_error(s, "IPv4 address too long", ""));
            }
            fields[pos] = val as u8;
            pos += 1;
            val = 0;
            digits = 0;
        } else {
            return Err(addr_error(s, "unexpected character", &s[i..]));
        }
    }
    if pos < 3 {
        return Err(addr_error(s, "IPv4 address too short", ""));
    }
    fields[3] = val as u8;
    Ok(Ipv4Addr::from(fields))
}

/// `parseIPv6`.
fn parse_ipv6(input: &str) -> Result<Parsed, String> {
    let (mut s, zone) = match input.split_once('%') {
        Some((_, "")) => return Err(addr_error(input, "zone must be a non-empty string", "")),
        Some((s, zone)) => (s, zone),
        None => (input, ""),
    };
    let done = |ip: [u8; 16]| Ok(Parsed { addr: IpAddr::V6(Ipv6Addr::from(ip)), zone: zone.to_owned() });
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return done(ip);
        }
    }
    let mut i = 0;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc = 0u32;
        while off < b.len() {
            let Some(digit) = char::from(b[off]).to_digit(16) else { break };
            acc = (acc << 4) + digit;
            if acc > 0xffff {
                return Err(addr_error(input, "IPv6 field has value >=2^16", s));
            }
            off += 1;
        }
        if off == 0 {
            return Err(addr_error(input, "each colon-separated field must have at least one digit", s));
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return Err(addr_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    s,
                ));
            }
            if i + 4 > 16 {
                return Err(addr_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                ));
            }
            let ip4 = parse_ipv4(s).map_err(|e| addr_error(input, &e, s))?;
            ip[i..i + 4].copy_from_slice(&ip4.octets());
            s = "";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(addr_error(input, "unexpected character, want colon", s));
        } else if s.len() == 1 {
            return Err(addr_error(input, "colon must be followed by more characters", s));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(addr_error(input, "multiple :: in address", s));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(addr_error(input, "trailing garbage after address", s));
    }
    if i < 16 {
        let Some(ellipsis) = ellipsis else {
            return Err(addr_error(input, "address string too short", ""));
        };
        let n = 16 - i;
        ip.copy_within(ellipsis..i, ellipsis + n);
        ip[ellipsis..ellipsis + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(addr_error(input, "the :: must expand to at least one field of zeros", ""));
    }
    done(ip)
}

/// `Addr.Is4In6`.
fn is_4in6(addr: IpAddr) -> bool {
    matches!(addr, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// `parseIPAddr`: an address upstream accepts, or its message.
fn parse_ip(raw: &str) -> Result<Ip, String> {
    let parsed = parse_addr(raw).map_err(|e| {
        format!("IP Address {} parse error during conversion from string: {e}", go_quote(raw))
    })?;
    if !parsed.zone.is_empty() {
        return Err(format!("IP address {} with zone value is not allowed", go_quote(raw)));
    }
    if is_4in6(parsed.addr) {
        return Err(format!("IPv4-mapped IPv6 address {} is not allowed", go_quote(raw)));
    }
    Ok(Ip(parsed.addr))
}

/// `netip.ParsePrefix`.
fn parse_prefix(s: &str) -> Result<Cidr, String> {
    let fail = |msg: &str| Err(format!("netip.ParsePrefix({}): {msg}", go_quote(s)));
    let Some(i) = s.rfind('/') else { return fail("no '/'") };
    let parsed = match parse_addr(&s[..i]) {
        Ok(parsed) => parsed,
        Err(e) => return fail(&e),
    };
    if !parsed.zone.is_empty() {
        return fail("IPv6 zones cannot be present in a prefix");
    }
    let bits_str = &s[i + 1..];
    let bad_bits = || format!("bad bits after slash: {}", go_quote(bits_str));
    // `strconv.Atoi`, then no sign or leading zero.
    let digits = bits_str.strip_prefix(['+', '-']).unwrap_or(bits_str);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return fail(&bad_bits());
    }
    if bits_str.len() > 1 && !(b'1'..=b'9').contains(&bits_str.as_bytes()[0]) {
        return fail(&bad_bits());
    }
    let max = if parsed.addr.is_ipv4() { 32 } else { 128 };
    match digits.parse::<u32>() {
        Ok(bits) if bits <= max => Ok(Cidr { addr: parsed.addr, bits: bits as u8 }),
        _ => fail("prefix length out of range"),
    }
}

/// `parseCIDR`: a network upstream accepts, or its message.
fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let cidr = parse_prefix(raw)
        .map_err(|e| format!("network address parse error during conversion from string: {e}"))?;
    if is_4in6(cidr.addr) {
        return Err(format!("IPv4-mapped IPv6 address {} is not allowed", go_quote(raw)));
    }
    Ok(cidr)
}

/// `Addr.String`: dotted decimal, or RFC 5952's IPv6 form.
fn addr_string(addr: IpAddr) -> String {
    let IpAddr::V6(v6) = addr else { return addr.to_string() };
    let groups = v6.segments();
    // The longest run of at least two zero groups, the first of equals.
    let (mut best_start, mut best_len) = (8, 0);
    let mut i = 0;
    while i < 8 {
        let mut j = i;
        while j < 8 && groups[j] == 0 {
            j += 1;
        }
        if j - i >= 2 && j - i > best_len {
            (best_start, best_len) = (i, j - i);
        }
        i = j.max(i + 1);
    }
    let mut out = String::new();
    let mut i = 0;
    while i < 8 {
        if i == best_start {
            out.push_str("::");
            i += best_len;
            continue;
        }
        if i > 0 && !out.ends_with(':') {
            out.push(':');
        }
        out.push_str(&format!("{:x}", groups[i]));
        i += 1;
    }
    out
}

fn bits_of(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

impl Cidr {
    fn width(self) -> u32 {
        if self.addr.is_ipv4() { 32 } else { 128 }
    }

    /// The address bits past the prefix cleared: `Prefix.Masked`.
    fn masked(self) -> Cidr {
        let host_bits = self.width() - u32::from(self.bits);
        let mask = if host_bits >= 128 { 0 } else { u128::MAX << host_bits };
        let bits = bits_of(self.addr) & mask;
        let addr = match self.addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(bits as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(bits)),
        };
        Cidr { addr, bits: self.bits }
    }

    /// `Prefix.Contains`: same family, same leading bits.
    fn contains(self, ip: IpAddr) -> bool {
        self.addr.is_ipv4() == ip.is_ipv4()
            && (Cidr { addr: ip, bits: self.bits }).masked().addr == self.masked().addr
    }

    fn to_go_string(self) -> String {
        format!("{}/{}", addr_string(self.addr), self.bits)
    }
}

overload! {
    fn ip(s: String) -> Ip {
        parse_ip(&s).map_err(|e| error("ip", e))
    }
}

overload! {
    fn is_ip(s: String) -> bool {
        Ok(parse_ip(&s).is_ok())
    }
}

overload! {
    /// `ip.isCanonical(string)`: whether the string is the address as Go prints it.
    fn ip_is_canonical(s: String) -> bool {
        let ip = parse_ip(&s).map_err(|e| error("ip.isCanonical", e))?;
        Ok(addr_string(ip.0) == s)
    }
}

overload! {
    fn ip_to_string(ip: Ip) -> String {
        Ok(addr_string(ip.0))
    }
}

overload! {
    fn family(ip: Ip) -> i64 {
        Ok(if ip.0.is_ipv4() { 4 } else { 6 })
    }
}

overload! {
    fn is_unspecified(ip: Ip) -> bool {
        Ok(ip.0.is_unspecified())
    }
}

overload! {
    fn is_loopback(ip: Ip) -> bool {
        Ok(ip.0.is_loopback())
    }
}

overload! {
    /// 224.0.0.0/24, or ff02::/16 in any scope flags (`ff?2::`).
    fn is_link_local_multicast(ip: Ip) -> bool {
        Ok(match ip.0 {
            IpAddr::V4(v4) => matches!(v4.octets(), [224, 0, 0, _]),
            IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
        })
    }
}

overload! {
    /// 169.254.0.0/16 or fe80::/10.
    fn is_link_local_unicast(ip: Ip) -> bool {
        Ok(match ip.0 {
            IpAddr::V4(v4) => matches!(v4.octets(), [169, 254, _, _]),
            IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
        })
    }
}

overload! {
    /// `Addr.IsGlobalUnicast`: neither unspecified, broadcast, loopback, multicast nor link-local
    /// unicast (private ranges are global unicast, as in Go).
    fn is_global_unicast(ip: Ip) -> bool {
        let link_local = match ip.0 {
            IpAddr::V4(v4) => matches!(v4.octets(), [169, 254, _, _]),
            IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
        };
        let broadcast = ip.0 == IpAddr::V4(Ipv4Addr::BROADCAST);
        Ok(!ip.0.is_unspecified() && !broadcast && !ip.0.is_loopback() && !ip.0.is_multicast() && !link_local)
    }
}

overload! {
    fn cidr(s: String) -> Cidr {
        parse_cidr(&s)
            .map_err(|e| error("cidr", format!("network address parse error during conversion from string: {e}")))
    }
}

overload! {
    fn is_cidr(s: String) -> bool {
        Ok(parse_cidr(&s).is_ok())
    }
}

overload! {
    fn cidr_to_string(c: Cidr) -> String {
        Ok(c.to_go_string())
    }
}

overload! {
    fn contains_ip(c: Cidr, ip: Ip) -> bool {
        Ok(c.contains(ip.0))
    }
}

overload! {
    fn contains_ip_string(c: Cidr, s: String) -> bool {
        let ip = parse_ip(&s).map_err(|e| error("containsIP", e))?;
        Ok(c.contains(ip.0))
    }
}

/// `cidrContainsCIDR`, as kube-apiserver 1.33 computes it: the prefixes overlap
/// (`Prefix.Overlaps`: of one family, equal once both are masked to the shorter length) and
/// `other`'s is at least as long, so `other`'s network lies in `c`'s
/// (`cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.1/32'))` holds, as its library test
/// says).
fn contains_cidr_of(c: Cidr, other: Cidr) -> bool {
    c.bits <= other.bits && c.masked() == (Cidr { addr: other.addr, bits: c.bits }).masked()
}

overload! {
    fn contains_cidr(c: Cidr, other: Cidr) -> bool {
        Ok(contains_cidr_of(c, other))
    }
}

overload! {
    fn contains_cidr_string(c: Cidr, s: String) -> bool {
        let other = parse_cidr(&s).map_err(|e| {
            error("containsCIDR", format!("network address parse error during conversion from string: {e}"))
        })?;
        Ok(contains_cidr_of(c, other))
    }
}

overload! {
    fn cidr_ip(c: Cidr) -> Ip {
        Ok(Ip(c.addr))
    }
}

overload! {
    fn masked(c: Cidr) -> Cidr {
        Ok(c.masked())
    }
}

overload! {
    fn prefix_length(c: Cidr) -> i64 {
        Ok(i64::from(c.bits))
    }
}

/// Declares the two libraries on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let (ip_t, cidr_t) = (Ip::cel_type, Cidr::cel_type);
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload("ip.isCanonical", "ip_is_canonical", vec![STRING_TYPE], ip_is_canonical)?;
    env.add_overload("string", "ip_to_string", vec![ip_t()], ip_to_string)?;
    env.add_member_overload("family", "ip_family", ip_t(), vec![], family)?;
    env.add_member_overload("isUnspecified", "ip_is_unspecified", ip_t(), vec![], is_unspecified)?;
    env.add_member_overload("isLoopback", "ip_is_loopback", ip_t(), vec![], is_loopback)?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        ip_t(),
        vec![],
        is_link_local_multicast,
    )?;
    env.add_member_overload(
        "isLinkLocalUnicast",
        "ip_is_link_local_unicast",
        ip_t(),
        vec![],
        is_link_local_unicast,
    )?;
    env.add_member_overload("isGlobalUnicast", "ip_is_global_unicast", ip_t(), vec![], is_global_unicast)?;
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![cidr_t()], cidr_to_string)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_ip", cidr_t(), vec![ip_t()], contains_ip)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        cidr_t(),
        vec![STRING_TYPE],
        contains_ip_string,
    )?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr", cidr_t(), vec![cidr_t()], contains_cidr)?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr_t(),
        vec![STRING_TYPE],
        contains_cidr_string,
    )?;
    env.add_member_overload("ip", "cidr_ip", cidr_t(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr_t(), vec![], masked)?;
    env.add_member_overload("prefixLength", "cidr_prefix_length", cidr_t(), vec![], prefix_length)?;
    Ok(())
}
