//! Zigzag varints as records use them (protobuf encoding), bounds-checked.
//!
//! Like Java's `ByteUtils.readVarint`, a varint may take at most 5 bytes (a varlong 10); bits
//! of the last byte beyond the type's width are dropped, as Java drops them.
//!
//! # References
//! - <https://kafka.apache.org/documentation/#record>
//! - <https://protobuf.dev/programming-guides/encoding/#varints>

/// Why a varint could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The data ended in the middle of the varint.
    Truncated,
    /// More bytes than the type allows.
    TooLong,
}

/// Reads a zigzag varint (i32) at `*pos`, advancing `*pos`.
#[inline(always)]
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintError> {
    // Fast path: most lengths and deltas in a record fit one byte.
    let first = *buf.get(*pos).ok_or(VarintError::Truncated)?;
    *pos += 1;
    let raw = if first < 0x80 {
        u32::from(first)
    } else {
        let mut value = u32::from(first & 0x7f);
        let mut shift = 7;
        loop {
            let b = *buf.get(*pos).ok_or(VarintError::Truncated)?;
            *pos += 1;
            value |= u32::from(b & 0x7f) << shift;
            if b < 0x80 {
                break value;
            }
            if shift == 28 {
                return Err(VarintError::TooLong);
            }
            shift += 7;
        }
    };
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zigzag varlong (i64) at `*pos`, advancing `*pos`.
#[inline(always)]
pub(crate) fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintError> {
    let first = *buf.get(*pos).ok_or(VarintError::Truncated)?;
    *pos += 1;
    let raw = if first < 0x80 {
        u64::from(first)
    } else {
        let mut value = u64::from(first & 0x7f);
        let mut shift = 7;
        loop {
            let b = *buf.get(*pos).ok_or(VarintError::Truncated)?;
            *pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                break value;
            }
            if shift == 63 {
                return Err(VarintError::TooLong);
            }
            shift += 7;
        }
    };
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// Appends `value` as a zigzag varint.
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    let mut v = ((value << 1) ^ (value >> 31)) as u32;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `value` as a zigzag varlong.
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        // Zigzag: 0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3; 150 -> 300 -> [0xac, 0x02].
        for (value, bytes) in [
            (0, vec![0x00]),
            (-1, vec![0x01]),
            (1, vec![0x02]),
            (-2, vec![0x03]),
            (150, vec![0xac, 0x02]),
            (i32::MAX, vec![0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, vec![0xff, 0xff, 0xff, 0xff, 0x0f]),
        ] {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out, bytes, "encoding {value}");
            let mut pos = 0;
            assert_eq!(read_varint(&bytes, &mut pos), Ok(value));
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn truncated_varint_is_an_error() {
        let mut pos = 0;
        assert_eq!(read_varint(&[], &mut pos), Err(VarintError::Truncated));
        let mut pos = 0;
        assert_eq!(
            read_varint(&[0x80, 0x80], &mut pos),
            Err(VarintError::Truncated)
        );
        let mut pos = 0;
        assert_eq!(
            read_varlong(&[0xff; 9], &mut pos),
            Err(VarintError::Truncated)
        );
    }

    #[test]
    fn overlong_varint_is_an_error() {
        let mut pos = 0;
        assert_eq!(read_varint(&[0x80; 6], &mut pos), Err(VarintError::TooLong));
        let mut pos = 0;
        assert_eq!(
            read_varlong(&[0x80; 11], &mut pos),
            Err(VarintError::TooLong)
        );
    }

    #[test]
    fn reads_at_an_offset() {
        let mut pos = 1;
        assert_eq!(read_varint(&[0xff, 0x04, 0x00], &mut pos), Ok(2));
        assert_eq!(pos, 2);
    }

    proptest! {
        #[test]
        fn varint_round_trip(v in any::<i32>()) {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            let mut pos = 0;
            prop_assert_eq!(read_varint(&out, &mut pos), Ok(v));
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn varlong_round_trip(v in any::<i64>()) {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            let mut pos = 0;
            prop_assert_eq!(read_varlong(&out, &mut pos), Ok(v));
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            let mut pos = 0;
            let _ = read_varint(&bytes, &mut pos);
            prop_assert!(pos <= bytes.len());
            let mut pos = 0;
            let _ = read_varlong(&bytes, &mut pos);
            prop_assert!(pos <= bytes.len());
        }
    }
}
