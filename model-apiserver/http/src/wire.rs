//! The protobuf wire format, by hand, for the few small messages served outside the descriptor
//! set of [`super::protobuf`]: the gnostic OpenAPI v2 `Document` that `/openapi/v2` answers in
//! protobuf, and the authorization reviews (`kubectl auth can-i` posts them in protobuf).
//!
//! Only what those messages use: varints, length-delimited fields (strings, bytes, messages,
//! packed or repeated) and doubles. Unknown fields are skipped, as protobuf readers skip them.

/// Wire type of a varint field.
const VARINT: u8 = 0;
/// Wire type of a 64-bit field (double).
const FIXED64: u8 = 1;
/// Wire type of a length-delimited field.
const LEN: u8 = 2;
/// Wire type of a 32-bit field.
const FIXED32: u8 = 5;

/// A message being written, field by field, in the order they are added.
#[derive(Default)]
pub struct Writer(Vec<u8>);

impl Writer {
    /// An empty message.
    pub fn new() -> Writer {
        Writer(Vec::new())
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push(u8::try_from(value & 0x7f).unwrap_or(0) | 0x80);
            value >>= 7;
        }
        self.0.push(u8::try_from(value).unwrap_or(0));
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire_type));
    }

    /// A length-delimited field: a string, bytes or an encoded message. Proto3 leaves out empty
    /// strings; a message field is written even when empty (it is present).
    pub fn bytes(&mut self, field: u32, bytes: &[u8]) -> &mut Writer {
        self.key(field, LEN);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
        self
    }

    /// A string field, left out when empty (proto3's default).
    pub fn string(&mut self, field: u32, value: &str) -> &mut Writer {
        if !value.is_empty() {
            self.bytes(field, value.as_bytes());
        }
        self
    }

    /// A message field.
    pub fn message(&mut self, field: u32, message: Writer) -> &mut Writer {
        self.bytes(field, &message.0)
    }

    /// A bool field, left out when false.
    pub fn bool(&mut self, field: u32, value: bool) -> &mut Writer {
        if value {
            self.key(field, VARINT);
            self.varint(1);
        }
        self
    }

    /// An int64 field, left out when zero.
    pub fn int64(&mut self, field: u32, value: i64) -> &mut Writer {
        if value != 0 {
            self.key(field, VARINT);
            // Negative int64s are ten-byte varints of their two's complement.
            self.varint(u64::from_ne_bytes(value.to_ne_bytes()));
        }
        self
    }

    /// A double field, left out when zero.
    pub fn double(&mut self, field: u32, value: f64) -> &mut Writer {
        if value != 0.0 {
            self.key(field, FIXED64);
            self.0.extend_from_slice(&value.to_le_bytes());
        }
        self
    }

    /// The encoded message.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// One field read from a message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field<'a> {
    /// A varint.
    Varint(u64),
    /// A length-delimited payload (string, bytes, message).
    Bytes(&'a [u8]),
    /// A fixed 64- or 32-bit value, as its raw bits.
    Fixed(u64),
}

/// The fields of one message, in wire order; `Err` names what is malformed.
pub fn fields(mut bytes: &[u8]) -> Result<Vec<(u32, Field<'_>)>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let key = read_varint(&mut bytes)?;
        let number =
            u32::try_from(key >> 3).map_err(|_| format!("field number {} is too large", key >> 3))?;
        let field = match u8::try_from(key & 7).unwrap_or(u8::MAX) {
            VARINT => Field::Varint(read_varint(&mut bytes)?),
            LEN => {
                let len = usize::try_from(read_varint(&mut bytes)?).unwrap_or(usize::MAX);
                if len > bytes.len() {
                    return Err(format!("field {number} is cut short"));
                }
                let (payload, rest) = bytes.split_at(len);
                bytes = rest;
                Field::Bytes(payload)
            }
            FIXED64 => Field::Fixed(read_fixed(&mut bytes, 8)?),
            FIXED32 => Field::Fixed(read_fixed(&mut bytes, 4)?),
            other => return Err(format!("field {number} has the unsupported wire type {other}")),
        };
        out.push((number, field));
    }
    Ok(out)
}

fn read_varint(bytes: &mut &[u8]) -> Result<u64, String> {
    let mut value = 0_u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first().ok_or("a varint is cut short")?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("a varint is longer than ten bytes".to_owned())
}

fn read_fixed(bytes: &mut &[u8], width: usize) -> Result<u64, String> {
    if bytes.len() < width {
        return Err("a fixed-width field is cut short".to_owned());
    }
    let (raw, rest) = bytes.split_at(width);
    *bytes = rest;
    Ok(raw.iter().rev().fold(0, |acc, &b| (acc << 8) | u64::from(b)))
}
