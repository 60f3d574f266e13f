//! Go's `encoding/json` error texts, which kube-apiserver passes on: for a continue token that is
//! not JSON ([`syntax_error`]), and for an object body that is not a JSON object: the error of Go's
//! `encoding/json` when the serializer first reads the body's apiVersion and kind
//! (`SimpleMetaFactory.Interpret`), as the create and update handlers wrap it
//! (`transformDecodeError`):
//!
//! ```text
//! the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind;
//! json parse error: invalid character 'n' looking for beginning of object key string ({not json)
//! ```
//!
//! Written here rather than taken from a crate: the text is Go's scanner's (its states name where
//! a character was unexpected), which no Rust JSON parser reproduces; serde_json's own errors
//! ("key must be a string at line 1 column 2") say the same thing in other words. The scanner
//! below follows `encoding/json/scanner.go`'s state machine, only to find its first error; the
//! body is still parsed by serde_json.

/// The error text Go's `json.Unmarshal` gives for `body` decoded into Interpret's
/// `struct { APIVersion string; Kind string }`, or `None` when it decodes (a JSON object whose
/// `apiVersion` and `kind` are strings or absent, or `null`).
pub fn interpret_error(body: &[u8]) -> Option<String> {
    if let Some(syntax) = syntax_error(body) {
        return Some(syntax);
    }
    interpret_value_error(&serde_json::from_slice(body).ok()?)
}

/// [`interpret_error`] for a body that parsed as `value`: its type errors alone.
pub fn interpret_value_error(value: &serde_json::Value) -> Option<String> {
    const FIND_KIND: &str = r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;
    let object = match value {
        serde_json::Value::Null => return None,
        serde_json::Value::Object(object) => object,
        other => {
            return Some(format!(
                "json: cannot unmarshal {} into Go value of type {FIND_KIND}",
                go_kind(other)
            ));
        }
    };
    for field in ["apiVersion", "kind"] {
        match object.get(field) {
            None | Some(serde_json::Value::Null | serde_json::Value::String(_)) => {}
            Some(other) => {
                return Some(format!(
                    "json: cannot unmarshal {} into Go struct field .{field} of type string",
                    go_kind(other)
                ));
            }
        }
    }
    None
}

/// The 400 message of the create and update handlers for a body Interpret cannot read
/// (`transformDecodeError` without a kind): `error` and a summary of the body, its first 30
/// bytes as text when it starts with `{`, in hex otherwise.
pub fn unrecognized_message(kind: &str, error: &str, body: &[u8]) -> String {
    const SUMMARY_BYTES: usize = 30;
    let (head, more) = if body.len() > SUMMARY_BYTES { (&body[..SUMMARY_BYTES], " ...") } else { (body, "") };
    let summary = if body.is_empty() {
        "<empty>".to_owned()
    } else if body[0] == b'{' {
        [String::from_utf8_lossy(head).as_ref(), more].concat()
    } else {
        let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
        [hex.as_str(), more].concat()
    };
    format!(
        "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: {error} ({summary})"
    )
}

/// How Go's `UnmarshalTypeError` names a JSON value's type.
pub fn go_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// What the scanner is in the middle of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValueOrEmpty,
    BeginValue,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits read.
    InStringEscU(u8),
    Neg,
    Digits,
    Zero,
    Dot,
    DotDigits,
    E,
    ESign,
    EDigits,
    /// Inside a literal: the rest of it to read, and the literal's name.
    Literal(&'static [u8], &'static str),
    /// After the top-level value: only spaces may follow.
    EndTop,
}

