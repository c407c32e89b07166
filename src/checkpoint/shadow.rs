//! The shadow repository: a git repository of its own under `~/.ouro/checkpoints/<project>/`
//! with the project root as work tree. Snapshots write its objects in process (see
//! [`super::objects`]); git reads them back for diffs and restores, with no global or system
//! configuration and no index, so no filter, hook or credential helper of the user's or the
//! project's runs, and the user's `.git` is never read or written.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    #[error("could not run git ({0}); install git to have checkpoints")]
    Spawn(std::io::Error),
    #[error("git {command} failed: {stderr}")]
    Git { command: String, stderr: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The project is no place for snapshots (too many files, the home folder).
    #[error("{0}")]
    Unsuitable(String),
}

/// One file that differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    /// The file in the older snapshot: its mode and blob, or `None` when it did not exist.
    pub old: Option<(u32, String)>,
    /// Whether it exists in the newer one.
    pub(crate) exists_after: bool,
    /// Whether `path` is the name exactly: a name that is not UTF-8 is shown, not used.
    pub(crate) exact_name: bool,
}

pub struct Shadow {
    git_dir: PathBuf,
    work_tree: PathBuf,
}

impl Shadow {
    pub fn new(git_dir: PathBuf, work_tree: PathBuf) -> Shadow {
        Shadow { git_dir, work_tree }
    }

    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    fn command(&self) -> Command {
        let mut cmd = Command::from(crate::sys::git::on_own_repository(&self.git_dir));
        // The project's own exclusions (`.git/info/exclude`) count as its `.gitignore` does.
        let user_excludes = self.work_tree.join(".git/info/exclude");
        if user_excludes.is_file() {
            cmd.arg("-c")
                .arg(format!("core.excludesFile={}", user_excludes.display()));
        }
        cmd.env("GIT_WORK_TREE", &self.work_tree)
            // Nothing ouro runs here needs an index; none is read or written.
            .env("GIT_INDEX_FILE", self.git_dir.join("no-index"))
            // A path is a path: `:x` or `*` in a file name is no pathspec magic.
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_AUTHOR_NAME", "ouro")
            .env("GIT_AUTHOR_EMAIL", "ouro@localhost")
            .env("GIT_COMMITTER_NAME", "ouro")
            .env("GIT_COMMITTER_EMAIL", "ouro@localhost")
            .current_dir(&self.work_tree)
            .kill_on_drop(true);
        cmd
    }

    async fn git<I, S>(&self, args: I) -> Result<Vec<u8>, ShadowError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<S> = args.into_iter().collect();
        let output = self
            .command()
            .args(&args)
            .output()
            .await
            .map_err(ShadowError::Spawn)?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(ShadowError::Git {
                command: args
                    .iter()
                    .map(|a| a.as_ref().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            })
        }
    }

    /// Creates the repository on first use; private, as it holds the project's code.
    pub fn init(&self) -> Result<(), ShadowError> {
        if self.git_dir.join("HEAD").is_file() {
            return Ok(());
        }
        // Made aside and renamed into place, so two sessions starting at once never see a
        // half-made repository; the one that loses the race uses the other's.
        let parent = self.git_dir.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(parent)?;
        let aside = parent.join(format!(".new-{}", uuid::Uuid::new_v4().simple()));
        let made = make(&aside);
        if made.is_ok() && std::fs::rename(&aside, &self.git_dir).is_ok() {
            return Ok(());
        }
        let _ = std::fs::remove_dir_all(&aside);
        if self.git_dir.join("HEAD").is_file() {
            return Ok(());
        }
        made
    }

    /// Whether `path` is already kept out.
    pub(crate) fn excludes(&self, path: &str) -> bool {
        let wanted = format!("/{}", escape_pattern(path));
        std::fs::read_to_string(self.git_dir.join("info/exclude"))
            .is_ok_and(|text| text.lines().any(|l| l == wanted))
    }

    /// Keeps `paths` out of every snapshot from now on (the size cap).
    pub fn exclude(&self, paths: &[String]) -> Result<(), ShadowError> {
        use std::io::Write;
        let info = self.git_dir.join("info");
        std::fs::create_dir_all(&info)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(info.join("exclude"))?;
        // A name with a line break cannot be written as one pattern; it stays in.
        for path in paths.iter().filter(|p| !p.contains(['\n', '\r'])) {
            writeln!(file, "/{}", escape_pattern(path))?;
        }
        Ok(())
    }

    /// What differs from `old` to `new` (commits or trees).
    pub async fn diff(&self, old: &str, new: &str) -> Result<Vec<Change>, ShadowError> {
        let out = self
            .git(["diff-tree", "-r", "-z", "--no-renames", old, new])
            .await?;
        Ok(parse_diff(&out))
    }

    /// Which of `paths` the work tree's ignore rules (as they are now) leave out.
    pub async fn ignored(&self, paths: &[&str]) -> Result<BTreeSet<String>, ShadowError> {
        if paths.is_empty() {
            return Ok(BTreeSet::new());
        }
        let mut cmd = self.command();
        // check-ignore takes names, not pathspecs, and refuses the literal switch.
        cmd.env_remove("GIT_LITERAL_PATHSPECS").args([
            "check-ignore",
            "--no-index",
            "-z",
            "--stdin",
        ]);
        // `./` first, so a name starting with `:` is no pathspec magic.
        let request: Vec<u8> = paths
            .iter()
            .flat_map(|p| {
                b"./"
                    .iter()
                    .copied()
                    .chain(p.bytes())
                    .chain(std::iter::once(0))
            })
            .collect();
        let (status, out) = feed(cmd, request).await?;
        // 0: some are ignored, 1: none is.
        match status.code() {
            Some(0 | 1) => Ok(split_z(&out)
                .into_iter()
                .map(|p| p.strip_prefix("./").map(str::to_string).unwrap_or(p))
                .collect()),
            _ => Err(ShadowError::Git {
                command: "check-ignore".into(),
                stderr: format!("exited with {status}"),
            }),
        }
    }

    /// The folders of `commit`.
    pub async fn dirs(&self, commit: &str) -> Result<BTreeSet<String>, ShadowError> {
        let out = self
            .git(["ls-tree", "-r", "-d", "-z", "--name-only", commit])
            .await?;
        Ok(split_z(&out).into_iter().collect())
    }

    /// A unified diff from `old` to the work tree as it is now snapshotted in `new`.
    pub async fn patch(&self, old: &str, new: &str) -> Result<String, ShadowError> {
        let out = self
            .git(["diff", "--no-color", "--no-ext-diff", old, new])
            .await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The contents of `blobs`, in order, through one `cat-file --batch`.
    pub(crate) async fn blobs(&self, blobs: &[String]) -> Result<Vec<Vec<u8>>, ShadowError> {
        let mut cmd = self.command();
        cmd.args(["cat-file", "--batch"]);
        let request: String = blobs.iter().map(|b| format!("{b}\n")).collect();
        let (_, all) = feed(cmd, request.into_bytes()).await?;
        parse_batch(&all, blobs.len())
    }
}

