//! Root-hub ports (xHCI 1.2 §4.19): power, connection, reset and speed.
//!
//! USB 2 ports need a reset to be enabled (PR, then PRC and PED); USB 3 ports enable
//! themselves when link training succeeds, and a warm reset retries a link that did not come
//! up. Which kind a port is comes from the Supported Protocol capabilities; without one the
//! driver resets any connected port that is not enabled yet.

use alloc::format;
use alloc::string::String;

use super::regs::*;
use super::xhci::Controller;
use crate::devices::clock;

/// Turns on every port's power where software switches it, and waits the 20 ms the hub
/// specification gives power to become good (USB 2.0 §11.23, bPwrOn2PwrGood in a root hub).
pub fn power_all(c: &mut Controller) {
    if !c.port_power_control() {
        return;
    }
    let mut switched = false;
    for port in 1..=c.ports {
        if c.portsc(port) & PORT_PP == 0 {
            c.write_portsc(port, PORT_PP);
            switched = true;
        }
    }
    if switched {
        clock::sleep_ms(20);
    }
}

/// Waits until ports with a device have settled: a USB 3 link trains within tens of
/// milliseconds after the controller runs, a USB 2 device shows its connection after its
/// debounce. Returns early once every connected port is either enabled or has been stable.
pub fn settle(c: &mut Controller) {
    // Long enough for USB 3 link training and USB 2 connect debounce (100 ms, USB 2.0 §7.1.7.3).
    clock::sleep_ms(100);
    let _ = clock::wait_until(400, || {
        (1..=c.ports).all(|p| {
            let sc = c.portsc(p);
            sc & PORT_CCS == 0 || sc & PORT_PED != 0 || c.port_major(p) != Some(3)
        })
    });
}

/// Whether a device is connected to `port`.
pub fn connected(c: &mut Controller, port: u8) -> bool {
    c.portsc(port) & PORT_CCS != 0
}

/// Enables `port` (resetting it if needed) and returns its speed (PORTSC speed value).
pub fn enable(c: &mut Controller, port: u8) -> Result<u8, String> {
    let sc = c.portsc(port);
    // Clear the change bits so the ones the reset sets can be seen.
    c.write_portsc(port, sc & PORT_CHANGES);
    let usb3 = c.port_major(port) == Some(3);
    if sc & PORT_PED == 0 {
        // USB 2 port reset; on a USB 3 port whose link did not train, a warm reset.
        let (strobe, done) = if usb3 {
            (PORT_WPR, PORT_WRC | PORT_PRC)
        } else {
            (PORT_PR, PORT_PRC)
        };
        c.write_portsc(port, strobe);
        if !clock::wait_until(500, || c.portsc(port) & done != 0) {
            return Err(format!(
                "{} did not complete within 500 ms (PORTSC {:#010x})",
                if usb3 { "warm reset" } else { "reset" },
                c.portsc(port)
            ));
        }
        let after = c.portsc(port);
        c.write_portsc(port, after & PORT_CHANGES);
        // Reset recovery (USB 2.0 §7.1.7.5, TRSTRCY): the device may ignore requests for 10 ms.
        clock::sleep_ms(10);
    }
    let sc = c.portsc(port);
    if sc & PORT_CCS == 0 {
        return Err(String::from("the device disconnected during the reset"));
    }
    if sc & PORT_PED == 0 {
        return Err(format!(
            "not enabled after the reset (PORTSC {sc:#010x}, link state {})",
            (sc >> PORT_PLS_SHIFT) & 0xf
        ));
    }
    Ok(((sc >> PORT_SPEED_SHIFT) & 0xf) as u8)
}
