//! A bounds-checked reader for Kafka's primitive types over an untrusted [`Bytes`] buffer.
//!
//! Response bodies come from the network, so every length is checked against what is left before
//! it is used, and array capacities are capped by the bytes remaining: a hostile count can never
//! make us allocate more than the frame we already hold. Byte fields come back as zero-copy
//! slices of the frame.
//!
//! # References
//! - <https://kafka.apache.org/protocol#protocol_types>
//! - KIP-482 (flexible versions: compact lengths and tagged fields)

use bytes::{Buf, Bytes};

/// Why a response body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {what}: {problem} at byte {position}")]
pub struct DecodeError {
    /// What was being read, e.g. `"Fetch v12 response"`.
    pub what: String,
    /// What was wrong.
    pub problem: String,
    /// Offset into the body where it went wrong.
    pub position: usize,
}

/// A cursor over a response body. Each `read_*` checks the remaining length first.
pub struct Decoder {
    buf: Bytes,
    start_len: usize,
    what: &'static str,
    version: i16,
}

impl Decoder {
    /// Starts reading `buf`, which holds a `what` (e.g. `"Metadata"`) response at `version`.
    pub fn new(buf: Bytes, what: &'static str, version: i16) -> Self {
        let start_len = buf.len();
        Decoder {
            buf,
            start_len,
            what,
            version,
        }
    }

