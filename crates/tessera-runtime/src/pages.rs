//! Large field buffers on transparent huge pages.
//!
//! A stencil sweep touches every page of its grids once per step (or per time tile), and a
//! 256³ f32 grid spans 16384 pages of 4 KiB but only 32 of 2 MiB. With 4 KiB pages the sweep
//! misses the TLB at every new page, which costs most in virtual machines (two-level page
//! walks). Linux gives huge pages to anonymous memory only where asked when
//! `/sys/kernel/mm/transparent_hugepage/enabled` is `madvise` (a common default), so every
//! allocation of a field buffer asks, before the pages are first touched. Elsewhere (other
//! systems, huge pages disabled) the advice is a no-op.

/// Buffers of at least this many bytes are advised onto huge pages.
const LARGE_BYTES: usize = 4 << 20;

/// The huge page size on x86-64 and most aarch64 kernels.
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// `len` zeros, the allocation advised onto huge pages when large (the zeros come from fresh
/// pages, so nothing is touched before the advice); `None` when the allocator has no room
/// (a `ulimit -v`, no overcommit), which callers report instead of aborting.
pub(crate) fn try_zeroed<T: Clone + Default>(len: usize) -> Option<Vec<T>> {
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(len).ok()?;
    advise_capacity(&v);
    v.resize(len, T::default());
    Some(v)
}

/// `len` zeros, advised like [`try_zeroed`]; aborts when the allocator has no room.
pub(crate) fn zeroed<T: Clone + Default>(len: usize) -> Vec<T> {
    let v = vec![T::default(); len];
    advise(&v);
    v
}

/// [`advise`] for the reserved, not yet written capacity of `v`.
fn advise_capacity<T>(v: &Vec<T>) {
    advise_range(v.as_ptr() as usize, v.capacity() * std::mem::size_of::<T>());
}

/// A copy of `values` in a fresh allocation advised like [`zeroed`].
pub(crate) fn copied<T: Copy + Default>(values: &[T]) -> Vec<T> {
    let mut v = zeroed(values.len());
    v.copy_from_slice(values);
    v
}

/// Asks the kernel to back the 2 MiB-aligned part of a large slice with huge pages.
fn advise<T>(values: &[T]) {
    advise_range(values.as_ptr() as usize, std::mem::size_of_val(values));
}

/// [`advise`] for the allocated bytes `start..start + bytes` (written or not).
fn advise_range(start: usize, bytes: usize) {
    if bytes < LARGE_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let (first, end) = (
            start.next_multiple_of(HUGE_PAGE),
            (start + bytes) / HUGE_PAGE * HUGE_PAGE,
        );
        if end > first {
            // SAFETY: the range lies inside one allocation; MADV_HUGEPAGE changes how pages
            // are backed, never their contents. A failure only means no huge pages.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The `THPeligible` line of the mapping that holds `address`, from `/proc/self/smaps`.
    fn huge_page_eligible(address: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&address);
            } else if inside && let Some(flag) = line.strip_prefix("THPeligible:") {
                return Some(flag.trim() == "1");
            }
        }
        None
    }

    #[test]
    fn large_buffers_are_eligible_for_huge_pages() {
        let enabled = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        if !enabled.is_ok_and(|e| e.contains("[madvise]") || e.contains("[always]")) {
            return; // The kernel gives no huge pages at all.
        }
        let large: Vec<f32> = zeroed(4 << 20);
        let middle = large.as_ptr() as usize + (8 << 20);
        assert_eq!(huge_page_eligible(middle), Some(true));
        let copy = copied(&large);
        assert_eq!(
            huge_page_eligible(copy.as_ptr() as usize + (8 << 20)),
            Some(true)
        );
        assert!(copy.iter().all(|&v| v == 0.0));
    }
}
