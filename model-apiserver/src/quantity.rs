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
/// `Quantity` print their own forms, not Go's canonical one, which the answers must match. The
/// parsing is the CEL library's (`resource.ParseQuantity`'s rules and rounding).
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

    /// Parse a quantity's text as `resource.ParseQuantity` does (the CEL library's exact parser,
    /// [`crate::cel`]'s `quantity`), `None` if it does not parse. Digits below a billionth round
    /// up, as apimachinery rounds them. The format is the suffix's: binary (`Ki`...), an exponent
    /// (`e3`), or decimal.
    pub fn parse(text: &str) -> Option<Amount> {
        let value = crate::cel::parse_quantity(text).ok()?;
        let nanos = value.nanos().unwrap_or(if value.is_negative() { -NANOS_MAX } else { NANOS_MAX });
        let suffix = text.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'));
        let format = if suffix.ends_with('i') {
            Format::BinarySi
        } else if suffix.starts_with(['e', 'E']) && suffix != "E" {
            Format::DecimalExponent
        } else {
            Format::DecimalSi
        };
        Some(Amount { nanos: nanos.clamp(-NANOS_MAX, NANOS_MAX), format })
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
