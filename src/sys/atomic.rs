//! Replacing a small file whole: the new content goes to a temporary file beside it, synced,
//! then renamed over it, so a crash or a full disk leaves the old file or the new one, never a
//! torn mix.

use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to `path` atomically, making its folder if need be.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("a file path without a folder"))?;
    std::fs::create_dir_all(dir)?;
    let aside = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = std::fs::File::create(&aside)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&aside, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    written
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.json");
        super::write(&path, b"one").unwrap();
        super::write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path().join("a")).unwrap().count(), 1);
    }
}
