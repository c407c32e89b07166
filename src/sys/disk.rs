//! Telling a write that failed because of the disk (full, over quota, read-only, failing) from
//! one that failed for a passing reason: the first kind means what ouro saves is incomplete.

/// Whether `error` says the disk cannot take writes.
pub fn is_disk_failure(error: &std::io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EROFS | libc::EIO | libc::EFBIG)
    ) || matches!(
        error.kind(),
        std::io::ErrorKind::StorageFull
            | std::io::ErrorKind::QuotaExceeded
            | std::io::ErrorKind::ReadOnlyFilesystem
    )
}
