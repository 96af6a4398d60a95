//! SIGINT and SIGTERM end a run cleanly.
//!
//! The first signal only raises a flag that the harness reads once per step (see
//! [`Harness::stop_when`](crate::harness::Harness::stop_when)), so the step under way
//! finishes, the trace is flushed and a checkpoint written before the process exits with
//! 128 + the signal. A step can be long (an agent's update after its window), so a second
//! signal ends the process at once, with the same code: the trace then holds what a
//! SIGKILL leaves, every flushed window, and `--resume` continues from the last checkpoint.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Raised by the handler.
pub(super) static RAISED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics, write(2) and _exit(2): async-signal-safe.
    let again = RAISED.swap(true, Ordering::Relaxed);
    let message: &[u8] = if again {
        b"\nperennial: second signal, stopping now\n"
    } else {
        SIGNAL.store(sig, Ordering::Relaxed);
        b"\nperennial: stopping after the step under way (signal again to stop at once)\n"
    };
    // SAFETY: write(2) of a static buffer to stderr and _exit(2) are async-signal-safe.
    unsafe {
        libc::write(libc::STDERR_FILENO, message.as_ptr().cast(), message.len());
        if again {
            libc::_exit(128 + sig);
        }
    }
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
