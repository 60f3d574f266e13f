//! Label selectors (the full string syntax, which kube-core cannot parse) and field selectors
//! (on the fields each kind makes selectable: see [`crate::fields`]).
//!
//! Parsing follows apimachinery's `labels.Parse` and `fields.ParseSelector`, including their error
//! messages, so that a controller sending a bad selector sees the 400 a real server would send.
//! Matching follows apimachinery too: `!=` and `notin` match objects that lack the key.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiLabelSelector;
use kube_core::{DynamicObject, Status};
use regex::Regex;

use crate::{errors, fields::SelectableFields};

/// Longest label value and longest name part of a label key, as apimachinery allows.
const LABEL_VALUE_LEN_MAX: usize = 63;
/// Longest name part of a qualified name (a label key without its prefix).
const QUALIFIED_NAME_LEN_MAX: usize = 63;
/// Longest DNS-1123 subdomain (a label key's prefix).
const DNS1123_SUBDOMAIN_LEN_MAX: usize = 253;
/// Longest selector string we tokenize: far beyond any real selector, it bounds the lexer's work.
const SELECTOR_LEN_MAX: usize = 64 * 1024;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

// The patterns are constants; compiling them once per process holds no per-run state.
static QUALIFIED_NAME_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{QUALIFIED_NAME_FMT}$")).expect("constant regex"));
static LABEL_VALUE_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{LABEL_VALUE_FMT}$")).expect("constant regex"));
static DNS1123_SUBDOMAIN_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{DNS1123_SUBDOMAIN_FMT}$")).expect("constant regex"));

/// apimachinery's `RegexError`, with its examples (and its double spaces).
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: String = examples.iter().map(|e| format!("'{e}', ")).collect::<Vec<_>>().join(" or ");
    format!("{msg} (e.g. {examples}regex used for validation is '{fmt}')")
}

/// apimachinery's `IsDNS1123Subdomain`: the error messages, empty when `value` is valid.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_LEN_MAX {
        errs.push(format!("must be no more than {DNS1123_SUBDOMAIN_LEN_MAX} characters"));
    }
    if !DNS1123_SUBDOMAIN_RE.is_match(value) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// apimachinery's `IsQualifiedName` (the rule for label keys): the error messages, empty when
