//! The one length prefix of ouro's own socket protocols (the daemon's frames, the keeper's
//! messages): a u32 in big-endian order, checked against the reader's limit before anything
//! is allocated.

/// Bytes of one length prefix.
pub const PREFIX: usize = 4;

/// A length over the limit its reader sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{size} bytes, more than the {limit} allowed")]
pub struct TooLarge {
    pub size: u64,
    pub limit: u32,
}

/// The prefix announcing `len` bytes, at most `limit`.
pub fn encode(len: usize, limit: u32) -> Result<[u8; PREFIX], TooLarge> {
    match u32::try_from(len) {
        Ok(size) if size <= limit => Ok(size.to_be_bytes()),
        _ => Err(TooLarge {
            size: len as u64,
            limit,
        }),
    }
}

/// The length a prefix announces, at most `limit`.
pub fn decode(prefix: [u8; PREFIX], limit: u32) -> Result<u32, TooLarge> {
    let size = u32::from_be_bytes(prefix);
    if size > limit {
        return Err(TooLarge {
            size: size.into(),
            limit,
        });
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_in_network_order_within_their_limit() {
        assert_eq!(encode(258, 1000), Ok([0, 0, 1, 2]));
        assert_eq!(decode([0, 0, 1, 2], 1000), Ok(258));
        assert_eq!(
            encode(1001, 1000),
            Err(TooLarge {
                size: 1001,
                limit: 1000
            })
        );
        assert_eq!(
            decode([0, 0, 3, 233], 1000),
            Err(TooLarge {
                size: 1001,
                limit: 1000
            })
        );
        assert!(encode(usize::MAX, u32::MAX).is_err());
    }
}
