//! The binary encoding of what Oxbow keeps on disk and sends between its own nodes: Kafka's
//! flexible-version conventions (big-endian integers, unsigned varints for lengths, compact
//! nullable strings and arrays, a tagged-field section a reader skips when it does not know
//! a tag), so a newer writer can add optional data an older reader passes over.
//!
//! Every read is bounded by the input: a length past the end is an error, never an
//! allocation of what a corrupt length claims.

use uuid::Uuid;

/// Why bytes do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated: {0} needs more bytes than are left")]
    Truncated(&'static str),
    #[error("{0}")]
    Invalid(String),
}

pub type WireResult<T> = Result<T, WireError>;

/// Appends fields to a buffer.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    pub fn bytes_raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn i8(&mut self, v: i8) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i16(&mut self, v: i16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    pub fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }

    pub fn uuid(&mut self, v: &Uuid) {
        self.buf.extend_from_slice(v.as_bytes());
    }

    pub fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// A compact length: `len + 1`, 0 meaning null.
    fn compact_len(&mut self, len: Option<usize>) {
        self.uvarint(len.map_or(0, |l| l as u64 + 1));
    }

    pub fn string(&mut self, v: &str) {
        self.compact_len(Some(v.len()));
        self.buf.extend_from_slice(v.as_bytes());
    }

    pub fn nullable_string(&mut self, v: Option<&str>) {
        match v {
            Some(v) => self.string(v),
            None => self.compact_len(None),
        }
    }

    pub fn bytes(&mut self, v: &[u8]) {
        self.compact_len(Some(v.len()));
        self.buf.extend_from_slice(v);
    }

    /// A compact array, each item written by `item`.
    pub fn array<T>(&mut self, items: &[T], mut item: impl FnMut(&mut Self, &T)) {
        self.compact_len(Some(items.len()));
        for v in items {
            item(self, v);
        }
    }

    pub fn i32_array(&mut self, items: &[i32]) {
        self.array(items, |w, v| w.i32(*v));
    }

    /// A map as a compact array of (key, value) pairs in key order.
    pub fn string_map(&mut self, map: &std::collections::BTreeMap<String, String>) {
        let pairs: Vec<(&String, &String)> = map.iter().collect();
        self.array(&pairs, |w, (k, v)| {
            w.string(k);
            w.string(v);
        });
    }

    /// The tagged-field section: `(tag, encoded field)` in increasing tag order; empty
    /// fields are left out by the caller.
    pub fn tagged(&mut self, fields: &[(u32, Vec<u8>)]) {
        self.uvarint(fields.len() as u64);
        for (tag, field) in fields {
            self.uvarint(u64::from(*tag));
            self.uvarint(field.len() as u64);
            self.buf.extend_from_slice(field);
        }
    }
}

