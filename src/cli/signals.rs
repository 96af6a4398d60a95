//! SIGINT and SIGTERM end a run cleanly.
//!
//! The handler only raises a flag that the harness reads once per step (see
//! [`Harness::stop_when`](crate::harness::Harness::stop_when)), so the step under way
//! finishes, the trace is flushed and a checkpoint written before the process exits with
//! 128 + the signal.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Raised by the handler.
pub(super) static RAISED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomic stores: async-signal-safe.
    SIGNAL.store(sig, Ordering::Relaxed);
    RAISED.store(true, Ordering::Relaxed);
}

/// Installs the handler for SIGINT and SIGTERM.
pub(super) fn install() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only performs atomic stores, which are async-signal-safe.
        unsafe {
            libc::signal(sig, handler as libc::sighandler_t);
        }
    }
}

/// The exit code the caught signal earns (130 for SIGINT, 143 for SIGTERM), if any.
pub(super) fn code() -> Option<u8> {
    RAISED
        .load(Ordering::Relaxed)
        .then(|| 128 + SIGNAL.load(Ordering::Relaxed) as u8)
}