/// `value` is valid.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(dns1123_subdomain_errors(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > QUALIFIED_NAME_LEN_MAX {
        errs.push(format!("name part must be no more than {QUALIFIED_NAME_LEN_MAX} characters"));
    }
    if !QUALIFIED_NAME_RE.is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// apimachinery's `IsValidLabelValue`: the error messages, empty when `value` is valid.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_LEN_MAX {
        errs.push(format!("must be no more than {LABEL_VALUE_LEN_MAX} characters"));
    }
    if !LABEL_VALUE_RE.is_match(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// Go's `%q` for the strings we quote (close enough: Rust's debug escaping of a `str`).
fn go_quote(s: &str) -> String {
    format!("{s:?}")
}

/// Go's `%#v` of a `[]string`, as field errors print a values list.
fn go_string_slice(values: Option<&[String]>) -> String {
    match values {
        None => "[]string(nil)".to_owned(),
        Some(vs) => format!("[]string{{{}}}", vs.iter().map(|v| go_quote(v)).collect::<Vec<_>>().join(", ")),
    }
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    /// `key in (a,b)`: the key exists and its value is one of the set.
    In(String, BTreeSet<String>),
    /// `key notin (a,b)`: the key is absent or its value is none of the set.
    NotIn(String, BTreeSet<String>),
    /// `key=a` or `key==a`.
    Equals(String, String),
    /// `key!=a`: the key is absent or its value differs.
    NotEquals(String, String),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
    /// `key>5`: the value parses as an integer greater than 5.
    GreaterThan(String, i64),
    /// `key<5`: the value parses as an integer less than 5.
    LessThan(String, i64),
}

impl Requirement {
    fn key(&self) -> &str {
        match self {
            Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Equals(k, _)
            | Requirement::NotEquals(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k)
            | Requirement::GreaterThan(k, _)
            | Requirement::LessThan(k, _) => k,
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(self.key());
        match self {
            Requirement::In(_, set) => value.is_some_and(|v| set.contains(v)),
            Requirement::NotIn(_, set) => value.is_none_or(|v| !set.contains(v)),
            Requirement::Equals(_, want) => value == Some(want),
            Requirement::NotEquals(_, want) => value != Some(want),
            Requirement::Exists(_) => value.is_some(),
            Requirement::DoesNotExist(_) => value.is_none(),
            Requirement::GreaterThan(_, n) => {
                value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > *n)
            }
            Requirement::LessThan(_, n) => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < *n),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(",");
        match self {
            Requirement::In(k, set) => write!(f, "{k} in ({})", join(set)),
            Requirement::NotIn(k, set) => write!(f, "{k} notin ({})", join(set)),
            Requirement::Equals(k, v) => write!(f, "{k}={v}"),
            Requirement::NotEquals(k, v) => write!(f, "{k}!={v}"),
            Requirement::Exists(k) => write!(f, "{k}"),
            Requirement::DoesNotExist(k) => write!(f, "!{k}"),
            Requirement::GreaterThan(k, n) => write!(f, "{k}>{n}"),
            Requirement::LessThan(k, n) => write!(f, "{k}<{n}"),
        }
    }
}

/// The operators of a requirement, before values are attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Equals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// apimachinery's `NewRequirement`: validate the values for `op` and build the requirement.
/// `values` is `None` when the API form had no `values` field (Go's nil slice).
fn new_requirement(key: &str, op: Op, values: Option<&[String]>) -> Result<Requirement, String> {
    let mut errs = Vec::new();
    let key_errs = qualified_name_errors(key);
    if !key_errs.is_empty() {
        errs.push(format!("key: Invalid value: {}: {}", go_quote(key), key_errs.join("; ")));
    }
    let vals = values.unwrap_or_default();
    let listed = go_string_slice(values);
    match op {
        Op::In | Op::NotIn if vals.is_empty() => errs.push(format!(
            "values: Invalid value: {listed}: for 'in', 'notin' operators, values set can't be empty"
        )),
        Op::Equals | Op::NotEquals if vals.len() != 1 => errs.push(format!(
            "values: Invalid value: {listed}: exact-match compatibility requires one single value"
        )),
        Op::Exists | Op::DoesNotExist if !vals.is_empty() => errs.push(format!(
            "values: Invalid value: {listed}: values set must be empty for exists and does not exist"
        )),
        Op::GreaterThan | Op::LessThan => {
            if vals.len() != 1 {
                errs.push(format!(
                    "values: Invalid value: {listed}: for 'Gt', 'Lt' operators, exactly one value is required"
                ));
            }
            for (i, v) in vals.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(format!(
                        "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                        go_quote(v)
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in vals.iter().enumerate() {
        let value_errs = label_value_errors(v);
        if !value_errs.is_empty() {
            errs.push(format!(
                "values[{i}][{key}]: Invalid value: {}: {}",
                go_quote(v),
                value_errs.join("; ")
            ));
        }
    }
    match errs.as_slice() {
        [] => {}
        [one] => return Err(one.clone()),
        many => return Err(format!("[{}]", many.join(", "))),
    }
    let key = key.to_owned();
    let set = || vals.iter().cloned().collect::<BTreeSet<String>>();
    let first = || vals.first().cloned().unwrap_or_default();
    let number = || first().parse::<i64>().unwrap_or_default();
    Ok(match op {
        Op::In => Requirement::In(key, set()),
        Op::NotIn => Requirement::NotIn(key, set()),
        Op::Equals => Requirement::Equals(key, first()),
        Op::NotEquals => Requirement::NotEquals(key, first()),
        Op::Exists => Requirement::Exists(key),
        Op::DoesNotExist => Requirement::DoesNotExist(key),
        Op::GreaterThan => Requirement::GreaterThan(key, number()),
        Op::LessThan => Requirement::LessThan(key, number()),
    })
}

/// A token of the label selector syntax (apimachinery's lexer).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Identifier(String),
    In,
    NotIn,
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    OpenPar,
    ClosePar,
    Comma,
    End,
}

impl Token {
    /// The literal, as the parser's messages quote it (`''` at the end of the string).
    fn literal(&self) -> &str {
        match self {
            Token::Identifier(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Bang => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::GreaterThan => ">",
            Token::LessThan => "<",
            Token::OpenPar => "(",
            Token::ClosePar => ")",
            Token::Comma => ",",
            Token::End => "",
        }
    }

    /// In a values context the keywords `in` and `notin` are plain identifiers.
    fn into_value(self) -> Token {
        match self {
            Token::In => Token::Identifier("in".to_owned()),
            Token::NotIn => Token::Identifier("notin".to_owned()),
            other => other,
        }
    }

    fn is_identifier(&self) -> bool {
        matches!(self, Token::Identifier(_))
    }
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn special_token(s: &str) -> Option<Token> {
    Some(match s {
        "!" => Token::Bang,
        "!=" => Token::NotEquals,
        "=" => Token::Equals,
        "==" => Token::DoubleEquals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "(" => Token::OpenPar,
        ")" => Token::ClosePar,
        "," => Token::Comma,
        _ => return None,
    })
}

/// Split a selector into tokens. Every run of special characters splits into its longest known
/// operators, so (unlike a general lexer) this cannot fail.
fn lex(s: &str) -> Vec<Token> {
    let chars: Vec<char> = s.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_whitespace(c) {
            i += 1;
        } else if is_special(c) {
            // The longest operator starting here; every single special character is one.
            let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
            match special_token(&two) {
                Some(tok) if two.chars().count() == 2 => {
                    tokens.push(tok);
                    i += 2;
                }
                _ => {
                    tokens.push(special_token(&c.to_string()).unwrap_or(Token::End));
                    i += 1;
                }
            }
        } else {
            let start = i;
            while i < chars.len() && !is_whitespace(chars[i]) && !is_special(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier(word),
            });
        }
    }
    tokens.push(Token::End);
    tokens
}

/// A recursive-descent parser over the tokens, mirroring apimachinery's `Parser`.
struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Token {
        self.tokens.get(self.pos).cloned().unwrap_or(Token::End)
    }

    fn next(&mut self) -> Token {
        let tok = self.peek();
        self.pos = (self.pos + 1).min(self.tokens.len());
        tok
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        // Each pass consumes at least one token, so the token count bounds the loop.
        for _ in 0..self.tokens.len() {
            match self.peek().into_value() {
                Token::Identifier(_) | Token::Bang => {
                    let r =
                        self.parse_requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    match self.next().into_value() {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let after = self.peek().into_value();
                            if !after.is_identifier() && after != Token::Bang {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    after.literal()
                                ));
                            }
                        }
                        other => {
                            return Err(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                other.literal()
                            ));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                other => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        other.literal()
                    ));
                }
            }
        }
        Ok(requirements)
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let mut tok = self.next().into_value();
        let negated = tok == Token::Bang;
        if negated {
            tok = self.next().into_value();
        }
        let Token::Identifier(key) = tok else {
            return Err(format!("found '{}', expected: identifier", tok.literal()));
        };
        let key_errs = qualified_name_errors(&key);
        if !key_errs.is_empty() {
            return Err(format!("<nil>: Invalid value: {}: {}", go_quote(&key), key_errs.join("; ")));
        }
        // `!key` is complete by itself: whatever follows it is the caller's to reject (apimachinery
        // reports `found '=', expected: ',' or 'end of string'` for `!a=b`).
        let after = self.peek();
        if negated {
            return new_requirement(&key, Op::DoesNotExist, Some(&[]));
        }
        if after == Token::End || after == Token::Comma {
            return new_requirement(&key, Op::Exists, Some(&[]));
        }
        let op = match self.next() {
            Token::In => Op::In,
            Token::NotIn => Op::NotIn,
            Token::Equals | Token::DoubleEquals => Op::Equals,
            Token::NotEquals => Op::NotEquals,
            Token::GreaterThan => Op::GreaterThan,
            Token::LessThan => Op::LessThan,
            other => {
                return Err(format!("found '{}', expected: in, notin, =, ==, !=, gt, lt", other.literal()));
            }
        };
        let values = match op {
            Op::In | Op::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        let values: Vec<String> = values.into_iter().collect();
        new_requirement(&key, op, Some(&values))
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let open = self.next().into_value();
        if open != Token::OpenPar {
            return Err(format!("found '{}' expected: '('", open.literal()));
        }
        match self.peek().into_value() {
            Token::Identifier(_) | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let close = self.next().into_value();
                if close != Token::ClosePar {
                    return Err(format!("found '{}', expected: ')'", close.literal()));
                }
                Ok(set)
            }
            Token::ClosePar => {
                self.next();
                Ok(BTreeSet::from([String::new()]))
            }
            other => Err(format!("found '{}', expected: ',', ')' or identifier", other.literal())),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        // Each pass consumes at least one token, so the token count bounds the loop.
        for _ in 0..self.tokens.len() {
            match self.next().into_value() {
                Token::Identifier(v) => {
                    set.insert(v);
                    match self.peek().into_value() {
                        Token::Comma => {}
                        Token::ClosePar => return Ok(set),
                        other => return Err(format!("found '{}', expected: ',' or ')'", other.literal())),
                    }
                }
                // Empty members (`(,a)`, `(a,)`, `(a,,b)`) are the empty string, as in apimachinery.
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    match self.peek().into_value() {
                        Token::ClosePar => {
                            set.insert(String::new());
                            return Ok(set);
                        }
                        Token::Comma => {
                            self.next();
                            set.insert(String::new());
                        }
                        _ => {}
                    }
                }
                other => return Err(format!("found '{}', expected: ',', or identifier", other.literal())),
            }
        }
        Err("found '', expected: ',' or ')'".to_owned())
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let tok = self.peek().into_value();
        if tok == Token::End || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.next().into_value() {
            Token::Identifier(v) => Ok(BTreeSet::from([v])),
            other => Err(format!("found '{}', expected: identifier", other.literal())),
        }
    }
}

