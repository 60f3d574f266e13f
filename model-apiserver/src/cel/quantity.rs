//! `library.Quantity`: Kubernetes resource quantities (`quantity('1.5Gi')`) as exact CEL values,
//! parsed as apimachinery's `resource.ParseQuantity` parses them.
//!
//! Written here rather than reused: the model's `crate::quantity::value` is an `f64`, enough to
//! compare a claim with a volume but not for CEL, where `quantity('0.1').add(quantity('0.2')) ==
//! quantity('0.3')` must hold and `isInteger` must be exact. (controllers' quantity module wraps
//! that same `f64` parser, and model-apiserver must not depend on controllers.)
//!
//! A quantity is `unscaled × 10^-scale` in an `i128`: apimachinery's `inf.Dec` is unbounded, so a
//! quantity with more than 38 significant digits, or an arithmetic result beyond 10^38 at the
//! operands' precision, is an error here and a value there. No resource is stated that way.

use std::cmp::Ordering;

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::objects::Opaque;
use cel::{Env, ExecutionError};

use super::library::{DeclarationError, KubeValue, error, overload};

/// `resource.ErrFormatWrong`.
pub(crate) const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `resource.ErrNumeric`.
const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
/// `resource.ErrSuffix`.
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";
/// The finest precision a quantity keeps (nano): finer values round up, away from zero.
const SCALE_MAX: i64 = 9;
/// Decimal digits an `i128` always holds.
const DIGITS_MAX: usize = 38;

/// An exact quantity, `unscaled × 10^-scale`, normalized (no trailing zero digit in `unscaled`,
/// zero is `0 × 10^0`) so that equal values are equal structs, as `Quantity.Equal` compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Quantity {
    unscaled: i128,
    scale: i64,
}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        Self::TYPE_NAME
    }
}

impl KubeValue for Quantity {
    const TYPE_NAME: &'static str = "kubernetes.Quantity";
}

const ZERO: Quantity = Quantity { unscaled: 0, scale: 0 };

impl Quantity {
    fn new(unscaled: i128, scale: i64) -> Quantity {
        let (mut unscaled, mut scale) = (unscaled, scale);
        if unscaled == 0 {
            return ZERO;
        }
        while unscaled % 10 == 0 {
            unscaled /= 10;
            scale -= 1;
        }
        Quantity { unscaled, scale }
    }

    /// `Quantity.Sign`.
    fn sign(self) -> i64 {
        self.unscaled.signum() as i64
    }

    /// `Quantity.AsInt64`: the value if it is an integer that fits an `i64`.
    fn as_i64(self) -> Option<i64> {
        if self.scale > 0 {
            return None;
        }
        let factor = pow10(self.scale.unsigned_abs())?;
        i64::try_from(self.unscaled.checked_mul(i128::try_from(factor).ok()?)?).ok()
    }

    /// `Quantity.AsApproximateFloat64` (correctly rounded, where Go multiplies by a power of ten).
    fn as_f64(self) -> f64 {
        format!("{}e{}", self.unscaled, -self.scale).parse().unwrap_or(f64::NAN)
    }

    /// `self + other`, exactly.
    fn checked_add(self, other: Quantity) -> Option<Quantity> {
        let scale = self.scale.max(other.scale);
        let a =
            self.unscaled.checked_mul(i128::try_from(pow10((scale - self.scale).unsigned_abs())?).ok()?)?;
        let b =
            other.unscaled.checked_mul(i128::try_from(pow10((scale - other.scale).unsigned_abs())?).ok()?)?;
        Some(Quantity::new(a.checked_add(b)?, scale))
    }

    /// The value in billionths (every parsed quantity has at most nine decimals), `None` past
    /// an `i128`.
    pub(crate) fn nanos(self) -> Option<i128> {
        let shift = SCALE_MAX.checked_sub(self.scale)?;
        let factor = i128::try_from(pow10(u64::try_from(shift).ok()?)?).ok()?;
        self.unscaled.checked_mul(factor)
    }

    /// Whether the value is below zero.
    pub(crate) fn is_negative(self) -> bool {
        self.unscaled < 0
    }

