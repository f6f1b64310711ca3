//! USB descriptors and standard requests (USB 2.0 ch. 9, USB 3.2 §9.6): the device descriptor,
//! and a walk of the configuration descriptor for mass-storage interfaces and their bulk
//! endpoints.
//!
//! Pure logic, host-tested. Descriptors come from devices: every length is checked, and a
//! malformed one ends the walk instead of being trusted.

use alloc::vec::Vec;

/// Descriptor types.
pub const DEVICE: u8 = 1;
pub const CONFIGURATION: u8 = 2;
pub const INTERFACE: u8 = 4;
pub const ENDPOINT: u8 = 5;
pub const SS_ENDPOINT_COMPANION: u8 = 48;

/// Mass-storage class codes.
pub const CLASS_MASS_STORAGE: u8 = 0x08;
pub const SUBCLASS_SCSI: u8 = 0x06;
pub const PROTOCOL_BULK_ONLY: u8 = 0x50;
pub const PROTOCOL_UAS: u8 = 0x62;

/// A standard or class request's 8-byte setup packet.
pub fn request(request_type: u8, request: u8, value: u16, index: u16, length: u16) -> [u8; 8] {
    let v = value.to_le_bytes();
    let i = index.to_le_bytes();
    let l = length.to_le_bytes();
    [request_type, request, v[0], v[1], i[0], i[1], l[0], l[1]]
}

/// GET_DESCRIPTOR (device to host, standard, device).
pub fn get_descriptor(kind: u8, index: u8, length: u16) -> [u8; 8] {
    request(0x80, 6, u16::from(kind) << 8 | u16::from(index), 0, length)
}

/// SET_CONFIGURATION.
pub fn set_configuration(value: u8) -> [u8; 8] {
    request(0x00, 9, u16::from(value), 0, 0)
}

/// CLEAR_FEATURE(ENDPOINT_HALT) on `endpoint_address`.
pub fn clear_endpoint_halt(endpoint_address: u8) -> [u8; 8] {
    request(0x02, 1, 0, u16::from(endpoint_address), 0)
}

/// Bulk-Only Mass Storage Reset (class request to the interface).
pub fn bulk_only_reset(interface: u8) -> [u8; 8] {
    request(0x21, 0xff, 0, u16::from(interface), 0)
}

/// The fields of a device descriptor the driver uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceDescriptor {
    pub usb_version: u16,
    pub class: u8,
    /// bMaxPacketSize0 as sent (for USB 3 devices, an exponent: 9 means 512).
    pub max_packet0: u8,
    pub vendor: u16,
    pub product: u16,
    pub configurations: u8,
}

/// Parses a device descriptor; 8 bytes are enough for the max packet size (the rest is 0).
pub fn parse_device(bytes: &[u8]) -> Option<DeviceDescriptor> {
    if bytes.len() < 8 || bytes[1] != DEVICE || bytes[0] < 8 {
        return None;
    }
    let u16_at = |i: usize| {
        bytes
            .get(i..i + 2)
            .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
    };
    Some(DeviceDescriptor {
        usb_version: u16_at(2),
        class: bytes[4],
        max_packet0: bytes[7],
        vendor: u16_at(8),
        product: u16_at(10),
        configurations: bytes.get(17).copied().unwrap_or(0),
    })
}

/// The default control endpoint's max packet size from bMaxPacketSize0 (an exponent from USB
/// 3.0 on).
pub fn ep0_max_packet(d: &DeviceDescriptor) -> u16 {
    if d.usb_version >= 0x0300 {
        1u16.checked_shl(u32::from(d.max_packet0)).unwrap_or(512)
    } else {
        u16::from(d.max_packet0)
    }
}

/// A bulk endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkEndpoint {
    pub address: u8,
    pub max_packet: u16,
    /// SuperSpeed companion bMaxBurst (0 without a companion).
    pub max_burst: u8,
}

