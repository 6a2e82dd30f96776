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