    fn neg(self) -> Quantity {
        Quantity { unscaled: -self.unscaled, scale: self.scale }
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// `Quantity.Cmp`.
impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (self.unscaled.signum(), other.unscaled.signum());
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let magnitude = cmp_magnitude(
            self.unscaled.unsigned_abs(),
            self.scale,
            other.unscaled.unsigned_abs(),
            other.scale,
        );
        if a < 0 { magnitude.reverse() } else { magnitude }
    }
}

/// `x × 10^-xs` against `y × 10^-ys`: the operand of the smaller scale is brought to the larger
/// one; if that overflows, it is the larger (the other fits at that scale).
fn cmp_magnitude(x: u128, xs: i64, y: u128, ys: i64) -> Ordering {
    let up = |v: u128, by: i64| pow10(by.unsigned_abs()).and_then(|f| v.checked_mul(f));
    match xs.cmp(&ys) {
        Ordering::Equal => x.cmp(&y),
        Ordering::Less => up(x, ys - xs).map_or(Ordering::Greater, |x| x.cmp(&y)),
        Ordering::Greater => up(y, xs - ys).map_or(Ordering::Less, |y| x.cmp(&y)),
    }
}

fn pow10(exponent: u64) -> Option<u128> {
    10u128.checked_pow(u32::try_from(exponent).ok()?)
}

/// `resource.ParseQuantity`, with its error's message.
pub(crate) fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(ERR_FORMAT_WRONG);
    }
    if s == "0" {
        return Ok(ZERO);
    }
    let parts = split(s)?;
    let (binary, exponent) = interpret(parts.suffix).ok_or(ERR_SUFFIX)?;
    // The significant digits, without leading zeros; trailing zeros move into the scale.
    let digits = format!("{}{}", parts.num, parts.denom);
    let digits = digits.trim_start_matches('0');
    let significant = digits.trim_end_matches('0');
    let mut scale = parts.denom.len() as i64 - (digits.len() - significant.len()) as i64;
    if !binary {
        scale -= i64::from(exponent);
    }
    if significant.is_empty() {
        return Ok(ZERO);
    }
    // A decimal quantity rounds to nano before it becomes a number, so that a long fraction
    // (`0.0000000000001`) needs no more digits than it keeps.
    let (kept, rounded_up) = if !binary && scale > SCALE_MAX {
        let drop = usize::try_from(scale - SCALE_MAX).unwrap_or(usize::MAX);
        scale = SCALE_MAX;
        (&significant[..significant.len().saturating_sub(drop)], true)
    } else {
        (significant, false)
    };
    if kept.len() > DIGITS_MAX {
        return Err(ERR_NUMERIC);
    }
    let mut unscaled: i128 = if kept.is_empty() { 0 } else { kept.parse().map_err(|_| ERR_NUMERIC)? };
    if rounded_up {
        // The dropped digits end in a non-zero one: round the magnitude up.
        unscaled += 1;
    }
    if binary {
        unscaled = unscaled.checked_mul(1i128 << exponent).ok_or(ERR_NUMERIC)?;
        (unscaled, scale) = round_up_to_nano(unscaled, scale);
        // `maxAllowed`: a binary quantity is capped at the largest int64.
        if Quantity::new(unscaled, scale) > Quantity::new(i128::from(i64::MAX), 0) {
            (unscaled, scale) = (i128::from(i64::MAX), 0);
        }
    }
    if !parts.positive {
        unscaled = -unscaled;
    }
    Ok(Quantity::new(unscaled, scale))
}

/// `unscaled × 10^-scale` rounded to at most nano precision, away from zero.
fn round_up_to_nano(unscaled: i128, scale: i64) -> (i128, i64) {
    if scale <= SCALE_MAX {
        return (unscaled, scale);
    }
    let Some(divisor) = pow10((scale - SCALE_MAX).unsigned_abs()) else {
        return (unscaled.signum(), SCALE_MAX);
    };
    let magnitude = unscaled.unsigned_abs();
    let kept = magnitude / divisor + u128::from(!magnitude.is_multiple_of(divisor));
    (i128::try_from(kept).unwrap_or(i128::MAX) * unscaled.signum(), SCALE_MAX)
}

struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// `parseQuantityString`: sign, integer digits, fraction digits and suffix.
fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut parts = Parts { positive: true, num: "0", denom: "", suffix: "" };
    let mut pos = 0;
    match b.first() {
        Some(b'-') => {
            parts.positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(parts);
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos > start {
        parts.num = &s[start..pos];
    }
    if pos >= end {
        return Ok(parts);
    }
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        parts.denom = &s[start..pos];
        if pos >= end {
            return Ok(parts);
        }
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(ERR_FORMAT_WRONG);
    }
    parts.suffix = &s[suffix_start..];
    Ok(parts)
}

/// `suffixHandler.interpret`: (binary, exponent of 2 or 10).
fn interpret(suffix: &str) -> Option<(bool, i32)> {
    let decimal = match suffix {
        "" => Some(0),
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(exponent) = decimal {
        return Some((false, exponent));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(exponent) = binary {
        return Some((true, exponent));
    }
    let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
    // Go's `int32(strconv.ParseInt(rest, 10, 64))`.
    let digits = rest.strip_prefix('+').unwrap_or(rest);
    digits.parse::<i64>().ok().map(|e| (false, e as i32))
}

fn overflow(function: &str) -> ExecutionError {
    error(function, "quantity out of the range the model computes exactly (38 significant digits)")
}

overload! {
    /// `quantity(string)`.
    fn quantity(s: String) -> Quantity {
        parse(&s).map_err(|e| error("quantity", e))
    }
}

overload! {
    fn is_quantity(s: String) -> bool {
        Ok(parse(&s).is_ok())
    }
}

overload! {
    fn sign(q: Quantity) -> i64 {
        Ok(q.sign())
    }
}

overload! {
    fn is_integer(q: Quantity) -> bool {
        Ok(q.as_i64().is_some())
    }
}

overload! {
    fn as_integer(q: Quantity) -> i64 {
        q.as_i64().ok_or_else(|| error("asInteger", "cannot convert value to integer"))
    }
}

overload! {
    fn as_approximate_float(q: Quantity) -> f64 {
        Ok(q.as_f64())
    }
}

overload! {
    fn add(q: Quantity, other: Quantity) -> Quantity {
        q.checked_add(other).ok_or_else(|| overflow("add"))
    }
}

overload! {
    fn add_int(q: Quantity, other: i64) -> Quantity {
        q.checked_add(Quantity::new(other.into(), 0)).ok_or_else(|| overflow("add"))
    }
}

overload! {
    fn sub(q: Quantity, other: Quantity) -> Quantity {
        q.checked_add(other.neg()).ok_or_else(|| overflow("sub"))
    }
}

overload! {
    fn sub_int(q: Quantity, other: i64) -> Quantity {
        q.checked_add(Quantity::new(-i128::from(other), 0)).ok_or_else(|| overflow("sub"))
    }
}

overload! {
    fn mul(q: Quantity, factor: i64) -> Quantity {
        let unscaled = q.unscaled.checked_mul(factor.into()).ok_or_else(|| overflow("mul"))?;
        Ok(Quantity::new(unscaled, q.scale))
    }
}

overload! {
    fn is_less_than(q: Quantity, other: Quantity) -> bool {
        Ok(q < other)
    }
}

overload! {
    fn is_greater_than(q: Quantity, other: Quantity) -> bool {
        Ok(q > other)
    }
}

overload! {
    fn compare_to(q: Quantity, other: Quantity) -> i64 {
        Ok(q.cmp(&other) as i64)
    }
}

/// Declares the library on `env`. Upstream's `div` and `divInt` (rounding divisions) are not
/// modelled.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = Quantity::cel_type;
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], quantity)?;
    env.add_overload("isQuantity", "is_quantity_string", vec![STRING_TYPE], is_quantity)?;
    // Upstream declares `sign` as a global overload (`sign(q)`) and documents `q.sign()`.
    env.add_overload("sign", "quantity_sign", vec![q()], sign)?;
    env.add_member_overload("sign", "quantity_sign_member", q(), vec![], sign)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], as_integer)?;
    env.add_member_overload("asApproximateFloat", "quantity_get_float", q(), vec![], as_approximate_float)?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add_int)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub_int)?;
    env.add_member_overload("mul", "quantity_multiply_int", q(), vec![INT_TYPE], mul)?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], is_less_than)?;
    env.add_member_overload("isGreaterThan", "quantity_is_greater_than", q(), vec![q()], is_greater_than)?;
    env.add_member_overload("compareTo", "quantity_compare_to", q(), vec![q()], compare_to)?;
    Ok(())
}
