//! Request bodies, decoded by their Content-Type as kube-apiserver's negotiation picks the
//! decoder (`negotiation.NegotiateInputSerializer`): JSON, YAML or Kubernetes protobuf, and 415
//! UnsupportedMediaType for anything else. A missing Content-Type means JSON, as upstream takes
//! the first supported type. There is no fallback from one decoder to another: a JSON body that
//! does not parse is a 400, never a second try as YAML.
//!
//! Before any parser sees a body, [`check_depth`] bounds its nesting with one linear pass, so a
//! body of 100,000 nested brackets costs a scan rather than a parser's recursion or libyaml's
//! superlinear flow-collection handling. (The handler runs decoding on tokio's blocking pool, so
//! even a slow decode never holds an async worker.)

use kube_core::Status;
use model_apiserver::{errors, go_json::go_kind};
use serde_json::Value;

use super::protobuf;

/// The deepest nesting of objects and arrays a body may have. Kubernetes objects nest far less
/// (a CRD's schema, the deepest common case, stays under 40); serde_json's own recursion limit
/// is 128.
pub const NESTING_DEPTH_MAX: usize = 100;

/// The object media types served, in the order of `accepted media types include` messages.
pub const OBJECT_MEDIA_TYPES: &str =
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// How an object body (create, update) is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Media {
    /// `application/json`, or no Content-Type.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// The media type of a Content-Type header: parameters dropped, lower case.
pub fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

impl Media {
    /// The decoder for an object body's Content-Type, or 415 naming the accepted types.
    /// (`text/plain`, form and multipart bodies, the types a browser may send cross-origin
    /// without a preflight, are refused here.)
    pub fn of_object(content_type: &str) -> Result<Media, Status> {
        match media_type(content_type).as_str() {
            "" | "application/json" => Ok(Media::Json),
            "application/yaml" => Ok(Media::Yaml),
            protobuf::MEDIA_TYPE => Ok(Media::Protobuf),
            _ => Err(unsupported(OBJECT_MEDIA_TYPES)),
        }
    }
}

/// 415 as kube-apiserver words it.
pub fn unsupported(accepted: &str) -> Status {
    errors::unsupported_media_type(&format!(
        "the body of the request was in an unknown format - accepted media types include: {accepted}"
    ))
}

/// A JSON document; `what` names it in the error (`patch`, `object`).
pub fn json(body: &[u8], what: &str) -> Result<Value, Status> {
    check_depth(body, Syntax::Json)?;
    serde_json::from_slice(body).map_err(|e| errors::bad_request(&format!("error decoding {what}: {e}")))
}

/// The operations of a JSON patch, decoded as the patch handler decodes them
/// (`applyJSPatch` in `handlers/patch.go`: encoding/json into `[]jsonPatchOp`, whose `op`,
/// `path` and `from` are strings): a body of another shape is 400 with Go's words, and an
/// operation that json-patch does not know, or lacks its path, fails to apply: the generic 422
/// (`NewGenericServerResponse`). json-patch v4 reads a missing `value` as null.
pub fn json_patch(mut patch: Value) -> Result<json_patch::Patch, Status> {
    let decoding =
        |what: String| errors::bad_request(&format!("error decoding patch: json: cannot unmarshal {what}"));
    let Some(ops) = patch.as_array() else {
        return Err(decoding(format!("{} into Go value of type []handlers.jsonPatchOp", go_kind(&patch))));
    };
    for op in ops {
        match op {
            Value::Null => {}
            Value::Object(fields) => {
                for field in ["op", "path", "from"] {
                    if let Some(v) = fields.get(field).filter(|v| !v.is_string() && !v.is_null()) {
                        let kind = go_kind(v);
                        return Err(decoding(format!(
                            "{kind} into Go struct field jsonPatchOp.{field} of type string"
                        )));
                    }
                }
            }
            other => {
                return Err(decoding(format!(
                    "{} into Go value of type handlers.jsonPatchOp",
                    go_kind(other)
                )));
            }
        }
    }
    for op in patch.as_array_mut().into_iter().flatten().filter_map(Value::as_object_mut) {
        if matches!(op.get("op").and_then(Value::as_str), Some("add" | "replace" | "test")) {
            op.entry("value").or_insert(Value::Null);
        }
    }
    serde_json::from_value(patch).map_err(|_| errors::json_patch_failed())
}

/// A YAML document (JSON is YAML too): an apply patch.
pub fn yaml(body: &[u8]) -> Result<Value, Status> {
    check_depth(body, Syntax::Yaml)?;
    serde_yaml_ng::from_slice(body).map_err(|e| errors::bad_request(&format!("error decoding YAML: {e}")))
}