fn make(dir: &Path) -> Result<(), ShadowError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    super::objects::init(dir)?;
    Ok(())
}

/// Runs `cmd` with `input` on its stdin (written while its output is read, so neither pipe
/// fills up), and returns how it exited and what it printed.
async fn feed(mut cmd: Command, input: Vec<u8>) -> Result<(ExitStatus, Vec<u8>), ShadowError> {
    let missing_pipe = || ShadowError::Io(std::io::Error::other("git's pipe was not opened"));
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(ShadowError::Spawn)?;
    let mut stdin = child.stdin.take().ok_or_else(missing_pipe)?;
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
    });
    let mut stdout = child.stdout.take().ok_or_else(missing_pipe)?;
    let mut out = Vec::new();
    stdout.read_to_end(&mut out).await?;
    let _ = writer.await;
    Ok((child.wait().await?, out))
}

fn split_z(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// `diff-tree -z` output: `:oldmode newmode oldsha newsha status\0path\0` per file.
fn parse_diff(out: &[u8]) -> Vec<Change> {
    let raw: Vec<&[u8]> = out.split(|b| *b == 0).filter(|s| !s.is_empty()).collect();
    let mut changes = Vec::new();
    let mut i = 0;
    while i + 1 < raw.len() {
        let meta = String::from_utf8_lossy(raw[i]);
        let meta: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let exact_name = std::str::from_utf8(raw[i + 1]).is_ok();
        let path = String::from_utf8_lossy(raw[i + 1]).into_owned();
        i += 2;
        if meta.len() < 5 {
            continue;
        }
        let old_mode = u32::from_str_radix(meta[0], 8).unwrap_or(0);
        let old = (old_mode != 0).then(|| (old_mode, meta[2].to_string()));
        let exists_after = meta[1] != "000000";
        changes.push(Change {
            path,
            old,
            exists_after,
            exact_name,
        });
    }
    changes
}

/// `cat-file --batch` output: `<sha> blob <size>\n<content>\n` per object.
fn parse_batch(all: &[u8], count: usize) -> Result<Vec<Vec<u8>>, ShadowError> {
    let bad = || {
        ShadowError::Io(std::io::Error::other(
            "git cat-file gave an unreadable answer",
        ))
    };
    let mut out = Vec::with_capacity(count);
    let mut rest = all;
    for _ in 0..count {
        let end = rest.iter().position(|b| *b == b'\n').ok_or_else(bad)?;
        let header = String::from_utf8_lossy(&rest[..end]);
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        let body = rest.get(end + 1..end + 1 + size).ok_or_else(bad)?;
        out.push(body.to_vec());
        rest = rest.get(end + 2 + size..).unwrap_or_default();
    }
    Ok(out)
}

/// A path as a gitignore pattern that matches only itself.
fn escape_pattern(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '!' | '#' | ' ') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_and_batch_output_parse() {
        let diff = b":100644 000000 aaa 000 D\0gone.txt\0:000000 100755 000 bbb A\0new.sh\0:100755 100644 ccc ddd M\0dir/x\0:100644 100644 eee fff M\0odd\xff\0";
        let changes = parse_diff(diff);
        assert_eq!(changes.len(), 4);
        assert!(changes[2].exact_name && !changes[3].exact_name);
        assert_eq!(changes[0].old, Some((0o100644, "aaa".into())));
        assert!(!changes[0].exists_after);
        assert_eq!(changes[1].old, None);
        assert!(changes[1].exists_after);
        assert_eq!(changes[2].path, "dir/x");
        let batch = b"aaa blob 3\nabc\nbbb blob 0\n\n";
        let blobs = parse_batch(batch, 2).unwrap();
        assert_eq!(blobs, vec![b"abc".to_vec(), Vec::new()]);
        assert!(parse_batch(b"aaa blob 9\nab\n", 1).is_err());
        assert_eq!(escape_pattern("a b*.txt"), "a\\ b\\*.txt");
    }
}
