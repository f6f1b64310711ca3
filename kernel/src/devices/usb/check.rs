//! The USB test actions' data, shared with the host tests that check the disk image afterwards:
//! the digest of a disk's first sectors, and the pattern `usb-write` writes.
//!
//! Pure logic, host-tested.

/// FNV-1a, 64-bit: the digest of the first sectors in `usb_disk` records.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Byte `offset` of sector `lba` of the `usb-write` pattern: every byte depends on both, so a
/// sector written at the wrong place or a shifted buffer shows.
pub fn pattern_byte(lba: u64, offset: usize) -> u8 {
    let x = lba
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add((offset as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    (x ^ x >> 29 ^ x >> 43) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn pattern_differs_between_sectors_and_offsets() {
        let a: Vec<u8> = (0..512).map(|o| pattern_byte(100, o)).collect();
        let b: Vec<u8> = (0..512).map(|o| pattern_byte(101, o)).collect();
        assert_ne!(a, b);
        assert_ne!(a[..256], a[256..]);
        // Not constant within a sector.
        assert!(a.iter().any(|&x| x != a[0]));
    }
}
