//! SIGINT and SIGTERM: remove every temporary file and directory Tessera has live, then exit
//! with 128 + the signal's number (130, 143).
//!
//! The signals are blocked in the main thread before any other thread exists, so every thread
//! (the OpenMP workers of the kernels included) inherits the mask, and one thread waits for
//! them with `sigwait`: the cleanup runs in an ordinary thread, not in a signal handler. Child
//! processes (the C compiler) start with an empty mask, as `std::process::Command` resets it.
//! Outputs are written to a registered temporary file and renamed into place, so after the
//! cleanup each output is whole (renamed before the signal) or absent.
//!
//! A command that can end early with a useful result (`tessera tune`: the best plan timed so
//! far) asks for a graceful stop ([`stop_gracefully`]): the first signal then only sets a flag
//! the command polls ([`stop_requested`]); a second one exits as above.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a signal ends the process without a message.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Whether the first signal asks the running command to stop and report instead of exiting.
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// Whether a signal asked the running command to stop (in graceful mode).
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// From now on, the first SIGINT or SIGTERM asks the command to stop ([`stop_requested`])
/// instead of ending the process; a second one ends it.
pub fn stop_gracefully() {
    GRACEFUL.store(true, Ordering::SeqCst);
}

/// Whether a signal asked the command to stop (see [`stop_gracefully`]).
pub fn stop_requested() -> bool {
    STOP_REQUESTED.load(Ordering::SeqCst)
}

/// Ends the process without a message on a signal: a rank of an MPI job waiting for rank 0,
/// whose report of the same error ends the job (and every rank with a signal).
#[cfg(feature = "mpi")]
pub fn quiet() {
    QUIET.store(true, Ordering::SeqCst);
}

/// Blocks SIGINT and SIGTERM in this thread and starts the thread that handles them. Call it
/// first thing in `main`, before any other thread is started.
pub fn install() {
    // SAFETY: plain libc calls on a local, initialised signal set.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return; // The default behaviour (no cleanup) is left in place.
        }
        set
    };
    let spawned = std::thread::Builder::new()
        .name("tessera-signals".into())
        .spawn(move || wait_and_exit(set));
    if spawned.is_err() {
        // Without the waiting thread the blocked signals would be ignored: unblock them.
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
}

/// Waits for a signal of `set`, removes the live temporaries and exits.
fn wait_and_exit(set: libc::sigset_t) {
    loop {
        let mut signal: libc::c_int = 0;
        // SAFETY: `set` is an initialised signal set; `signal` is a valid out-pointer.
        if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
            continue;
        }
        let name = if signal == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        if GRACEFUL.load(Ordering::SeqCst) && !STOP_REQUESTED.swap(true, Ordering::SeqCst) {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(
                stderr,
                "tessera: {name}: stopping after the candidate being timed (again to stop at once)"
            );
            continue;
        }
        // Held until exit: no temporary is registered, hence created, after this.
        let _registry = tessera_cleanup::remove_all_for_exit();
        if !QUIET.load(Ordering::SeqCst) {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(
                stderr,
                "tessera: interrupted by {name}; temporary files removed, outputs not yet written are absent"
            );
            let _ = stderr.flush();
        }
        // `_exit`: no exit handlers, which could wait on threads still running kernels.
        // SAFETY: ends the process at once; nothing is used afterwards.
        unsafe { libc::_exit(128 + signal) };
    }
}
