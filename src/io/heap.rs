//! Giving freed heap memory back to the kernel.
//!
//! A phase that allocates many small buffers and frees them (the neighbor
//! cache build holds one buffer per encoded list) leaves glibc's heap full
//! of free chunks it keeps mapped: the process's resident size, which a
//! memory cgroup charges, stays at the phase's peak while the next phase
//! allocates beside it. Releasing them between phases keeps the process
//! within the budget the planner computed.

/// Returns the free memory at the top of the heap and in free chunks to the
/// kernel (glibc `malloc_trim(0)`); does nothing elsewhere.
pub fn release_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes no pointers and only walks glibc's own
    // allocator state under its lock; it is safe to call at any time from
    // any thread, and it never frees memory that is still allocated.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Buffers at least this large are mapped on their own and unmapped when
/// freed (see [`map_large_allocations`]).
pub const LARGE_ALLOCATION_BYTES: usize = 1 << 20;

/// glibc heaps (arenas) the process's threads share (see
/// [`map_large_allocations`]).
#[cfg(target_env = "gnu")]
pub const HEAP_ARENAS: libc::c_int = 1;

/// Makes glibc map every allocation of [`LARGE_ALLOCATION_BYTES`] or more
/// on its own and return it to the kernel when it is freed, for the whole
/// process; does nothing elsewhere.
///
/// glibc's default threshold is dynamic: freeing one mapped buffer raises
/// it to that buffer's size, so later buffers up to that size (of every
/// thread) are carved from per-thread heaps that keep freed memory. A run
/// that passes 8 MiB chunks between threads (the staged init) then holds
/// hundreds of MiB it no longer uses. A fixed threshold turns that off.
///
/// It also keeps glibc to one heap ([`HEAP_ARENAS`]) for the smaller
/// allocations: by default every thread that allocates gets an arena of
/// its own (up to 8 per core), and the memory one thread frees stays in
/// its arena, unusable by the others. The sampling workers, the changeset
/// thread, the init reader and the executor each hold some: an epoch on a
/// 6M-node store at `--memory 585MiB` peaked at 590 MiB of anonymous
/// memory with the default arenas, 576 with two and 532 with one (its wall
/// time within the noise of a loaded machine; `docs/lab/performance-journal.md`, "Lean
/// superbatch state").
pub fn map_large_allocations() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt takes two integers and only updates glibc's tunables
    // under its lock; it is safe from any thread at any time, and changing
    // the threshold affects only where future allocations are placed.
    unsafe {
        libc::mallopt(
            libc::M_MMAP_THRESHOLD,
            LARGE_ALLOCATION_BYTES as libc::c_int,
        );
        libc::mallopt(libc::M_ARENA_MAX, HEAP_ARENAS);
    }
}
