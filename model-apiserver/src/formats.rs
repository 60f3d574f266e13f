//! The string `format`s a custom resource's schema is validated with: the formats
//! apiextensions-apiserver keeps in a CRD (`supportedVersionedFormats`; any other format, such as
//! `int32`, is stripped and checks nothing), each checked as kube-openapi's `strfmt.Default`
//! registry checks it.
//!
//! Written here rather than taken from crates: the checks must accept exactly what the Go
//! functions accept (`net.ParseIP` with leading zeros allowed, `net.ParseMAC`'s three layouts,
//! `url.ParseRequestURI`, govalidator's patterns), which no crate promises. `email` follows
//! `net/mail.ParseAddress` for the address forms (`a@b.c`, `Name <a@b.c>`, quoted local parts,
//! domain literals), not for RFC 5322 comments and group syntax.

use std::net::Ipv6Addr;

/// Whether `value` is a valid `format` string, or `None` when the format is not one a CRD
/// validates (nothing to check). Names are normalized as go-openapi's registry does (`date-time`
/// is `datetime`).
pub(crate) fn validates(format: &str, value: &str) -> Option<bool> {
    let normalized: String = format.chars().filter(|c| *c != '-').collect();
    let ok = match normalized.as_str() {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => crate::cel::parse_request_uri(value).is_ok(),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => parse_ip_sloppy(value) && value.contains('.'),
        "ipv6" => parse_ip_sloppy(value) && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => pattern(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", value),
        "uuid3" => pattern(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$", value),
        "uuid4" => {
            pattern(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", value)
        }
        "uuid5" => {
            pattern(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", value)
        }
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        "ssn" => value.len() >= 9 && pattern(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", value),
        "hexcolor" => pattern(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", value),
        "rgbcolor" => pattern(
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
            value,
        ),
        "byte" => pattern(
            r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$",
            value,
        ),
        "password" => true,
        "date" => is_date(value),
        "datetime" => is_date_time(value),
        "duration" => crate::cel::parse_duration(value).is_some(),
        _ => return None,
    };
    Some(ok)
}

/// strfmt's `IsDate`: Go's `time.Parse("2006-01-02", ..)`, a real day.
fn is_date(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
        && chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d").is_ok()
}

/// strfmt's `IsDateTime`: a date, `T` (either case), then `hh:mm:ss`, an optional fraction and a
/// zone (`Z` or `+hh:mm`), hours to 23 and minutes and seconds to 59.
fn is_date_time(value: &str) -> bool {
    if value.len() < 4 {
        return false;
    }
    let lower = value.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else { return false };
    const TIME: &str = r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$";
    let Some(m) = crate::schema::compiled_pattern(TIME).ok().and_then(|r| r.captures(time)) else {
        return false;
    };
    is_date(date) && &m[1] <= "23" && &m[2] <= "59" && &m[3] <= "59"
}

/// `value` matches the fixed pattern `source` (compiled once per process, in the schema's
/// pattern cache).
fn pattern(source: &str, value: &str) -> bool {
    crate::schema::compiled_pattern(source).is_ok_and(|r| r.is_match(value))
}

/// strfmt's `IsHostname`: its RFC 1034 pattern (letters and symbols of any script, a top-level
/// label of letters), at most 255 bytes, labels of at most 63.
fn is_hostname(value: &str) -> bool {
    const HOSTNAME: &str = r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$";
    pattern(HOSTNAME, value) && value.len() <= 255 && value.split('.').all(|label| label.len() <= 63)
}

/// `net.ParseIP` as k8s.io/utils' `ParseIPSloppy` calls it: dotted IPv4 with leading zeros
/// allowed (read as decimal), or IPv6 (an embedded IPv4 included), no zone.
fn parse_ip_sloppy(value: &str) -> bool {
    if value.contains(':') {
        return match value.rfind(':') {
            // An IPv6 whose last part is dotted IPv4: that part is read sloppily too.
            Some(at) if value[at + 1..].contains('.') => {
                ipv4_sloppy(&value[at + 1..]).is_some()
                    && format!("{}0:0", &value[..=at]).parse::<Ipv6Addr>().is_ok()
            }
            _ => value.parse::<Ipv6Addr>().is_ok(),
        };
    }
    ipv4_sloppy(value).is_some()
}

/// Four dot-separated decimal fields of at most 255, leading zeros allowed (Go's `parseIPv4`
/// before 1.17, which `ParseIPSloppy` keeps).
fn ipv4_sloppy(value: &str) -> Option<[u8; 4]> {
    let mut octets = [0u8; 4];
    let mut fields = value.split('.');
    for octet in &mut octets {
        let field = fields.next()?;
        if field.is_empty() || field.len() > 3 || !field.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = field.parse().ok()?;
    }
    fields.next().is_none().then_some(octets)
}

/// `ParseCIDRSloppy`: a sloppy IP, `/`, a decimal prefix length within its family's bits.
fn is_cidr(value: &str) -> bool {
    let Some((ip, prefix)) = value.split_once('/') else { return false };
    let bits = if ip.contains(':') { 128 } else { 32 };
    let prefix_ok = !prefix.is_empty()
        && prefix.len() <= 3
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix.parse::<u32>().is_ok_and(|n| n <= bits);
    prefix_ok && parse_ip_sloppy(ip)
}

/// `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:..`, `xx-xx-..` or `xxxx.xxxx...`.
fn is_mac(value: &str) -> bool {
    let octets = |groups: Vec<&str>, width: usize| {
        groups
            .iter()
            .all(|g| g.len() == width && g.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| groups.len() * width / 2)
    };
    let count = if value.len() >= 14 && value.as_bytes()[4] == b'.' {
        octets(value.split('.').collect(), 4)
    } else if value.len() >= 14 && matches!(value.as_bytes()[2], b':' | b'-') {
        let separator = char::from(value.as_bytes()[2]);
        octets(value.split(separator).collect(), 2)
    } else {
        None
    };
    matches!(count, Some(6 | 8 | 20))
}

/// govalidator's `IsISBN10`: ten characters once spaces and hyphens go, the last a digit or
/// `X`, with a weighted checksum divisible by 11.
fn is_isbn10(value: &str) -> bool {
    let s: Vec<u8> = value.bytes().filter(|b| *b != b' ' && *b != b'-').collect();
    if s.len() != 10 || !s[..9].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let last = match s[9] {
        b'X' => 10,
        d if d.is_ascii_digit() => u32::from(d - b'0'),
        _ => return false,
    };
    let sum: u32 = s[..9].iter().zip(1..).map(|(d, w)| u32::from(d - b'0') * w).sum::<u32>() + last * 10;
    sum.is_multiple_of(11)
}

/// govalidator's `IsISBN13`: thirteen digits once spaces and hyphens go, with the EAN checksum.
fn is_isbn13(value: &str) -> bool {
    let s: Vec<u8> = value.bytes().filter(|b| *b != b' ' && *b != b'-').collect();
    if s.len() != 13 || !s.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 =
        s[..12].iter().enumerate().map(|(i, d)| u32::from(d - b'0') * if i % 2 == 0 { 1 } else { 3 }).sum();
    (10 - sum % 10) % 10 == u32::from(s[12] - b'0')
}

/// govalidator's `IsCreditCard`: one of the card patterns once non-digits go, and the Luhn check.
fn is_credit_card(value: &str) -> bool {
    let digits: String = value.chars().filter(char::is_ascii_digit).collect();
    const CARDS: &str = r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$";
    if !pattern(CARDS, &digits) {
        return false;
    }
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            let d = u32::from(d - b'0');
            if i % 2 == 1 { if d * 2 > 9 { d * 2 - 9 } else { d * 2 } } else { d }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// `net/mail.ParseAddress` for its address forms: `local@domain` or `Display Name
/// <local@domain>`, the local part a dot-atom or a quoted string, the domain a dot-atom or a
/// `[literal]`.
fn is_email(value: &str) -> bool {
    let value = value.trim();
    let spec = match (value.find('<'), value.strip_suffix('>')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        (None, None) => value,
        _ => return false,
    };
    let Some(at) = spec.rfind('@') else { return false };
    let (local, domain) = (&spec[..at], &spec[at + 1..]);
    let local_ok = if let Some(quoted) = local.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
        // Any text, a `"` or `\` inside only escaped.
        let mut chars = quoted.chars();
        let mut ok = true;
        while let Some(c) = chars.next() {
            match c {
                '\\' => ok &= chars.next().is_some(),
                '"' => ok = false,
                _ => {}
            }
        }
        ok
    } else {
        is_dot_atom(local)
    };
    let domain_ok = match domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        Some(literal) => !literal.contains(['[', ']', '\\']),
        None => is_dot_atom(domain),
    };
    local_ok && domain_ok
}

/// RFC 5322's dot-atom: atoms of `atext` joined by single dots.
fn is_dot_atom(s: &str) -> bool {
    let atext = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii();
    !s.is_empty() && s.split('.').all(|atom| !atom.is_empty() && atom.chars().all(atext))
}
