//! Path handling for permission checks: canonicalisation that also works for files not yet
//! created, and the paths ouro refuses outright (devices, network shares).

pub use crate::settings::expand_home;
use std::os::unix::fs::FileTypeExt;
use std::path::{Component, Path, PathBuf};

/// More symlinks than this in one path means a loop; resolution stops there.
const MAX_SYMLINK_HOPS: u32 = 40;

/// The path with `.`, `..` and every symlink resolved, as far as the path exists; the part
/// that does not exist yet is appended as written (with `..` applied). A dangling symlink is
/// followed to where it points, because writing through it would create that file.
pub fn resolve(path: &Path) -> PathBuf {
    let mut hops = 0;
    resolve_from(Path::new("/"), path, &mut hops)
}

fn resolve_from(base: &Path, path: &Path, hops: &mut u32) -> PathBuf {
    let mut out = base.to_path_buf();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                let next = out.join(name);
                let is_link = std::fs::symlink_metadata(&next)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if is_link && *hops < MAX_SYMLINK_HOPS {
                    *hops += 1;
                    match std::fs::read_link(&next) {
                        // A relative target is relative to the link's directory, which `out`
                        // already is, fully resolved.
                        Ok(target) => out = resolve_from(&out, &target, hops),
                        Err(_) => out = next,
                    }
                } else {
                    out = next;
                }
            }
        }
    }
    out
}

/// Where `path` (relative to `base`) really leads. `..` is applied after the symlinks before
/// it are followed, as the kernel does: with `link -> /etc/ssl`, `link/../passwd` is
/// /etc/passwd, not a sibling of `link`.
pub fn real(base: &Path, path: &Path) -> PathBuf {
    let mut hops = 0;
    let start = if path.is_absolute() {
        Path::new("/")
    } else {
        base
    };
    resolve_from(&resolve(start), path, &mut hops)
}

/// `path` made absolute against `base` and with `.`/`..` removed, symlinks untouched: the
/// path as the model named it.
pub fn lexical(base: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    let mut out = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// `\\host\share` or `//host/share`: opening it may contact another machine.
pub(crate) fn is_unc(path: &Path) -> bool {
    let text = path.to_string_lossy();
    let double_slash = text.starts_with("//") && !text.starts_with("///");
    double_slash
        || text.starts_with("\\\\")
        || path
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with("\\\\"))
}

/// A device (other than /dev/null), named directly or reached through a symlink.
pub(crate) fn is_device(lexical: &Path, resolved: &Path) -> bool {
    let null = Path::new("/dev/null");
    let under_dev = |p: &Path| p.starts_with("/dev") && p != null;
    if under_dev(lexical) || under_dev(resolved) {
        return true;
    }
    resolved != null
        && std::fs::metadata(resolved)
            .map(|m| {
                let t = m.file_type();
                t.is_block_device() || t.is_char_device()
            })
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_applies_parent_dirs_after_missing_components() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        let missing = root.join("new/deeper/../../../escape.txt");
        assert_eq!(resolve(&missing), root.parent().unwrap().join("escape.txt"));
    }

    #[test]
    fn real_applies_parent_dirs_after_following_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        std::fs::create_dir_all(root.join("deep/inner")).unwrap();
        std::os::unix::fs::symlink(root.join("deep/inner"), root.join("link")).unwrap();
        assert_eq!(real(&root, Path::new("link/../x")), root.join("deep/x"));
        assert_eq!(
            resolve(&lexical(&root, Path::new("link/../x"))),
            root.join("x")
        );
    }

    #[test]
    fn resolve_follows_dangling_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        std::os::unix::fs::symlink("/nonexistent-ouro-target/file", root.join("link")).unwrap();
        assert_eq!(
            resolve(&root.join("link")),
            PathBuf::from("/nonexistent-ouro-target/file")
        );
    }

    #[test]
    fn resolve_survives_symlink_loops() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        std::os::unix::fs::symlink(root.join("b"), root.join("a")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("b")).unwrap();
        // The walk gives up after its hop limit, inside the loop, instead of spinning forever.
        let resolved = resolve(&root.join("a/x"));
        assert!(resolved.starts_with(&root), "{}", resolved.display());
        assert!(resolved.ends_with("x"), "{}", resolved.display());
    }

    #[test]
    fn unc_and_device_paths_are_recognised() {
        assert!(is_unc(Path::new("//host/share/x")));
        assert!(is_unc(Path::new("\\\\host\\share")));
        assert!(!is_unc(Path::new("///etc/passwd")));
        assert!(!is_unc(Path::new("/etc/passwd")));
        assert!(is_device(Path::new("/dev/sda"), Path::new("/dev/sda")));
        assert!(!is_device(Path::new("/dev/null"), Path::new("/dev/null")));
    }
}
