//! Zeroed, aligned byte buffers for direct I/O, and a small pool so the hot
//! path does not allocate.
//!
//! A large buffer (a feature cache of a few GiB) is mapped from the kernel
//! on its own, zeroed by it page by page as the pages are first written,
//! and backed by transparent huge pages where the kernel allows it
//! (`madvise`). Zeroing it up front, as the allocator's `alloc_zeroed` does
//! for an over-aligned layout, touched every 4 KiB page before the first
//! read, before the epoch's first batch was sampled. Huge pages matter
//! where a page fault is expensive, as on a VM. (Both measured in
//! `docs/lab/performance-journal.md`, "Memory allocation and constants".)

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

use crate::error::{Error, Result};

/// Alignment of every buffer: the page size, which satisfies `O_DIRECT` on
/// the filesystems we target (their `STATX_DIOALIGN` memory alignment is at
/// most 4096).
pub const IO_ALIGN: usize = 4096;

/// Buffers of at least this many bytes are mapped on their own (see the
/// module documentation).
pub const MAPPED_BUFFER_BYTES: usize = 4 << 20;

/// A zero-initialised buffer whose start is `IO_ALIGN`-aligned.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
    /// Mapped with `mmap` (unmapped on drop) rather than allocated.
    mapped: bool,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like Vec<u8>); moving
// it between threads moves that ownership.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only allow reads of initialised (zeroed or
// written) bytes, as with &[u8].
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (capacity rounded up to `IO_ALIGN`).
    pub fn zeroed(len: usize) -> Result<Self> {
        let too_large = || Error::OutOfMemory(format!("buffer of {len} bytes is too large"));
        let cap = len
            .div_ceil(IO_ALIGN)
            .max(1)
            .checked_mul(IO_ALIGN)
            .ok_or_else(too_large)?;
        let layout = Layout::from_size_align(cap, IO_ALIGN).map_err(|_| too_large())?;
        let out_of_memory = || Error::OutOfMemory(format!("out of memory allocating {cap} bytes"));
        if cap >= MAPPED_BUFFER_BYTES {
            let ptr = map_zeroed(cap).ok_or_else(out_of_memory)?;
            return Ok(AlignedBuf {
                ptr,
                len,
                layout,
                mapped: true,
            });
        }
        // SAFETY: the layout has a non-zero size (at least IO_ALIGN).
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(out_of_memory)?;
        Ok(AlignedBuf {
            ptr,
            len,
            layout,
            mapped: false,
        })
    }

    /// Bytes usable.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes allocated (a multiple of `IO_ALIGN`).
    pub fn capacity(&self) -> usize {
        self.layout.size()
    }

    /// Grows (never shrinks) the usable length, reallocating zeroed memory
    /// when the capacity is too small. Contents are not preserved.
    pub fn ensure_len(&mut self, len: usize) -> Result<()> {
        if len > self.capacity() {
            *self = AlignedBuf::zeroed(len)?;
        }
        self.len = len;
        Ok(())
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to `capacity >= len` initialised bytes owned by
        // self; the shared borrow of self prevents concurrent mutation.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in as_slice, and the exclusive borrow of self makes this
        // the only reference to the bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Raw pointer to byte `offset` (for submitting reads). The caller must
    /// keep `self` alive and unaliased until the read completes.
    pub fn ptr_at(&mut self, offset: usize) -> *mut u8 {
        debug_assert!(offset <= self.len);
        // SAFETY: offset <= len <= capacity, so the result stays inside (or
        // one past) the allocation.
        unsafe { self.ptr.as_ptr().add(offset.min(self.len)) }
    }
}

/// `len` bytes of fresh anonymous memory (page-aligned, zero, not yet
/// touched), advised to be backed by huge pages; `None` when the kernel
/// refuses the mapping.
fn map_zeroed(len: usize) -> Option<NonNull<u8>> {
    // SAFETY: an anonymous private mapping at an address the kernel picks
    // aliases nothing; the arguments are plain integers.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: [raw, raw + len) is the mapping just made; MADV_HUGEPAGE only
    // changes how the kernel backs it (its contents stay zero). A kernel
    // without transparent huge pages refuses the advice, which is harmless.
    unsafe {
        libc::madvise(raw, len, libc::MADV_HUGEPAGE);
    }
    NonNull::new(raw.cast::<u8>())
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: ptr is the start of a mapping of exactly
            // layout.size() bytes made by map_zeroed, unmapped once here.
            unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), self.layout.size());
            }
            return;
        }
        // SAFETY: ptr was allocated with exactly this layout and is freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Reusable buffers: `take` returns a buffer of at least the length asked
/// for, `put` gives it back.
#[derive(Default)]
pub struct BufferPool {
    free: Vec<AlignedBuf>,
}

impl BufferPool {
    /// A buffer of `len` usable bytes, reusing a returned one if possible.
    pub fn take(&mut self, len: usize) -> Result<AlignedBuf> {
        match self.free.iter().position(|b| b.capacity() >= len) {
            Some(i) => {
                let mut b = self.free.swap_remove(i);
                b.ensure_len(len)?;
                Ok(b)
            }
            None => AlignedBuf::zeroed(len),
        }
    }

    /// Returns a buffer for reuse.
    pub fn put(&mut self, buf: AlignedBuf) {
        self.free.push(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocation failure is its own class: not the caller's argument,
    /// not a bug.
    #[test]
    fn a_buffer_the_machine_cannot_give_is_out_of_memory() {
        // 4 EiB: beyond any address space (mapped), and beyond `isize`.
        for len in [1usize << 62, usize::MAX] {
            match AlignedBuf::zeroed(len) {
                Err(Error::OutOfMemory(m)) => {
                    assert!(m.contains("bytes"), "{m}");
                }
                Err(other) => panic!("{len}: {other:?}"),
                Ok(_) => panic!("{len} bytes allocated"),
            }
        }
    }

    #[test]
    fn aligned_zeroed_and_growable() {
        let mut b = AlignedBuf::zeroed(10).unwrap();
        assert_eq!(b.as_slice().as_ptr() as usize % IO_ALIGN, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[9] = 7;
        b.ensure_len(3 * IO_ALIGN + 1).unwrap();
        assert_eq!(b.len(), 3 * IO_ALIGN + 1);
        assert_eq!(b.capacity(), 4 * IO_ALIGN);
        let mut pool = BufferPool::default();
        pool.put(b);
        let again = pool.take(100).unwrap();
        assert_eq!(again.capacity(), 4 * IO_ALIGN);
    }

    #[test]
    fn a_large_buffer_is_mapped_zeroed_and_aligned() {
        let len = MAPPED_BUFFER_BYTES + 5;
        let mut b = AlignedBuf::zeroed(len).unwrap();
        assert!(b.mapped);
        assert_eq!(b.as_slice().as_ptr() as usize % IO_ALIGN, 0);
        assert_eq!(b.capacity(), MAPPED_BUFFER_BYTES + IO_ALIGN);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[len - 1] = 9;
        assert_eq!(b.as_slice()[len - 1], 9);
        // Growing maps a new, zeroed buffer.
        b.ensure_len(2 * MAPPED_BUFFER_BYTES).unwrap();
        assert!(b.as_slice().iter().all(|&x| x == 0));
        assert!(
            !AlignedBuf::zeroed(MAPPED_BUFFER_BYTES - IO_ALIGN)
                .unwrap()
                .mapped
        );
    }
}