/// Reads fields from a slice, never past its end.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub fn take(&mut self, n: usize, what: &'static str) -> WireResult<&'a [u8]> {
        if self.buf.len() < n {
            return Err(WireError::Truncated(what));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array_of<const N: usize>(&mut self, what: &'static str) -> WireResult<[u8; N]> {
        let bytes = self.take(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub fn u8(&mut self, what: &'static str) -> WireResult<u8> {
        Ok(self.array_of::<1>(what)?[0])
    }

    pub fn i8(&mut self, what: &'static str) -> WireResult<i8> {
        Ok(i8::from_be_bytes(self.array_of(what)?))
    }

    pub fn i16(&mut self, what: &'static str) -> WireResult<i16> {
        Ok(i16::from_be_bytes(self.array_of(what)?))
    }

    pub fn u16(&mut self, what: &'static str) -> WireResult<u16> {
        Ok(u16::from_be_bytes(self.array_of(what)?))
    }

    pub fn i32(&mut self, what: &'static str) -> WireResult<i32> {
        Ok(i32::from_be_bytes(self.array_of(what)?))
    }

    pub fn u32(&mut self, what: &'static str) -> WireResult<u32> {
        Ok(u32::from_be_bytes(self.array_of(what)?))
    }

    pub fn i64(&mut self, what: &'static str) -> WireResult<i64> {
        Ok(i64::from_be_bytes(self.array_of(what)?))
    }

    pub fn u64(&mut self, what: &'static str) -> WireResult<u64> {
        Ok(u64::from_be_bytes(self.array_of(what)?))
    }

    pub fn f64(&mut self, what: &'static str) -> WireResult<f64> {
        Ok(f64::from_bits(self.u64(what)?))
    }

    pub fn bool(&mut self, what: &'static str) -> WireResult<bool> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(WireError::Invalid(format!(
                "{what}: {other} is not a boolean"
            ))),
        }
    }

    pub fn uuid(&mut self, what: &'static str) -> WireResult<Uuid> {
        Ok(Uuid::from_bytes(self.array_of(what)?))
    }

    pub fn uvarint(&mut self, what: &'static str) -> WireResult<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8(what)?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::Invalid(format!(
            "{what}: varint longer than 64 bits"
        )))
    }

    /// A length no larger than the bytes left (each item takes at least `min_item` bytes),
    /// so a corrupt length fails here instead of allocating.
    fn bounded_len(&mut self, what: &'static str, min_item: usize) -> WireResult<Option<usize>> {
        let raw = self.uvarint(what)?;
        if raw == 0 {
            return Ok(None);
        }
        let len = usize::try_from(raw - 1).map_err(|_| WireError::Truncated(what))?;
        if len.saturating_mul(min_item.max(1)) > self.buf.len() && min_item > 0 {
            return Err(WireError::Truncated(what));
        }
        Ok(Some(len))
    }

    pub fn nullable_string(&mut self, what: &'static str) -> WireResult<Option<String>> {
        let Some(len) = self.bounded_len(what, 1)? else {
            return Ok(None);
        };
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| WireError::Invalid(format!("{what}: not UTF-8")))
    }

    pub fn string(&mut self, what: &'static str) -> WireResult<String> {
        self.nullable_string(what)?
            .ok_or_else(|| WireError::Invalid(format!("{what}: null where a string is required")))
    }

    pub fn bytes(&mut self, what: &'static str) -> WireResult<Vec<u8>> {
        let len = self
            .bounded_len(what, 1)?
            .ok_or_else(|| WireError::Invalid(format!("{what}: null bytes")))?;
        Ok(self.take(len, what)?.to_vec())
    }

    /// A compact array; `min_item` is the fewest bytes one item can take.
    pub fn array<T>(
        &mut self,
        what: &'static str,
        min_item: usize,
        mut item: impl FnMut(&mut Self) -> WireResult<T>,
    ) -> WireResult<Vec<T>> {
        let len = self
            .bounded_len(what, min_item)?
            .ok_or_else(|| WireError::Invalid(format!("{what}: null array")))?;
        let mut items = Vec::with_capacity(len.min(self.buf.len()));
        for _ in 0..len {
            items.push(item(self)?);
        }
        Ok(items)
    }

    pub fn i32_array(&mut self, what: &'static str) -> WireResult<Vec<i32>> {
        self.array(what, 4, |r| r.i32(what))
    }

    pub fn string_map(
        &mut self,
        what: &'static str,
    ) -> WireResult<std::collections::BTreeMap<String, String>> {
        Ok(self
            .array(what, 2, |r| Ok((r.string(what)?, r.string(what)?)))?
            .into_iter()
            .collect())
    }

    /// The tagged-field section: each known tag handed to `field` with a reader over its
    /// bytes; unknown tags (a newer writer's) are skipped.
    pub fn tagged(
        &mut self,
        mut field: impl FnMut(u32, &mut Reader<'a>) -> WireResult<bool>,
    ) -> WireResult<()> {
        let count = self.uvarint("tagged field count")?;
        if count > self.buf.len() as u64 {
            return Err(WireError::Truncated("tagged fields"));
        }
        for _ in 0..count {
            let tag = u32::try_from(self.uvarint("tag")?)
                .map_err(|_| WireError::Invalid("tag out of range".into()))?;
            let len = usize::try_from(self.uvarint("tagged field length")?)
                .map_err(|_| WireError::Truncated("tagged field"))?;
            let mut inner = Reader::new(self.take(len, "tagged field")?);
            // A known tag must be read whole; an unknown one is passed over.
            if field(tag, &mut inner)? && !inner.is_empty() {
                return Err(WireError::Invalid(format!(
                    "tagged field {tag}: {} bytes left over",
                    inner.remaining()
                )));
            }
        }
        Ok(())
    }
}

/// `build` into a buffer of its own: a tagged field's value.
pub fn field(build: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut writer = Writer::new();
    build(&mut writer);
    writer.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_unknown_tags_are_skipped() {
        let mut w = Writer::new();
        w.i16(-2);
        w.uvarint(300);
        w.string("héllo");
        w.nullable_string(None);
        w.i32_array(&[1, -1, 7]);
        w.tagged(&[(0, field(|w| w.i32(5))), (9, field(|w| w.string("later")))]);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(r.i16("a").unwrap(), -2);
        assert_eq!(r.uvarint("b").unwrap(), 300);
        assert_eq!(r.string("c").unwrap(), "héllo");
        assert_eq!(r.nullable_string("d").unwrap(), None);
        assert_eq!(r.i32_array("e").unwrap(), vec![1, -1, 7]);
        let mut known = None;
        r.tagged(|tag, f| {
            if tag == 0 {
                known = Some(f.i32("t0")?);
                Ok(true)
            } else {
                Ok(false)
            }
        })
        .unwrap();
        assert_eq!(known, Some(5));
        assert!(r.is_empty());
    }

    #[test]
    fn a_corrupt_length_is_an_error_not_an_allocation() {
        let mut w = Writer::new();
        w.uvarint(u64::MAX / 2);
        let bytes = w.into_bytes();
        assert!(Reader::new(&bytes).i32_array("x").is_err());
        assert!(Reader::new(&bytes).string("x").is_err());
        assert!(Reader::new(&[0x80; 12]).uvarint("x").is_err());
        assert!(Reader::new(&[]).i64("x").is_err());
    }
}
