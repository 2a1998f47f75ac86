//! The codecs a batch's records section can be compressed with, as the batch attributes name
//! them.

use std::fmt;

/// The codec a batch's records section is compressed with (attribute bits 0-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (RFC 1952), as Java's `GZIPOutputStream` writes it.
    Gzip,
    /// Snappy, in xerial framing (Java client) or as one raw block.
    Snappy,
    /// LZ4 frame format.
    Lz4,
    /// Zstandard (KIP-110).
    Zstd,
}

impl Compression {
    /// The codec for an attribute id (0-4), or `None` for ids Kafka does not define.
    pub fn from_id(id: u8) -> Option<Compression> {
        Some(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            _ => return None,
        })
    }

    /// The attribute id Kafka uses for this codec.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// Every codec, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        })
    }
}
