//! Locations inside an object's JSON: concrete paths (what the differ reports) and patterns
//! (what masks match), with array indices that a pattern can generalise to `*`.

use std::fmt;

use crate::Error;

/// One step of a concrete path into a JSON value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// A key of a JSON object.
    Key(String),
    /// An index into a JSON array.
    Index(usize),
}

/// A concrete location inside one object, shown as a JSON pointer (`/spec/replicas`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Path(pub Vec<Step>);

impl Path {
    /// This path extended by one step.
    pub fn child(&self, step: Step) -> Path {
        let mut steps = self.0.clone();
        steps.push(step);
        Path(steps)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            // The empty pointer names the whole document; print something a person can see.
            return f.write_str("/");
        }
        for step in &self.0 {
            match step {
                Step::Key(key) => write!(f, "/{}", escape(key))?,
                Step::Index(index) => write!(f, "/{index}")?,
            }
        }
        Ok(())
    }
}

/// One segment of a [`PathPattern`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// Matches a key with exactly this text, or an array index written in decimal (so that the
    /// pointer `/spec/containers/0` means the first container, as RFC 6901 says).
    Key(String),
    /// `*`: matches any one key or index.
    Any,
}

/// A pattern over [`Path`]s: a mask rule masks the subtree under every path it matches.
///
/// Written either as a JSON pointer (`/status/conditions/*/message`, with RFC 6901's `~0` and
/// `~1` escapes) or as a dotted path (`.status.conditions[*].message`, with `['key.with.dots']`
/// for keys that contain dots or slashes, such as annotation keys). In both forms `*` matches any
/// one key or index; a key that is literally `*` cannot be written. The empty pattern (`""` or
/// `"."`) matches the whole object.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathPattern(pub Vec<Segment>);

impl PathPattern {
    /// Parse a JSON pointer or a dotted path.
    pub fn parse(text: &str) -> Result<Self, Error> {
        match text.chars().next() {
            None => Ok(PathPattern(Vec::new())),
            Some('/') => parse_pointer(text),
            Some('.') => parse_dotted(text),
            Some(_) => Err(invalid(text, "must start with '/' (JSON pointer) or '.' (dotted path)")),
        }
    }

    /// The pattern that matches `path` with every array index generalised to `*`, so that a
    /// difference learned at `/status/conditions/1/message` masks every condition's message.
    pub fn generalise(path: &Path) -> Self {
        PathPattern(
            path.0
                .iter()
                .map(|step| match step {
                    Step::Key(key) => Segment::Key(key.clone()),
                    Step::Index(_) => Segment::Any,
                })
                .collect(),
        )
    }

    /// Whether this pattern matches `path` exactly (same length, every segment matching).
    pub fn matches(&self, path: &[Step]) -> bool {
        self.0.len() == path.len() && self.0.iter().zip(path).all(|(segment, step)| segment.matches(step))
    }

    /// Whether this pattern matches `path` or one of its ancestors, i.e. whether `path` lies in a
    /// subtree this pattern masks.
    pub fn covers(&self, path: &[Step]) -> bool {
        self.0.len() <= path.len() && self.0.iter().zip(path).all(|(segment, step)| segment.matches(step))
    }
}

impl Segment {
    fn matches(&self, step: &Step) -> bool {
        match (self, step) {
            (Segment::Any, _) => true,
            (Segment::Key(want), Step::Key(key)) => want == key,
            (Segment::Key(want), Step::Index(index)) => want.parse::<usize>() == Ok(*index),
        }
    }
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("/");
        }
        for segment in &self.0 {
            match segment {
                Segment::Key(key) => write!(f, "/{}", escape(key))?,
                Segment::Any => f.write_str("/*")?,
            }
        }
        Ok(())
    }
}

/// RFC 6901 escaping of one reference token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn invalid(path: &str, reason: &str) -> Error {
    Error::InvalidPath { path: path.to_owned(), reason: reason.to_owned() }
}

fn parse_pointer(text: &str) -> Result<PathPattern, Error> {
    let mut segments = Vec::new();
    // The first split part is the empty text before the leading '/'.
    for token in text.split('/').skip(1) {
        if token == "*" {
            segments.push(Segment::Any);
            continue;
        }
        let mut key = String::with_capacity(token.len());
        let mut chars = token.chars();
        while let Some(c) = chars.next() {
            if c != '~' {
                key.push(c);
                continue;
            }
            match chars.next() {
                Some('0') => key.push('~'),
                Some('1') => key.push('/'),
                _ => return Err(invalid(text, "'~' must be followed by '0' or '1' (RFC 6901)")),
            }
        }
        segments.push(Segment::Key(key));
    }
    Ok(PathPattern(segments))
}

fn parse_dotted(text: &str) -> Result<PathPattern, Error> {
    if text == "." {
        return Ok(PathPattern(Vec::new()));
    }
    let chars: Vec<char> = text.chars().collect();
    let mut segments = Vec::new();
    let mut at = 0;
    // Each iteration consumes one segment, so the loop is bounded by the text's length.
    while at < chars.len() {
        match chars[at] {
            '.' => {
                let start = at + 1;
                let mut end = start;
                while end < chars.len() && chars[end] != '.' && chars[end] != '[' {
                    end += 1;
                }
                if end == start {
                    return Err(invalid(text, "empty key after '.'"));
                }
                let key: String = chars[start..end].iter().collect();
                segments.push(if key == "*" { Segment::Any } else { Segment::Key(key) });
                at = end;
            }
            '[' => {
                // A quoted key may itself contain ']', so look for the bracket after the quote.
                let search_from = match chars.get(at + 1) {
                    Some(quote @ ('\'' | '"')) => chars[at + 2..]
                        .iter()
                        .position(|c| c == quote)
                        .map(|offset| at + 2 + offset)
                        .ok_or_else(|| invalid(text, "unterminated quoted key"))?,
                    _ => at,
                };
                let close = chars[search_from..]
                    .iter()
                    .position(|c| *c == ']')
                    .map(|offset| search_from + offset)
                    .ok_or_else(|| invalid(text, "'[' without a closing ']'"))?;
                let inner: String = chars[at + 1..close].iter().collect();
                segments.push(bracket_segment(text, &inner)?);
                at = close + 1;
            }
            _ => return Err(invalid(text, "expected '.' or '[' between segments")),
        }
    }
    Ok(PathPattern(segments))
}

/// The segment inside `[..]`: `*`, a decimal index, or a quoted key.
fn bracket_segment(text: &str, inner: &str) -> Result<Segment, Error> {
    if inner == "*" {
        return Ok(Segment::Any);
    }
    if !inner.is_empty() && inner.chars().all(|c| c.is_ascii_digit()) {
        return Ok(Segment::Key(inner.to_owned()));
    }
    let quoted = inner.len() >= 2
        && ((inner.starts_with('\'') && inner.ends_with('\''))
            || (inner.starts_with('"') && inner.ends_with('"')));
    if quoted {
        return Ok(Segment::Key(inner[1..inner.len() - 1].to_owned()));
    }
    Err(invalid(text, "inside '[..]' expected '*', an index, or a quoted key"))
}