/// Where an open container is: an object before a key's colon, after it, or an array.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's first syntax error of `body` (`checkValid`), or `None` when it is valid JSON.
pub fn syntax_error(body: &[u8]) -> Option<String> {
    let mut stack: Vec<Parse> = Vec::new();
    let mut state = State::BeginValue;
    for &c in body {
        match step(state, &mut stack, c) {
            Ok(next) => state = next,
            Err(context) => return Some(invalid(c, context)),
        }
    }
    // At the end Go steps once more with a space: a number ends there; an error there is the
    // error; anything else not at the top level's end is cut short.
    match step(state, &mut stack, b' ') {
        Ok(State::EndTop) => None,
        Ok(_) => Some("unexpected end of JSON input".to_owned()),
        Err(context) => Some(invalid(b' ', context)),
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// One byte of Go's scanner: the next state, or the context of an unexpected character.
fn step(state: State, stack: &mut Vec<Parse>, c: u8) -> Result<State, &'static str> {
    use State::*;
    let next = match state {
        BeginValueOrEmpty if is_space(c) => BeginValueOrEmpty,
        BeginValueOrEmpty if c == b']' => return end_value(stack, c),
        BeginValueOrEmpty => return step(BeginValue, stack, c),
        BeginValue => match c {
            _ if is_space(c) => BeginValue,
            b'{' => {
                stack.push(Parse::ObjectKey);
                BeginStringOrEmpty
            }
            b'[' => {
                stack.push(Parse::ArrayValue);
                BeginValueOrEmpty
            }
            b'"' => InString,
            b'-' => Neg,
            b'0' => Zero,
            b'1'..=b'9' => Digits,
            b't' => Literal(b"rue", "true"),
            b'f' => Literal(b"alse", "false"),
            b'n' => Literal(b"ull", "null"),
            _ => return Err("looking for beginning of value"),
        },
        BeginStringOrEmpty if is_space(c) => BeginStringOrEmpty,
        BeginStringOrEmpty if c == b'}' => {
            // An empty object: as if a value had ended.
            if let Some(top) = stack.last_mut() {
                *top = Parse::ObjectValue;
            }
            return end_value(stack, c);
        }
        BeginStringOrEmpty => return step(BeginString, stack, c),
        BeginString => match c {
            _ if is_space(c) => BeginString,
            b'"' => InString,
            _ => return Err("looking for beginning of object key string"),
        },
        EndValue => return end_value(stack, c),
        InString => match c {
            b'"' => EndValue,
            b'\\' => InStringEsc,
            0..=0x1f => return Err("in string literal"),
            _ => InString,
        },
        InStringEsc => match c {
            b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => InString,
            b'u' => InStringEscU(0),
            _ => return Err("in string escape code"),
        },
        InStringEscU(n) if c.is_ascii_hexdigit() => {
            if n == 3 {
                InString
            } else {
                InStringEscU(n + 1)
            }
        }
        InStringEscU(_) => return Err("in \\u hexadecimal character escape"),
        Neg => match c {
            b'0' => Zero,
            b'1'..=b'9' => Digits,
            _ => return Err("in numeric literal"),
        },
        Digits if c.is_ascii_digit() => Digits,
        Digits => return step(Zero, stack, c),
        Zero => match c {
            b'.' => Dot,
            b'e' | b'E' => E,
            _ => return end_value(stack, c),
        },
        Dot if c.is_ascii_digit() => DotDigits,
        Dot => return Err("after decimal point in numeric literal"),
        DotDigits if c.is_ascii_digit() => DotDigits,
        DotDigits if c == b'e' || c == b'E' => E,
        DotDigits => return end_value(stack, c),
        E if c == b'+' || c == b'-' => ESign,
        E => return step(ESign, stack, c),
        ESign if c.is_ascii_digit() => EDigits,
        ESign => return Err("in exponent of numeric literal"),
        EDigits if c.is_ascii_digit() => EDigits,
        EDigits => return end_value(stack, c),
        Literal(rest, name) => match rest.split_first() {
            Some((&want, tail)) if c == want => {
                if tail.is_empty() {
                    EndValue
                } else {
                    Literal(tail, name)
                }
            }
            Some((&want, _)) => return Err(literal_context(name, want)),
            None => EndValue,
        },
        EndTop if is_space(c) => EndTop,
        EndTop => return Err("after top-level value"),
    };
    Ok(next)
}

/// After a value: a separator or closer of the open container, or the end of the top level.
fn end_value(stack: &mut Vec<Parse>, c: u8) -> Result<State, &'static str> {
    let Some(top) = stack.last_mut() else {
        return if is_space(c) { Ok(State::EndTop) } else { Err("after top-level value") };
    };
    if is_space(c) {
        return Ok(State::EndValue);
    }
    match (*top, c) {
        (Parse::ObjectKey, b':') => {
            *top = Parse::ObjectValue;
            Ok(State::BeginValue)
        }
        (Parse::ObjectKey, _) => Err("after object key"),
        (Parse::ObjectValue, b',') => {
            *top = Parse::ObjectKey;
            Ok(State::BeginString)
        }
        (Parse::ObjectValue, b'}') | (Parse::ArrayValue, b']') => {
            stack.pop();
            Ok(State::EndValue)
        }
        (Parse::ObjectValue, _) => Err("after object key:value pair"),
        (Parse::ArrayValue, b',') => Ok(State::BeginValue),
        (Parse::ArrayValue, _) => Err("after array element"),
    }
}

/// Go's context for an unexpected byte inside `true`, `false` or `null`.
fn literal_context(name: &str, want: u8) -> &'static str {
    match (name, want) {
        ("true", b'r') => "in literal true (expecting 'r')",
        ("true", b'u') => "in literal true (expecting 'u')",
        ("true", _) => "in literal true (expecting 'e')",
        ("false", b'a') => "in literal false (expecting 'a')",
        ("false", b'l') => "in literal false (expecting 'l')",
        ("false", b's') => "in literal false (expecting 's')",
        ("false", _) => "in literal false (expecting 'e')",
        ("null", b'u') => "in literal null (expecting 'u')",
        _ => "in literal null (expecting 'l')",
    }
}

/// `invalid character 'x' <context>`, the character quoted as Go's `quoteChar` does.
fn invalid(c: u8, context: &str) -> String {
    let quoted = match c {
        b'\'' => "\\'".to_owned(),
        b'"' => "\"".to_owned(),
        b'\\' => "\\\\".to_owned(),
        0x07 => "\\a".to_owned(),
        0x08 => "\\b".to_owned(),
        0x0c => "\\f".to_owned(),
        b'\n' => "\\n".to_owned(),
        b'\r' => "\\r".to_owned(),
        b'\t' => "\\t".to_owned(),
        0x0b => "\\v".to_owned(),
        0x20..=0x7e => char::from(c).to_string(),
        // What the real server printed for a byte 0x81 ('\x81').
        _ => format!("\\x{c:02x}"),
    };
    ["invalid character '", &quoted, "' ", context].concat()
}