/// A parsed label selector: a conjunction of requirements on an object's labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parse the string form (`a=b,c!=d,e in (f,g),!h,i`), as `labels.Parse` does: `=`, `==`,
    /// `!=`, `in`, `notin`, `>`, `<`, `key` (exists) and `!key` (does not exist), separated by
    /// commas, whitespace ignored. The empty string selects everything.
    ///
    /// Bad syntax, keys or values give 400 BadRequest with apimachinery's message.
    pub fn parse(s: &str) -> Result<LabelSelector, Status> {
        if s.len() > SELECTOR_LEN_MAX {
            return Err(errors::bad_request(&format!(
                "label selector is longer than {SELECTOR_LEN_MAX} bytes"
            )));
        }
        let mut parser = Parser { tokens: lex(s), pos: 0 };
        let mut requirements = parser.parse().map_err(|m| errors::bad_request(&m))?;
        // apimachinery sorts by key; the order changes nothing but the printed form.
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(LabelSelector { requirements })
    }

    /// Convert the API form (`matchLabels` and `matchExpressions` with `In`, `NotIn`, `Exists`
    /// and `DoesNotExist`), as `metav1.LabelSelectorAsSelector` does. An empty selector selects
    /// everything.
    pub fn from_label_selector(sel: &ApiLabelSelector) -> Result<LabelSelector, Status> {
        let mut requirements = Vec::new();
        for (key, value) in sel.match_labels.iter().flatten() {
            let r = new_requirement(key, Op::Equals, Some(std::slice::from_ref(value)))
                .map_err(|m| errors::bad_request(&m))?;
            requirements.push(r);
        }
        for expr in sel.match_expressions.iter().flatten() {
            let op = match expr.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                other => {
                    return Err(errors::bad_request(&format!(
                        "{} is not a valid label selector operator",
                        go_quote(other)
                    )));
                }
            };
            let values = expr.values.as_deref().filter(|v| !v.is_empty());
            let r = new_requirement(&expr.key, op, values).map_err(|m| errors::bad_request(&m))?;
            requirements.push(r);
        }
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(LabelSelector { requirements })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The selector that matches every object.
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// Whether this selector matches every object.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical string form (requirements sorted by key), which [`LabelSelector::parse`]
    /// reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldTerm {
    /// The label as the kind's field set knows it (after the field label conversion).
    field: String,
    value: String,
    /// `!=` rather than `=`/`==`.
    negated: bool,
}

