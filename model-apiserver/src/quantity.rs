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