/// A mass-storage interface (any protocol) and its bulk endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageInterface {
    pub number: u8,
    pub alternate: u8,
    pub subclass: u8,
    pub protocol: u8,
    pub bulk_in: Option<BulkEndpoint>,
    pub bulk_out: Option<BulkEndpoint>,
}

impl StorageInterface {
    /// Whether the driver can use it: SCSI over bulk-only transport with both endpoints.
    pub fn usable(&self) -> bool {
        self.subclass == SUBCLASS_SCSI
            && self.protocol == PROTOCOL_BULK_ONLY
            && self.bulk_in.is_some()
            && self.bulk_out.is_some()
    }
}

/// What a configuration descriptor holds for the driver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Configuration {
    pub value: u8,
    pub total_length: u16,
    /// Classes of the interfaces that are not mass storage (for notes).
    pub other_classes: Vec<u8>,
    pub storage: Vec<StorageInterface>,
    /// Whether the walk stopped at a malformed descriptor.
    pub malformed: bool,
}

/// The configuration descriptor's header: its value and total length (9 bytes suffice).
pub fn parse_configuration(bytes: &[u8]) -> Option<Configuration> {
    if bytes.len() < 9 || bytes[1] != CONFIGURATION || bytes[0] < 9 {
        return None;
    }
    let mut c = Configuration {
        value: bytes[5],
        total_length: u16::from_le_bytes([bytes[2], bytes[3]]),
        ..Configuration::default()
    };
    let end = bytes.len().min(usize::from(c.total_length));
    let mut at = usize::from(bytes[0]);
    // Only alternate setting 0 of each interface is used (bulk-only has no others).
    let mut current: Option<usize> = None;
    let mut last_bulk: Option<(usize, bool)> = None;
    while at + 2 <= end {
        let len = usize::from(bytes[at]);
        if len < 2 || at + len > end {
            c.malformed = true;
            break;
        }
        let d = &bytes[at..at + len];
        match d[1] {
            INTERFACE if len >= 9 => {
                last_bulk = None;
                current = None;
                if d[3] != 0 {
                    // an alternate setting
                } else if d[5] == CLASS_MASS_STORAGE {
                    c.storage.push(StorageInterface {
                        number: d[2],
                        alternate: d[3],
                        subclass: d[6],
                        protocol: d[7],
                        bulk_in: None,
                        bulk_out: None,
                    });
                    current = Some(c.storage.len() - 1);
                } else {
                    c.other_classes.push(d[5]);
                }
            }
            ENDPOINT if len >= 7 => {
                last_bulk = None;
                if let Some(i) = current
                    && d[3] & 0b11 == 0b10
                {
                    let ep = BulkEndpoint {
                        address: d[2],
                        max_packet: u16::from_le_bytes([d[4], d[5]]) & 0x7ff,
                        max_burst: 0,
                    };
                    let is_in = d[2] & 0x80 != 0;
                    let slot = if is_in {
                        &mut c.storage[i].bulk_in
                    } else {
                        &mut c.storage[i].bulk_out
                    };
                    if slot.is_none() {
                        *slot = Some(ep);
                        last_bulk = Some((i, is_in));
                    }
                }
            }
            SS_ENDPOINT_COMPANION if len >= 6 => {
                if let Some((i, is_in)) = last_bulk.take() {
                    let slot = if is_in {
                        &mut c.storage[i].bulk_in
                    } else {
                        &mut c.storage[i].bulk_out
                    };
                    if let Some(ep) = slot {
                        ep.max_burst = d[2].min(15);
                    }
                }
            }
            _ => {}
        }
        at += len;
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QEMU's usb-storage on a SuperSpeed port: configuration, interface 8/6/0x50, bulk IN
    /// 0x81 and OUT 0x02 with companions (max burst 15 for IN only, to tell them apart).
    fn superspeed_config() -> Vec<u8> {
        let mut v = vec![9, 2, 0, 0, 1, 1, 0, 0xc0, 0];
        v.extend([9, 4, 0, 0, 2, 8, 6, 0x50, 0]);
        v.extend([7, 5, 0x81, 2, 0x00, 0x04, 0]);
        v.extend([6, 48, 15, 0, 0, 0]);
        v.extend([7, 5, 0x02, 2, 0x00, 0x04, 0]);
        v.extend([6, 48, 0, 0, 0, 0]);
        let len = v.len() as u16;
        v[2..4].copy_from_slice(&len.to_le_bytes());
        v
    }

    #[test]
    fn finds_the_bulk_only_interface_and_its_endpoints() {
        let c = parse_configuration(&superspeed_config()).unwrap();
        assert_eq!(c.value, 1);
        assert!(!c.malformed);
        assert_eq!(c.storage.len(), 1);
        let s = c.storage[0];
        assert!(s.usable());
        assert_eq!(
            s.bulk_in,
            Some(BulkEndpoint {
                address: 0x81,
                max_packet: 1024,
                max_burst: 15
            })
        );
        assert_eq!(s.bulk_out.unwrap().max_burst, 0);
        assert_eq!(s.bulk_out.unwrap().address, 0x02);
    }

    #[test]
    fn uas_and_other_classes_are_reported_not_used() {
        let mut v = vec![9, 2, 0, 0, 2, 1, 0, 0xc0, 0];
        v.extend([9, 4, 0, 0, 4, 8, 6, 0x62, 0]);
        v.extend([7, 5, 0x81, 2, 0x00, 0x02, 0]);
        v.extend([7, 5, 0x02, 2, 0x00, 0x02, 0]);
        v.extend([9, 4, 1, 0, 1, 3, 1, 1, 0]);
        let len = v.len() as u16;
        v[2..4].copy_from_slice(&len.to_le_bytes());
        let c = parse_configuration(&v).unwrap();
        assert_eq!(c.storage.len(), 1);
        assert!(!c.storage[0].usable());
        assert_eq!(c.storage[0].protocol, PROTOCOL_UAS);
        assert_eq!(c.other_classes, vec![3]);
    }

    #[test]
    fn malformed_descriptors_stop_the_walk() {
        let mut v = superspeed_config();
        v[9] = 0; // the interface descriptor's length
        let c = parse_configuration(&v).unwrap();
        assert!(c.malformed);
        assert!(c.storage.is_empty());
        // Truncated: the total length claims more than was read.
        let v = superspeed_config();
        let c = parse_configuration(&v[..20]).unwrap();
        assert!(c.storage.iter().all(|s| !s.usable()));
        assert!(parse_configuration(&v[..8]).is_none());
    }

    #[test]
    fn device_descriptor_and_ep0_packet_size() {
        let full = [
            18, 1, 0x00, 0x02, 0, 0, 0, 64, 0x27, 0x06, 0x01, 0x00, 0, 1, 1, 2, 3, 1,
        ];
        let d = parse_device(&full).unwrap();
        assert_eq!((d.vendor, d.product, d.configurations), (0x0627, 1, 1));
        assert_eq!(ep0_max_packet(&d), 64);
        let first8 = parse_device(&full[..8]).unwrap();
        assert_eq!(first8.max_packet0, 64);
        let mut ss = full;
        ss[2..4].copy_from_slice(&0x0300u16.to_le_bytes());
        ss[7] = 9;
        assert_eq!(ep0_max_packet(&parse_device(&ss).unwrap()), 512);
        assert!(parse_device(&[18, 2, 0, 0, 0, 0, 0, 8]).is_none());
    }

    #[test]
    fn requests_encode_little_endian() {
        assert_eq!(get_descriptor(DEVICE, 0, 18), [0x80, 6, 0, 1, 0, 0, 18, 0]);
        assert_eq!(clear_endpoint_halt(0x81), [2, 1, 0, 0, 0x81, 0, 0, 0]);
        assert_eq!(bulk_only_reset(0), [0x21, 0xff, 0, 0, 0, 0, 0, 0]);
    }
}
