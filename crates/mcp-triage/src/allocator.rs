//! The memory allocator, chosen per command before `main` runs.
//!
//! Why two: `mcp-triage proxy` allocates on its forwarding thread what its record writer frees
//! on another thread, and under load glibc's malloc spent about 12% of the proxy's CPU in arena
//! locks and `malloc_consolidate` (perf); with mimalloc the proxy's CPU per exchange fell by
//! 11–16% (`bench/proxy-ab.sh`). But `classify --batch` on mimalloc went from 38 MB to 96–130 MB
//! peak RSS, past that command's 64 MB target, and the mimalloc options that bring it back
//! halve its speed. So `proxy` runs on mimalloc and every other command on the system allocator.
//!
//! Why before `main`: a block must be freed by the allocator that gave it, so the choice is
//! made once, before the first Rust allocation, and never changes. With glibc, the functions in
//! `.init_array` run before `main` and receive `(argc, argv, envp)`; no Rust code allocates
//! before them (the binary's other entries are the C runtime's, mimalloc's own initialiser and
//! std's, which only stores argv; checked with `readelf -x .init_array`). Elsewhere (musl passes no arguments there; other systems) every command uses
//! the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once, before `main`, by the `.init_array` hook below; read by every allocation after
/// it. Threads started later see it through the happens-before of their spawn.
static MIMALLOC: AtomicBool = AtomicBool::new(false);

/// The commands that run on mimalloc.
const MIMALLOC_COMMANDS: &[&[u8]] = &[b"proxy"];

/// Whether the command line (arguments after the program name) names a command that runs on
/// mimalloc: the first argument that is not an option decides.
pub fn wants_mimalloc<'a>(args: impl IntoIterator<Item = &'a [u8]>) -> bool {
    args.into_iter()
        .find(|a| !a.starts_with(b"-"))
        .is_some_and(|command| MIMALLOC_COMMANDS.contains(&command))
}

/// Which allocator this process runs on (the proxy names it in its start line).
pub fn name() -> &'static str {
    if MIMALLOC.load(Ordering::Relaxed) {
        "mimalloc"
    } else {
        "system"
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod before_main {
    use std::ffi::{c_char, c_int, CStr};
    use std::sync::atomic::Ordering;

    /// glibc calls the `.init_array` entries with `(argc, argv, envp)` before `main`.
    #[used]
    #[link_section = ".init_array"]
    static CHOOSE: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = choose;

    extern "C" fn choose(argc: c_int, argv: *const *const c_char, _envp: *const *const c_char) {
        if argv.is_null() || argc < 2 {
            return;
        }
        let count = usize::try_from(argc).unwrap_or(0);
        // SAFETY: glibc passes the process's argv: `argc` valid pointers to NUL-terminated
        // strings (followed by a null pointer), alive for the whole process. Nothing here
        // allocates.
        let args = (1..count)
            .map(|i| unsafe { *argv.add(i) })
            .take_while(|p| !p.is_null())
            .map(|p| unsafe { CStr::from_ptr(p) }.to_bytes());
        if super::wants_mimalloc(args) {
            super::MIMALLOC.store(true, Ordering::Relaxed);
        }
    }
}

/// The process's allocator: mimalloc or the system's, as decided before `main`.
pub struct PerCommand;

/// mimalloc, through its plain entry points where the alignment allows.
///
/// Why not `mimalloc::MiMalloc` alone: it takes mimalloc's aligned entry points for every
/// request, which check the alignment and look for a fitting block on each call: about 60
/// instructions per allocation where the plain one takes about 25, and a proxied exchange
/// makes some 75 allocations. mimalloc's blocks are whole words and start on a word boundary
/// (its size classes count words), so a request aligned to a word or less is served aligned
/// by the plain entry points; any other goes to `MiMalloc`.
mod mi {
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::c_void;

    use libmimalloc_sys as ffi;
    use mimalloc::MiMalloc;

    /// The largest alignment every mimalloc block has.
    const WORD: usize = std::mem::size_of::<usize>();

    // SAFETY (all four): the caller upholds `GlobalAlloc`'s contract; a layout aligned to at
    // most a word is served by mimalloc's plain functions (see the module doc), any other by
    // `MiMalloc`, and a block from either is freed and resized by mimalloc's own functions,
    // which take blocks of both kinds.
    pub(super) unsafe fn alloc(layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { ffi::mi_malloc(layout.size()).cast() }
        } else {
            unsafe { MiMalloc.alloc(layout) }
        }
    }

    pub(super) unsafe fn alloc_zeroed(layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { ffi::mi_zalloc(layout.size()).cast() }
        } else {
            unsafe { MiMalloc.alloc_zeroed(layout) }
        }
    }

    pub(super) unsafe fn dealloc(ptr: *mut u8) {
        unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
    }

    pub(super) unsafe fn realloc(ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { ffi::mi_realloc(ptr.cast::<c_void>(), new_size).cast() }
        } else {
            unsafe { MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}

/// Whether this process runs on mimalloc (see [`MIMALLOC`]): the same answer on every call.
#[inline]
fn on_mimalloc() -> bool {
    MIMALLOC.load(Ordering::Relaxed)
}

// SAFETY: every call goes to one of two sound allocators, and always the same one for the life
// of the process (the flag is set before the first allocation and never changes), so a block
// is always freed or resized by the allocator that gave it.
unsafe impl GlobalAlloc for PerCommand {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if on_mimalloc() {
            unsafe { mi::alloc(layout) }
        } else {
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if on_mimalloc() {
            unsafe { mi::alloc_zeroed(layout) }
        } else {
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if on_mimalloc() {
            unsafe { mi::dealloc(ptr) }
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if on_mimalloc() {
            unsafe { mi::realloc(ptr, layout, new_size) }
        } else {
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{mi, wants_mimalloc};
    use std::alloc::Layout;

    #[test]
    fn mimalloc_blocks_have_the_alignment_asked_for() {
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 7, 8, 9, 24, 40, 100, 5000, 1 << 20] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; each block is freed once, by mimalloc.
                unsafe {
                    let p = mi::alloc(layout);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{size} / {align}"
                    );
                    p.write_bytes(0xa5, size);
                    let q = mi::realloc(p, layout, size * 3);
                    assert!(
                        !q.is_null() && (q as usize).is_multiple_of(align),
                        "{size} / {align} grown"
                    );
                    assert_eq!(*q.add(size - 1), 0xa5, "the contents move along");
                    mi::dealloc(q);
                    let z = mi::alloc_zeroed(layout);
                    assert!((z as usize).is_multiple_of(align));
                    assert!((0..size).all(|i| *z.add(i) == 0), "{size} / {align} zeroed");
                    mi::dealloc(z);
                }
            }
        }
    }

    fn wants(args: &[&str]) -> bool {
        wants_mimalloc(args.iter().map(|a| a.as_bytes()))
    }

    #[test]
    fn only_the_proxy_command_runs_on_mimalloc() {
        assert!(wants(&["proxy", "--upstream", "http://127.0.0.1:1"]));
        assert!(!wants(&["classify", "--batch", "proxy"]));
        assert!(!wants(&["wrap", "--", "proxy"]));
        assert!(!wants(&[]));
        assert!(!wants(&["--version"]));
        assert!(!wants(&["proxyx"]));
    }
}
