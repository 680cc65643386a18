//! Child processes the tests start (killed when dropped), free loopback ports, and waiting for
//! a condition with a deadline.

use std::process::Child;
use std::time::{Duration, Instant};

/// A child process killed (and reaped) when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port free a moment ago and never handed out before in this test binary (the
/// etcd harness's, so that the etcd members and servers of one test never share one).
#[allow(unused_imports)] // as `dead_code` for the helpers: not every test binary takes a port
pub use kubeplane_storage::etcd_testing::free_port;

/// Polls `done` every 100 ms; fails the test naming `what` after `secs` seconds.
pub fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
