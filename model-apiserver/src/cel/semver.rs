//! `library.SemverLib` (version 1, the base environment's since 1.33): `semver(s)`,
//! `semver(s, normalize)`, `isSemver(...)`, `major`/`minor`/`patch` and the comparisons, parsed
//! and ordered as `github.com/blang/semver/v4` does (a port, for its error messages: the `semver`
//! crate words them differently and orders build metadata, which blang ignores).

use std::cmp::Ordering;

use cel::Env;
use cel::common::types::{BOOL_TYPE, STRING_TYPE};
use cel::objects::Opaque;

use super::library::{DeclarationError, KubeValue, error, go_quote, overload};

/// A prerelease identifier: numeric ones order numerically and before alphanumeric ones.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pre {
    Num(u64),
    Alpha(String),
}

/// A semantic version (`kubernetes.Semver`). Equality is blang's `EQ`: build metadata aside.
#[derive(Clone, Debug)]
pub(crate) struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        Self::TYPE_NAME
    }
}

impl KubeValue for Semver {
    const TYPE_NAME: &'static str = "kubernetes.Semver";
}

/// blang's `Version.Compare`: major, minor, patch, then a release above its prereleases, then
/// the prerelease identifiers in turn (a longer list is greater when one is a prefix).
impl Ord for Semver {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch)).then_with(
            || match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self.pre.cmp(&other.pre),
            },
        )
    }
}

impl PartialOrd for Semver {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

const NUMBERS: &str = "0123456789";
const ALPHANUM: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

fn contains_only(s: &str, set: &str) -> bool {
    s.chars().all(|c| set.contains(c))
}

fn has_leading_zeroes(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` error, for a string of digits (or empty).
fn parse_u64(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| {
        let why = if s.is_empty() { "invalid syntax" } else { "value out of range" };
        format!("strconv.ParseUint: parsing {}: {why}", go_quote(s))
    })
}

/// A major, minor or patch number.
fn number(s: &str, which: &str) -> Result<u64, String> {
    if !contains_only(s, NUMBERS) {
        return Err(format!("Invalid character(s) found in {} number {}", which.to_lowercase(), go_quote(s)));
    }
    if has_leading_zeroes(s) {
        return Err(format!("{which} number must not contain leading zeroes {}", go_quote(s)));
    }
    parse_u64(s)
}

/// blang's `Parse`.
fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else { return Err("No Major.Minor.Patch elements found".into()) };
    let major = number(major, "Major")?;
    let minor = number(minor, "Minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    let patch = number(patch, "Patch")?;
    let mut version = Semver { major, minor, patch, pre: Vec::new() };
    for p in pre.into_iter().flat_map(|p| p.split('.')) {
        version.pre.push(prerelease(p)?);
    }
    for b in build.into_iter().flat_map(|b| b.split('.')) {
        if b.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !contains_only(b, ALPHANUM) {
            return Err(format!("Invalid character(s) found in build meta data {}", go_quote(b)));
        }
    }
    Ok(version)
}

/// blang's `NewPRVersion`.
fn prerelease(s: &str) -> Result<Pre, String> {
    if s.is_empty() {
        return Err("Prerelease is empty".into());
    }
    if contains_only(s, NUMBERS) {
        if has_leading_zeroes(s) {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {}",
                go_quote(s)
            ));
        }
        return parse_u64(s).map(Pre::Num);
    }
    if contains_only(s, ALPHANUM) {
        return Ok(Pre::Alpha(s.to_owned()));
    }
    Err(format!("Invalid character(s) found in prerelease {}", go_quote(s)))
}

/// `normalizeAndParse`: no `v` prefix, leading zeros dropped, missing minor and patch as 0.
fn normalize_and_parse(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() <= 1 {
                return p.to_owned();
            }
            let trimmed = p.trim_start_matches('0');
            if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                trimmed.to_owned()
            } else {
                format!("0{trimmed}")
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".to_owned());
    }
    parse(&parts.join("."))
}

fn semver_of(s: &str, normalize: bool) -> Result<Semver, String> {
    if normalize { normalize_and_parse(s) } else { parse(s) }
}

overload! {
    fn semver(s: String) -> Semver {
        parse(&s).map_err(|e| error("semver", e))
    }
}

overload! {
    fn semver_normalize(s: String, normalize: bool) -> Semver {
        semver_of(&s, normalize).map_err(|e| error("semver", e))
    }
}

overload! {
    fn is_semver(s: String) -> bool {
        Ok(parse(&s).is_ok())
    }
}

overload! {
    fn is_semver_normalize(s: String, normalize: bool) -> bool {
        Ok(semver_of(&s, normalize).is_ok())
    }
}

/// A version number as CEL's `int` (Go converts the `uint64` the same way, wrapping).
fn int(n: u64) -> i64 {
    n as i64
}

overload! {
    fn major(v: Semver) -> i64 {
        Ok(int(v.major))
    }
}

overload! {
    fn minor(v: Semver) -> i64 {
        Ok(int(v.minor))
    }
}

overload! {
    fn patch(v: Semver) -> i64 {
        Ok(int(v.patch))
    }
}

overload! {
    fn is_less_than(v: Semver, other: Semver) -> bool {
        Ok(v < other)
    }
}

overload! {
    fn is_greater_than(v: Semver, other: Semver) -> bool {
        Ok(v > other)
    }
}

overload! {
    fn compare_to(v: Semver, other: Semver) -> i64 {
        Ok(v.cmp(&other) as i64)
    }
}

/// Declares the library on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let v = Semver::cel_type;
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], semver)?;
    env.add_overload("semver", "string_bool_to_semver", vec![STRING_TYPE, BOOL_TYPE], semver_normalize)?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload("isSemver", "is_semver_string_bool", vec![STRING_TYPE, BOOL_TYPE], is_semver_normalize)?;
    env.add_member_overload("major", "semver_major", v(), vec![], major)?;
    env.add_member_overload("minor", "semver_minor", v(), vec![], minor)?;
    env.add_member_overload("patch", "semver_patch", v(), vec![], patch)?;
    env.add_member_overload("isLessThan", "semver_is_less_than", v(), vec![v()], is_less_than)?;
    env.add_member_overload("isGreaterThan", "semver_is_greater_than", v(), vec![v()], is_greater_than)?;
    env.add_member_overload("compareTo", "semver_compare_to", v(), vec![v()], compare_to)?;
    Ok(())
}
