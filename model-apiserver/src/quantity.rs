//! Resource quantities (`10Gi`, `500M`, `1.5e9`) as numbers, for the checks that compare them
//! (a claim's request, a volume's capacity) as apimachinery's `Quantity.Cmp` does.
//!
//! Written here rather than taken from a crate: k8s-openapi's `Quantity` is the string only, and
//! a comparison needs nothing but the value. An `f64` holds every binary size exactly and decimal
//! sizes to 15 significant digits, more than any request states.

/// The binary and decimal suffixes, binary ones first (`Ki` must win over `k`, and `Ei` over `E`,
/// the exa suffix).
const SUFFIXES: &[(&str, f64)] = &[
    ("Ki", 1024.0),
    ("Mi", 1_048_576.0),
    ("Gi", 1_073_741_824.0),
    ("Ti", 1_099_511_627_776.0),
    ("Pi", 1_125_899_906_842_624.0),
    ("Ei", 1_152_921_504_606_846_976.0),
    ("n", 1e-9),
    ("u", 1e-6),
    ("m", 1e-3),
    ("k", 1e3),
    ("M", 1e6),
    ("G", 1e9),
    ("T", 1e12),
    ("P", 1e15),
    ("E", 1e18),
];

/// The value of a quantity's text (`1Gi` is 1073741824.0), `None` if it does not parse.
/// Exponents (`1e3`, `1E3`) parse as numbers; a bare trailing `E` is the exa suffix.
pub fn value(text: &str) -> Option<f64> {
    for (suffix, factor) in SUFFIXES {
        if let Some(number) = text.strip_suffix(suffix) {
            return number.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    text.parse().ok()
}

/// How a quantity is written, which its sums keep (apimachinery's `resource.Format`): the
/// canonical text of a value depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Powers of 1000 (`500m`, `2k`, `1`): plain numbers and decimal suffixes.
    DecimalSi,
    /// Powers of 1024 (`1Gi`, `512Mi`).
    BinarySi,
    /// `e` exponents (`1e3`).
    DecimalExponent,
}

/// An exact quantity: its value in billionths (apimachinery's smallest scale, `n`), and the
/// format it was written in. Sums and comparisons are exact, and [`std::fmt::Display`] writes
/// apimachinery's canonical form (`Quantity.String()`: `1.5` is `1500m`, `1536Mi` stays, a sum of
/// `512Mi` and `512Mi` is `1Gi`), as ResourceQuota statuses and their refusals print them.
///
/// Written here rather than taken from a crate: the crates that do arithmetic on k8s-openapi's
/// `Quantity` print their own forms, not Go's canonical one, which the answers must match.
#[derive(Clone, Copy, Debug)]
pub struct Amount {
    nanos: i128,
    format: Format,
}

impl PartialEq for Amount {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Amount {}

impl PartialOrd for Amount {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Amount {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

/// Billionths in one.
const NANOS: i128 = 1_000_000_000;
/// The largest magnitude kept (apimachinery caps quantities at 2^63-1 units).
const NANOS_MAX: i128 = (i64::MAX as i128) * NANOS;

impl Amount {
    /// A whole number (an object count), as `resource.NewQuantity(n, DecimalSI)`.
    pub fn count(n: i64) -> Amount {
        Amount { nanos: i128::from(n) * NANOS, format: Format::DecimalSi }
    }

    /// Zero in `format`.
    pub fn zero(format: Format) -> Amount {
        Amount { nanos: 0, format }
    }

    /// Parse a quantity's text as `resource.ParseQuantity` does (`<sign><digits>[.<digits>]`
    /// and a binary, decimal or exponent suffix); `None` if it does not parse. Digits below a
    /// billionth round up, as apimachinery rounds them.
    pub fn parse(text: &str) -> Option<Amount> {
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return None;
        }
        let (format, base, power) = suffix_scale(suffix)?;
        // The value is digits × 10^(power - fraction digits) × base^…; kept as an exact
        // rational digits × scale / divisor, in billionths.
        let digits: String = [whole, fraction].concat();
        let mut mantissa: i128 = 0;
        for d in digits.bytes() {
            mantissa = mantissa.checked_mul(10)?.checked_add(i128::from(d - b'0'))?;
            if mantissa > NANOS_MAX * 1000 {
                return None;
            }
        }
        let exponent = power - i32::try_from(fraction.len()).ok()? + 9;
        let mut nanos = mantissa.checked_mul(base)?;
        if exponent >= 0 {
            nanos = nanos.checked_mul(10i128.checked_pow(u32::try_from(exponent).ok()?)?)?;
        } else {
            let divisor = 10i128.checked_pow(exponent.unsigned_abs())?;
            nanos = nanos / divisor + i128::from(nanos % divisor != 0);
        }
        let nanos = nanos.min(NANOS_MAX);
        Some(Amount { nanos: if negative { -nanos } else { nanos }, format })
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// The value in billionths.
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }
}

impl std::ops::Add for Amount {
    type Output = Amount;
    /// The sum, in this amount's format (the other's when this one is zero, as `Quantity.Add`).
    fn add(self, other: Amount) -> Amount {
        let format = if self.nanos == 0 { other.format } else { self.format };
        Amount { nanos: (self.nanos + other.nanos).clamp(-NANOS_MAX, NANOS_MAX), format }
    }
}

impl std::ops::Sub for Amount {
    type Output = Amount;
    /// The difference, in this amount's format (the other's when this one is zero).
    fn sub(self, other: Amount) -> Amount {
        let format = if self.nanos == 0 { other.format } else { self.format };
        Amount { nanos: (self.nanos - other.nanos).clamp(-NANOS_MAX, NANOS_MAX), format }
    }
}

/// A suffix's format, base and power of ten: `Ki` is (BinarySI, 1024, 0), `m` (DecimalSI, 1, -3),
/// `e3` (DecimalExponent, 1, 3).
fn suffix_scale(suffix: &str) -> Option<(Format, i128, i32)> {
    let binary = |n: u32| Some((Format::BinarySi, 1024i128.pow(n), 0));
    let decimal = |p: i32| Some((Format::DecimalSi, 1, p));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let power: i32 = exponent.parse().ok()?;
            (-40..=40).contains(&power).then_some((Format::DecimalExponent, 1, power))
        }
    }
}

impl std::fmt::Display for Amount {
    /// apimachinery's `CanonicalizeBytes`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let whole = (self.nanos % NANOS == 0).then_some(self.nanos / NANOS);
        let binary = self.format == Format::BinarySi && whole.is_some_and(|w| !(-1024 < w && w < 1024));
        if let (true, Some(mut amount)) = (binary, whole) {
            let mut exponent = 0;
            while exponent < 6 && amount % 1024 == 0 {
                amount /= 1024;
                exponent += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exponent];
            return write!(f, "{amount}{suffix}");
        }
        let (mut amount, mut exponent) = (self.nanos, -9i32);
        while amount % 10 == 0 {
            amount /= 10;
            exponent += 1;
        }
        // Down to a multiple of 3 (Go's `%` keeps the sign: -1 and 2 take two digits back).
        match exponent.rem_euclid(3) {
            1 => {
                amount *= 10;
                exponent -= 1;
            }
            2 => {
                amount *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        let suffix = match (self.format, exponent) {
            (Format::DecimalExponent, 0) => String::new(),
            (Format::DecimalExponent, e) => format!("e{e}"),
            (_, -9) => "n".to_owned(),
            (_, -6) => "u".to_owned(),
            (_, -3) => "m".to_owned(),
            (_, 0) => String::new(),
            (_, 3) => "k".to_owned(),
            (_, 6) => "M".to_owned(),
            (_, 9) => "G".to_owned(),
            (_, 12) => "T".to_owned(),
            (_, 15) => "P".to_owned(),
            (_, 18) => "E".to_owned(),
            (_, e) => format!("e{e}"),
        };
        write!(f, "{amount}{suffix}")
    }
}
