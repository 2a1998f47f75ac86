//! Kafka's internal `Struct` encoding as MirrorMaker 2 uses it: fields concatenated big-endian,
//! no tags, no field count; `STRING` is an `int16` length then that many bytes.
//!
//! The reader borrows from the record bytes and checks every length against what is left, so a
//! hostile length can neither panic nor allocate. Trailing bytes after the last field are ignored,
//! as Java's `Schema.read` ignores them.
//!
//! # References
//! - `org.apache.kafka.common.protocol.types.Type` (`INT16`, `INT32`, `INT64`, `STRING`)

use super::error::{DecodeError, DecodeFailure, Mm2Error};

/// Which half of a record a [`Reader`] walks; decides the truncation reason.
#[derive(Clone, Copy)]
pub(crate) enum Part {
    Key,
    Value,
}

/// A bounds-checked cursor over one key or value.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    part: Part,
    record: &'static str,
}

impl<'a> Reader<'a> {
    /// Reads `buf`, the `part` of a `record` (e.g. `"checkpoint key"`, used in errors).
    pub(crate) fn new(buf: &'a [u8], part: Part, record: &'static str) -> Self {
        Reader { buf, part, record }
    }

    fn fail(&self, reason: DecodeFailure, field: &'static str) -> DecodeError {
        DecodeError {
            reason,
            record: self.record,
            field,
        }
    }

    fn truncated(&self, field: &'static str) -> DecodeError {
        let reason = match self.part {
            Part::Key => DecodeFailure::KeyTruncated,
            Part::Value => DecodeFailure::ValueTruncated,
        };
        self.fail(reason, field)
    }

    fn take<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        match self.buf.split_first_chunk::<N>() {
            Some((head, rest)) => {
                self.buf = rest;
                Ok(*head)
            }
            None => Err(self.truncated(field)),
        }
    }

    pub(crate) fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        self.take::<2>(field).map(i16::from_be_bytes)
    }

    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.take::<4>(field).map(i32::from_be_bytes)
    }

    pub(crate) fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.take::<8>(field).map(i64::from_be_bytes)
    }

    /// A non-nullable `STRING`, returned as the raw (possibly invalid UTF-8) bytes.
    pub(crate) fn string(&mut self, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.i16(field)?;
        // A negative length is checked before the overrun, as Java's Type.STRING.read does.
        let len =
            usize::try_from(len).map_err(|_| self.fail(DecodeFailure::NegativeLength, field))?;
        if len > self.buf.len() {
            return Err(self.truncated(field));
        }
        let (bytes, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(bytes)
    }
}

/// Appends a non-nullable `STRING`; fails, as Java's writer does, past 32767 bytes.
pub(crate) fn put_string(out: &mut Vec<u8>, field: &'static str, s: &[u8]) -> Result<(), Mm2Error> {
    let len = i16::try_from(s.len()).map_err(|_| Mm2Error::StringTooLong {
        field,
        len: s.len(),
    })?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_reads_length_then_bytes_and_leaves_the_rest() {
        let mut r = Reader::new(b"\x00\x02hi\x7f", Part::Key, "test key");
        assert_eq!(r.string("s").unwrap(), b"hi");
        assert_eq!(r.buf, b"\x7f");
    }

    #[test]
    fn negative_length_is_reported_before_overrun() {
        let mut r = Reader::new(b"\xff\xff", Part::Value, "test value");
        let err = r.string("s").unwrap_err();
        assert_eq!(err.reason, DecodeFailure::NegativeLength);
        assert_eq!(err.field, "s");
    }

    #[test]
    fn overrun_is_truncation_of_the_right_part() {
        let mut r = Reader::new(b"\x00\x05abc", Part::Key, "test key");
        assert_eq!(
            r.string("s").unwrap_err().reason,
            DecodeFailure::KeyTruncated
        );
        let mut r = Reader::new(b"\x00\x00\x00", Part::Value, "test value");
        assert_eq!(
            r.i32("n").unwrap_err().reason,
            DecodeFailure::ValueTruncated
        );
    }

    #[test]
    fn error_message_names_record_field_and_reason() {
        let err = DecodeError {
            reason: DecodeFailure::NegativeLength,
            record: "checkpoint key",
            field: "topic",
        };
        let text = err.to_string();
        assert!(text.contains("checkpoint key"), "{text}");
        assert!(text.contains("`topic`"), "{text}");
        assert!(text.contains("negative"), "{text}");
    }

    #[test]
    fn put_string_refuses_what_an_int16_cannot_hold() {
        let mut out = Vec::new();
        put_string(&mut out, "s", &[b'a'; 32767]).unwrap();
        assert_eq!(&out[..2], &[0x7f, 0xff]);
        let err = put_string(&mut Vec::new(), "s", &[b'a'; 32768]).unwrap_err();
        assert_eq!(
            err,
            Mm2Error::StringTooLong {
                field: "s",
                len: 32768
            }
        );
    }
}
