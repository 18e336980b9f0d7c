//! Faults that end the process (a segmentation fault or bus error, an arithmetic or
//! illegal-instruction trap): Rust cannot turn them into errors, but the `appy`
//! command still says what happened. [`install`] sets a handler that writes one
//! `error:` line, naming the function that was running ([`Running`]) or else calling
//! it an internal compiler error, then hands the signal to the handler that was there
//! before (Rust's stack-overflow report, or the default action), so the process still
//! dies of that signal and its exit status tells which.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

const SIGNALS: [libc::c_int; 4] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL];

/// The previous handlers, to chain to (set before the handlers are installed).
static PREVIOUS: OnceLock<[libc::sigaction; 4]> = OnceLock::new();
/// The `error:` line for a fault while compiled code runs (leaked; null otherwise).
static RUNNING: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static RUNNING_LEN: AtomicUsize = AtomicUsize::new(0);

fn what(sig: libc::c_int, compiled: bool) -> &'static str {
    match (sig, compiled) {
        (libc::SIGSEGV, true) => "SIGSEGV, an invalid memory access (an index out of bounds?)",
        (libc::SIGSEGV, false) => "SIGSEGV, an invalid memory access",
        (libc::SIGBUS, _) => "SIGBUS, an invalid memory access",
        (libc::SIGFPE, true) => "SIGFPE, an integer division by zero or overflow (`//` or `%` by 0?)",
        (libc::SIGFPE, false) => "SIGFPE, an arithmetic fault",
        _ => "SIGILL, an illegal instruction",
    }
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // Only async-signal-safe calls: write(2), sigaction(2), raise(3).
    let p = RUNNING.load(Ordering::Acquire);
    let n = RUNNING_LEN.load(Ordering::Acquire);
    let k = SIGNALS.iter().position(|s| *s == sig).unwrap_or(0);
    unsafe {
        if !p.is_null() {
            libc::write(2, p as *const libc::c_void, n);
        } else {
            let head = b"error: internal compiler error (please report): the compiler crashed: ";
            libc::write(2, head.as_ptr() as *const libc::c_void, head.len());
        }
        let w = what(sig, !p.is_null());
        libc::write(2, w.as_ptr() as *const libc::c_void, w.len());
        libc::write(2, b"\n".as_ptr() as *const libc::c_void, 1);
        // Hand over to the previous handler (SA_RESETHAND left the default in place).
        let Some(prev) = PREVIOUS.get().map(|p| &p[k]) else { return };
        if prev.sa_sigaction == libc::SIG_DFL || prev.sa_sigaction == libc::SIG_IGN {
            libc::sigaction(sig, prev, std::ptr::null_mut());
            // Returning re-executes the faulting instruction, now with the default
            // action; a signal sent by `kill` is raised again.
            if (*info).si_code <= 0 {
                libc::raise(sig);
            }
        } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(prev.sa_sigaction);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
            f(sig);
        }
    }
}

/// Installs the handler (once, at the start of `main`, before other threads).
pub fn install() {
    // SAFETY: sigaction(2) with null new actions reads the current ones; the structs
    // are plain data, zeroed first.
    let previous = SIGNALS.map(|sig| unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old);
        old
    });
    if PREVIOUS.set(previous).is_err() {
        return;
    }
    for sig in SIGNALS {
        // SAFETY: a zeroed, then filled, sigaction struct; the handler only makes
        // async-signal-safe calls.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = handler as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESETHAND;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// While alive, a fault is reported as a crash of compiled function `func`.
pub struct Running(());

impl Running {
    /// Compiled code of `func` runs from now until the value is dropped.
    pub fn new(func: &str) -> Running {
        let line = format!("error: `{func}` (compiled code) crashed: ").into_bytes().into_boxed_slice();
        let len = line.len();
        let old = RUNNING.swap(Box::leak(line).as_mut_ptr(), Ordering::AcqRel);
        RUNNING_LEN.store(len, Ordering::Release);
        // The previous line (if any) stays leaked: a handler may be reading it.
        let _ = old;
        Running(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.store(std::ptr::null_mut(), Ordering::Release);
    }
}