/// A parsed field selector: terms on the fields one kind makes selectable
/// ([`SelectableFields`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
    fields: SelectableFields,
}

/// Split on commas that are not escaped with a backslash (apimachinery's `splitTerms`).
fn split_field_terms(s: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            current.push(c);
            escaped = false;
        } else if c == '\\' {
            current.push(c);
            escaped = true;
        } else if c == ',' {
            terms.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    terms.push(current);
    terms
}

/// Split a term at the first operator (`!=`, `==`, `=`, tried in that order at each position).
fn split_field_term(term: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

/// apimachinery's `UnescapeValue`: `\\`, `\,` and `\=` are escapes; a bare `,` or `=` is an error.
fn unescape_field_value(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => return Err(format!("invalid field selector: invalid escape sequence: \\{e}")),
                None => return Err("invalid field selector: invalid escape sequence: \\".to_owned()),
            },
            ',' | '=' => return Err(format!("invalid field selector: unescaped character in value: {c}")),
            _ => out.push(c),
        }
    }
    Ok(out)
}

impl FieldSelector {
    /// Parse the string form (`metadata.name=a,metadata.namespace!=b`) for a kind that selects
    /// only on metadata (apimachinery's default field label conversion).
    pub fn parse(s: &str) -> Result<FieldSelector, Status> {
        Self::parse_for(s, &SelectableFields::Metadata)
    }

