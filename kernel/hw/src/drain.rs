//! Sending to a device that may stop taking bytes (a UART that passes the probe but never
//! drains): every wait is bounded, so a stuck device costs one timeout, never the run.
//! Pure logic over a sender and a clock, host-tested; `serial` drives COM1 with it.

/// Why a send stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stalled {
    /// Bytes that went out before the device stopped taking them.
    pub sent: usize,
    /// Clock ticks waited without progress.
    pub waited: u64,
}

/// Sends `bytes` through `send` (which takes what it can and says how many, 0 when the device
/// is busy), giving up when `limit` ticks of `now` pass without progress.
pub fn send_bounded(
    bytes: &[u8],
    send: &mut dyn FnMut(&[u8]) -> usize,
    now: &mut dyn FnMut() -> u64,
    limit: u64,
) -> Result<(), Stalled> {
    let mut sent = 0;
    let mut since = now();
    while sent < bytes.len() {
        let n = send(&bytes[sent..]);
        if n > 0 {
            sent += n;
            since = now();
            continue;
        }
        let waited = now().wrapping_sub(since);
        if waited > limit {
            return Err(Stalled { sent, waited });
        }
        core::hint::spin_loop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_that_never_drains_costs_one_timeout() {
        let mut t = 0u64;
        let mut now = || {
            t += 10;
            t
        };
        // Takes 4 bytes, then nothing ever again.
        let mut taken = 0;
        let mut send = |b: &[u8]| {
            let n = b.len().min(4usize.saturating_sub(taken));
            taken += n;
            n
        };
        let r = send_bounded(b"0123456789", &mut send, &mut now, 1000);
        let e = r.unwrap_err();
        assert_eq!(e.sent, 4);
        assert!(e.waited > 1000 && e.waited < 1100, "{e:?}");
    }

    #[test]
    fn a_slow_device_that_keeps_draining_gets_everything() {
        let mut t = 0u64;
        let mut now = || {
            t += 1;
            t
        };
        // One byte every 50 polls: slow, but never 100 ticks without progress.
        let mut polls = 0;
        let mut out = [0u8; 3];
        let mut len = 0;
        let mut send = |b: &[u8]| {
            polls += 1;
            if polls % 50 == 0 {
                out[len] = b[0];
                len += 1;
                1
            } else {
                0
            }
        };
        assert_eq!(send_bounded(b"abc", &mut send, &mut now, 100), Ok(()));
        assert_eq!(&out, b"abc");
    }
}