/// An object body in `media`, as a JSON value (not yet checked to be an object). `kind` is the
/// kind the handler decodes into, which a JSON body that is not an object is told it must be
/// (see [`crate::go_json`]).
pub fn object(media: Media, body: &[u8], kind: &str) -> Result<Value, Status> {
    let unrecognized =
        |e: &dyn std::fmt::Display| errors::bad_request(&format!("the object provided is unrecognized: {e}"));
    match media {
        Media::Protobuf => protobuf::decode(body),
        Media::Json => {
            check_depth(body, Syntax::Json)?;
            // One parse; Go's scanner runs only on a body serde_json refused, for its words (it
            // finds nothing only where the two part ways, as on numbers beyond f64).
            let go_error = |error: String| {
                errors::bad_request(&crate::go_json::unrecognized_message(kind, &error, body))
            };
            match serde_json::from_slice::<Value>(body) {
                Ok(value) => match crate::go_json::interpret_value_error(&value) {
                    Some(error) => Err(go_error(error)),
                    None => Ok(value),
                },
                Err(e) => Err(crate::go_json::syntax_error(body).map_or_else(|| unrecognized(&e), go_error)),
            }
        }
        Media::Yaml => {
            check_depth(body, Syntax::Yaml)?;
            serde_yaml_ng::from_slice(body).map_err(|e| unrecognized(&e))
        }
    }
}

/// The surface syntax a depth scan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// JSON: `{` and `[` outside strings nest.
    Json,
    /// YAML: flow collections (`{`, `[` outside quoted scalars and comments) nest, and so do
    /// block levels: each indentation step and each compact `- ` entry on a line.
    Yaml,
}

/// 400 when `body` nests deeper than [`NESTING_DEPTH_MAX`]; one pass, no allocation.
pub fn check_depth(body: &[u8], syntax: Syntax) -> Result<(), Status> {
    let depth = match syntax {
        Syntax::Json => json_depth(body, NESTING_DEPTH_MAX),
        Syntax::Yaml => yaml_depth(body, NESTING_DEPTH_MAX),
    };
    if depth > NESTING_DEPTH_MAX {
        return Err(errors::bad_request(&format!(
            "the request body nests objects and arrays deeper than {NESTING_DEPTH_MAX} levels"
        )));
    }
    Ok(())
}

/// The deepest bracket nesting of a JSON text, stopping early once past `max`.
// `pub` (hidden from the docs) for its test in tests/it/decode.rs only.
#[doc(hidden)]
pub fn json_depth(body: &[u8], max: usize) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > max {
                    return deepest;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// An upper estimate of a YAML text's nesting: per line, its indentation in steps of two
/// columns, plus its compact entries (`- - x`, `? `), plus the flow collections (`[`, `{`) open
/// at that point outside quoted scalars and comments. A quote opens a scalar only where a scalar
/// starts (after `:`, `,`, `[`, `{`, `-` or at the start of a line), as in YAML, so a quote inside
/// a plain scalar (`it's`) does not hide the brackets after it. Over-counting only matters beyond
/// [`NESTING_DEPTH_MAX`], which real manifests never reach.
// `pub` (hidden from the docs) for its test in tests/it/decode.rs only.
#[doc(hidden)]
pub fn yaml_depth(body: &[u8], max: usize) -> usize {
    let (mut flow, mut deepest) = (0usize, 0usize);
    let (mut quote, mut escaped) = (None::<u8>, false);
    for line in body.split(|b| *b == b'\n') {
        let mut start = 0;
        let mut block = 0;
        if quote.is_none() {
            start = line.iter().take_while(|b| **b == b' ').count();
            block = start / 2;
            while start + 1 < line.len()
                && matches!(line[start], b'-' | b'?')
                && matches!(line[start + 1], b' ' | b'\t')
            {
                block += 1;
                start += 2;
                start += line[start..].iter().take_while(|b| **b == b' ').count();
            }
        }
        let (mut previous, mut significant) = (b' ', b'\n');
        for &b in &line[start..] {
            match quote {
                Some(b'\'') if b == b'\'' => quote = None,
                Some(b'"') if escaped => escaped = false,
                Some(b'"') if b == b'\\' => escaped = true,
                Some(b'"') if b == b'"' => quote = None,
                Some(_) => {}
                None => match b {
                    b'#' if matches!(previous, b' ' | b'\t') => break,
                    b'\'' | b'"'
                        if matches!(significant, b'\n' | b':' | b',' | b'[' | b'{' | b'-' | b'?') =>
                    {
                        quote = Some(b);
                    }
                    b'{' | b'[' => flow += 1,
                    b'}' | b']' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            previous = b;
            if !matches!(b, b' ' | b'\t') {
                significant = b;
            }
            deepest = deepest.max(block + flow);
            if deepest > max {
                return deepest;
            }
        }
        deepest = deepest.max(block + flow);
        if deepest > max {
            return deepest;
        }
    }
    deepest
}