    /// Parse the string form (`spec.nodeName=a,status.phase!=Running`), as
    /// `fields.ParseSelector` does, then convert each label as the kind's field label
    /// conversion does.
    ///
    /// Bad syntax gives 400 BadRequest `invalid selector: '<s>'; can't understand '<term>'`; a
    /// field the kind does not select on gives 400 BadRequest with the kind's message
    /// (`field label not supported: <field>` for most kinds that have selectable fields of
    /// their own, `"<field>" is not a known field selector: only "metadata.name",
    /// "metadata.namespace"` for the others).
    pub fn parse_for(s: &str, fields: &SelectableFields) -> Result<FieldSelector, Status> {
        if s.len() > SELECTOR_LEN_MAX {
            return Err(errors::bad_request(&format!(
                "field selector is longer than {SELECTOR_LEN_MAX} bytes"
            )));
        }
        let mut parts = split_field_terms(s);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts.iter().filter(|p| !p.is_empty()) {
            let Some((lhs, op, rhs)) = split_field_term(part) else {
                return Err(errors::bad_request(&format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let value = unescape_field_value(rhs).map_err(|m| errors::bad_request(&m))?;
            let field = fields.convert(lhs).map_err(|m| errors::bad_request(&m))?.into_owned();
            terms.push(FieldTerm { field, value, negated: op == "!=" });
        }
        Ok(FieldSelector { terms, fields: fields.clone() })
    }

    /// Whether the object satisfies every term. An absent field is the empty string, as in the
    /// server's field set (a cluster-scoped object's namespace included).
    pub fn matches(&self, object: &DynamicObject) -> bool {
        self.terms.iter().all(|t| (self.fields.value(&t.field, object) == t.value) != t.negated)
    }

    /// The selector that matches every object.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// Whether this selector matches every object.
    pub fn is_everything(&self) -> bool {
        self.terms.is_empty()
    }
}
