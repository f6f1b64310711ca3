//! The boot-time floor image (what `boot-timing` measures baremark's boot against) boots with
//! the BIOS boot's QEMU command, writes its line and exits with the success status.

use std::time::Duration;

#[test]
fn floor_image_writes_its_line_and_exits() {
    let floor = baremark_tests::boot_floor(Duration::from_secs(30)).unwrap();
    assert!(floor.line_after <= floor.exit_after);
}
