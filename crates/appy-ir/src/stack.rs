//! Stack depth safety for the recursive parts of the compiler.
//!
//! Expressions are trees whose depth follows the source: a flat chain of 5,000 `+`
//! terms is a left-leaning tree 5,000 levels deep, and every walk over it (semantic
//! checks, lowering, printing, MLIR's own passes over what it became) recurses that
//! deep. The parser refuses expressions deeper than [`MAX_EXPR_DEPTH`] with a located
//! error, and every entry point of the compiler runs its work through [`deep`], which
//! runs it on a stack segment large enough for that depth whatever stack the calling
//! thread has (a 2 MiB thread, the Python package's worker, the main thread).

/// The deepest expression tree the frontend accepts (`docs/SUBSET.md`): a
/// left-associative chain of this many binary operators (`a + b + ...`), trailers
/// (`a[0][0]...`, `f()()...`) or `not`s is accepted; one more is an error.
pub const MAX_EXPR_DEPTH: usize = 10_000;

/// Run [`deep`] closures on a new segment when less than this is left on the stack.
const RED_ZONE: usize = 64 << 20;

/// The size of a segment [`deep`] allocates (reserved address space; pages are only
/// committed as the recursion touches them).
const SEGMENT: usize = 512 << 20;

/// Runs `f` with at least 64 MiB of stack: on the current stack when that much is
/// left (nested calls), else on a new 512 MiB segment of this thread (no new thread,
/// so `f` need not be `Send`). Enough for expressions [`MAX_EXPR_DEPTH`] deep through
/// every stage of the compiler, debug builds included.
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recurse(n: usize) -> usize {
        // A frame of about 1 KiB that the optimiser cannot drop.
        let buf = std::hint::black_box([n as u8; 1024]);
        if n == 0 {
            buf[0] as usize
        } else {
            recurse(n - 1) + buf[1] as usize
        }
    }

    #[test]
    fn deep_recursion_fits_on_a_small_thread() {
        // 40,000 frames of 1 KiB: 40 MiB, far more than the thread's 256 KiB.
        let r = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| deep(|| recurse(40_000)))
            .unwrap()
            .join()
            .unwrap();
        assert!(r > 0);
    }
}