    /// The API version being decoded.
    pub fn version(&self) -> i16 {
        self.version
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// Consumes the decoder and returns the bytes not read yet, as a zero-copy slice.
    pub fn into_rest(self) -> Bytes {
        self.buf
    }

    /// Builds an error at the current position.
    pub fn error(&self, problem: impl Into<String>) -> DecodeError {
        DecodeError {
            what: format!("{} v{} response", self.what, self.version),
            problem: problem.into(),
            position: self.start_len - self.buf.len(),
        }
    }

    fn need(&self, n: usize, field: &str) -> Result<(), DecodeError> {
        if self.buf.len() < n {
            Err(self.error(format!(
                "{field} needs {n} bytes but only {} remain",
                self.buf.len()
            )))
        } else {
            Ok(())
        }
    }

    /// Reads a boolean (one byte, non-zero is true).
    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.i8()? != 0)
    }

    /// Reads an INT8.
    pub fn i8(&mut self) -> Result<i8, DecodeError> {
        self.need(1, "INT8")?;
        Ok(self.buf.get_i8())
    }

    /// Reads an INT16.
    pub fn i16(&mut self) -> Result<i16, DecodeError> {
        self.need(2, "INT16")?;
        Ok(self.buf.get_i16())
    }

    /// Reads an INT32.
    pub fn i32(&mut self) -> Result<i32, DecodeError> {
        self.need(4, "INT32")?;
        Ok(self.buf.get_i32())
    }

    /// Reads an INT64.
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        self.need(8, "INT64")?;
        Ok(self.buf.get_i64())
    }

    /// Reads a UUID (16 bytes).
    pub fn uuid(&mut self) -> Result<[u8; 16], DecodeError> {
        self.need(16, "UUID")?;
        let mut id = [0u8; 16];
        self.buf.copy_to_slice(&mut id);
        Ok(id)
    }

    /// Reads an unsigned varint (at most 5 bytes for 32 bits).
    pub fn unsigned_varint(&mut self) -> Result<u32, DecodeError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            self.need(1, "UNSIGNED_VARINT")?;
            let byte = self.buf.get_u8();
            if i == 4 && byte > 0x0f {
                return Err(self.error("UNSIGNED_VARINT longer than 32 bits"));
            }
            value |= u32::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.error("UNSIGNED_VARINT longer than 5 bytes"))
    }

    /// Takes `n` bytes as a zero-copy slice of the frame.
    pub fn bytes(&mut self, n: usize, field: &str) -> Result<Bytes, DecodeError> {
        self.need(n, field)?;
        Ok(self.buf.split_to(n))
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize, field: &str) -> Result<(), DecodeError> {
        self.need(n, field)?;
        self.buf.advance(n);
        Ok(())
    }

    /// Reads a length prefix: INT16/INT32 in classic versions, or an unsigned varint holding
    /// length + 1 in flexible ones. `None` means null (-1 / 0).
    fn length(&mut self, flexible: bool, wide: bool) -> Result<Option<usize>, DecodeError> {
        let n: i64 = if flexible {
            i64::from(self.unsigned_varint()?) - 1
        } else if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        match n {
            -1 => Ok(None),
            n if n < -1 => Err(self.error(format!("negative length {n}"))),
            n => Ok(Some(n as usize)),
        }
    }

    /// Reads a (COMPACT_)NULLABLE_STRING as raw bytes; `None` is null.
    pub fn nullable_string_bytes(&mut self, flexible: bool) -> Result<Option<Bytes>, DecodeError> {
        match self.length(flexible, false)? {
            None => Ok(None),
            Some(n) => self.bytes(n, "STRING").map(Some),
        }
    }

    /// Reads a (COMPACT_)NULLABLE_STRING, replacing invalid UTF-8 as Java does.
    pub fn nullable_string(&mut self, flexible: bool) -> Result<Option<String>, DecodeError> {
        Ok(self
            .nullable_string_bytes(flexible)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Reads a non-nullable (COMPACT_)STRING.
    pub fn string(&mut self, flexible: bool) -> Result<String, DecodeError> {
        self.nullable_string(flexible)?
            .ok_or_else(|| self.error("null where a string is required"))
    }

    /// Reads (COMPACT_)NULLABLE_BYTES / RECORDS as a zero-copy slice; `None` is null.
    pub fn nullable_bytes(&mut self, flexible: bool) -> Result<Option<Bytes>, DecodeError> {
        match self.length(flexible, true)? {
            None => Ok(None),
            Some(n) => self.bytes(n, "BYTES").map(Some),
        }
    }

    /// Reads an array length (INT32, or compact in flexible versions). Null reads as zero
    /// elements. The count is checked against the bytes left, assuming each element takes at
    /// least `min_element_size` bytes, so a hostile count fails here instead of at allocation.
    pub fn array_len(
        &mut self,
        flexible: bool,
        min_element_size: usize,
    ) -> Result<usize, DecodeError> {
        let n = self.length(flexible, true)?.unwrap_or(0);
        if n.saturating_mul(min_element_size.max(1)) > self.buf.len() {
            return Err(self.error(format!(
                "array of {n} elements cannot fit in the {} bytes left",
                self.buf.len()
            )));
        }
        Ok(n)
    }

    /// Skips a tagged-field section (flexible versions). Our responses carry no tagged field we
    /// read, so each one is skipped after its length is checked.
    pub fn tagged_fields(&mut self) -> Result<(), DecodeError> {
        let count = self.unsigned_varint()?;
        for _ in 0..count {
            let _tag = self.unsigned_varint()?;
            let size = self.unsigned_varint()? as usize;
            self.skip(size, "tagged field")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoder(bytes: &'static [u8]) -> Decoder {
        Decoder::new(Bytes::from_static(bytes), "Test", 0)
    }

    #[test]
    fn reads_big_endian_integers() {
        let mut d = decoder(&[0x00, 0x01, 0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(d.i16().unwrap(), 1);
        assert_eq!(d.i32().unwrap(), -2);
        assert_eq!(d.remaining(), 0);
    }

    #[test]
    fn short_buffer_is_an_error_with_position() {
        let mut d = decoder(&[0x00, 0x01, 0x02]);
        d.i16().unwrap();
        let err = d.i32().unwrap_err();
        assert_eq!(err.position, 2);
        assert!(err.to_string().contains("INT32 needs 4 bytes"), "{err}");
    }

    #[test]
    fn varints_over_32_bits_are_rejected() {
        let mut d = decoder(&[0xff, 0xff, 0xff, 0xff, 0x7f]);
        assert!(d.unsigned_varint().is_err());
        let mut d = decoder(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(d.unsigned_varint().unwrap(), u32::MAX);
    }

    #[test]
    fn hostile_array_count_fails_before_allocation() {
        // INT32 count of 2^31 - 1 with four bytes behind it.
        let mut d = decoder(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        assert!(d.array_len(false, 1).is_err());
        let mut d = decoder(&[0x00, 0x00, 0x00, 0x02, 0, 0, 0, 0]);
        assert_eq!(d.array_len(false, 2).unwrap(), 2);
    }

    #[test]
    fn compact_strings_and_nulls() {
        let mut d = decoder(&[0x03, b'h', b'i', 0x00]);
        assert_eq!(d.string(true).unwrap(), "hi");
        assert_eq!(d.nullable_string(true).unwrap(), None);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let mut d = decoder(&[0x00, 0x02, 0xff, b'a']);
        assert_eq!(d.string(false).unwrap(), "\u{fffd}a");
    }

    #[test]
    fn tagged_fields_are_skipped() {
        // two tagged fields: tag 0 size 2, tag 5 size 0; then an INT8.
        let mut d = decoder(&[0x02, 0x00, 0x02, 0xaa, 0xbb, 0x05, 0x00, 0x07]);
        d.tagged_fields().unwrap();
        assert_eq!(d.i8().unwrap(), 7);
    }
}
