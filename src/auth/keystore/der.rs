//! Just enough DER to unwrap a JKS private key: a bounded reader of tag-length-value items.
//! Every length is checked against what is left, so a corrupt store is an error, not a panic.

/// DER tags used here.
pub(super) const SEQUENCE: u8 = 0x30;
pub(super) const OCTET_STRING: u8 = 0x04;
pub(super) const OBJECT_IDENTIFIER: u8 = 0x06;

/// A cursor over DER bytes.
pub(super) struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Der(bytes)
    }

    /// The next item, which must have tag `tag`; returns its content.
    pub(super) fn expect(&mut self, tag: u8, what: &str) -> Result<&'a [u8], String> {
        let (&found, rest) = self
            .0
            .split_first()
            .ok_or_else(|| format!("{what} is missing"))?;
        if found != tag {
            return Err(format!("{what} has DER tag 0x{found:02x}, not 0x{tag:02x}"));
        }
        let (&first, mut rest) = rest
            .split_first()
            .ok_or_else(|| format!("{what} has no length"))?;
        let length = if first < 0x80 {
            usize::from(first)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return Err(format!("{what} has an invalid length"));
            }
            let (bytes, after) = rest.split_at(count);
            rest = after;
            bytes.iter().fold(0usize, |n, &b| (n << 8) | usize::from(b))
        };
        if length > rest.len() {
            return Err(format!(
                "{what} claims {length} bytes but only {} remain",
                rest.len()
            ));
        }
        let (content, after) = rest.split_at(length);
        self.0 = after;
        Ok(content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_short_and_long_lengths_and_refuses_overruns() {
        let mut der = Der::new(&[0x04, 0x02, 1, 2, 0x30, 0x81, 0x01, 9]);
        assert_eq!(der.expect(OCTET_STRING, "a").unwrap(), &[1, 2]);
        assert_eq!(der.expect(SEQUENCE, "b").unwrap(), &[9]);
        assert!(der.expect(SEQUENCE, "end").is_err());
        assert!(Der::new(&[0x30, 0x05, 1]).expect(SEQUENCE, "c").is_err());
        assert!(
            Der::new(&[0x30, 0x85, 1, 1, 1, 1, 1])
                .expect(SEQUENCE, "d")
                .is_err()
        );
        assert!(Der::new(&[0x04, 0x00]).expect(SEQUENCE, "e").is_err());
        assert!(Der::new(&[]).expect(SEQUENCE, "f").is_err());
    }
}
