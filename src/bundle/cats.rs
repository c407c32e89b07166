//! `ouro cats`: the files a task needs, in one bundle. Directories are walked with the
//! `ignore` crate (`.gitignore` honoured, `.git/` never entered); an argument that names no
//! file or directory is a glob over the tree. Paths are relative to the directory cats runs
//! in, `/`-separated, in byte order, so the same tree always gives the same bundle.

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;

use super::BundleError;
use super::curate::CurateOptions;
use super::format::{self, Entry};
use super::front::{CatsFront, CurationMethod};

pub struct CatsOptions {
    pub paths: Vec<String>,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub max_tokens: Option<u64>,
    /// Have the API count the whole bundle (`--count-tokens api`): it is then sent to
    /// Anthropic, so only when asked.
    pub count_with_api: bool,
    /// Put the reply instructions before the files (`--no-instructions` leaves them out).
    pub instructions: bool,
    /// Start the bundle with front matter naming this task (`--task`); with `--ai-curate`,
    /// its task is named when this is `None`.
    pub task: Option<String>,
}

/// One file as counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    pub path: String,
    pub tokens: u64,
}

pub struct Bundled {
    /// Front matter (`--task`), put before the bundle; empty without it.
    pub front: Vec<u8>,
    entries: Vec<(Entry, format::Judged)>,
    instructions: bool,
    pub files: Vec<Counted>,
    /// Files the token budget left out.
    pub left_out: Vec<Counted>,
    /// Files left out as secrets, with why; a file named on the command line is never one.
    pub secrets: Vec<(String, &'static str)>,
    /// The whole bundle as the API's token counter counts it, or why it could not.
    pub counted: Result<u64, String>,
}

impl Bundled {
    /// The bundle, written as it is made in large sequential writes: a 100 MB bundle is never
    /// a second copy in memory.
    pub fn write_to(&self, out: impl std::io::Write) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
        out.write_all(&self.front)?;
        format::write_bundle(&mut out, &self.entries, self.instructions)?;
        out.flush()
    }

    /// The whole bundle in memory.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into memory cannot fail.
        let _ = self.write_to(&mut out);
        out
    }
}

/// The largest bundle sent to be counted (the API's request size limit).
const MAX_COUNTED_BYTES: usize = 32 << 20;

/// The bundle's tokens as the API counts them, when a key is set and the API answers.
async fn api_count(bundle: &[u8]) -> Result<u64, String> {
    let endpoint = crate::app::Endpoint::from_env().map_err(|_| "no API key is set".to_string())?;
    if bundle.len() > MAX_COUNTED_BYTES {
        return Err("the bundle is larger than the API takes".into());
    }
    let client = endpoint.client().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(bundle);
    client
        .count_tokens(crate::api::models::default_model(), &text)
        .await
        .map_err(|e| e.to_string())
}

fn bytes_as_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The estimate this bundle's table states: a token is about four bytes of text (and of a
/// binary file's base64).
pub fn estimate(content: &[u8], binary: bool) -> u64 {
    let bytes = if binary {
        content.len().div_ceil(3) * 4
    } else {
        content.len()
    };
    (bytes as u64).div_ceil(4)
}

pub fn cats(cwd: &Path, options: &CatsOptions) -> Result<Bundled, BundleError> {
    build(cwd, candidates(cwd, options)?, options)
}

/// The files the command line names one by one (never left out as secrets: the user asked).
fn named(cwd: &Path, options: &CatsOptions) -> Vec<PathBuf> {
    options
        .paths
        .iter()
        .map(|arg| cwd.join(arg))
        .filter(|path| path.is_file())
        .filter_map(|path| relative(cwd, &path).ok())
        .collect()
}

/// Why a file found by a walk or a glob is a secret, if it is: by its name, or by a private
/// key or a known token in its text (`text`: the content, when it is text).
fn secret(rel: &Path, text: Option<&str>) -> Option<&'static str> {
    crate::sys::secrets::secret_file(rel).or_else(|| {
        crate::sys::secrets::find_in_text(text?)
            .map(|_| "it holds a private key or an access token")
    })
}

/// The files the arguments name, filtered, in byte order.
pub fn candidates(cwd: &Path, options: &CatsOptions) -> Result<Vec<PathBuf>, BundleError> {
    let include = globs(&options.include)?;
    let exclude = globs(&options.exclude)?;
    let mut found = Vec::new();
    for arg in &options.paths {
        collect(cwd, arg, &mut found)?;
    }
    found.retain(|rel: &PathBuf| {
        (include.is_empty() || include.is_match(rel)) && !exclude.is_match(rel)
    });
    found.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
    found.dedup();
    if found.is_empty() {
        return Err(BundleError::NothingToBundle);
    }
    Ok(found)
}

/// The bundle of `files` in the order given, leaving out secrets the command line did not name
/// and what does not fit `max_tokens`.
pub fn build(
    cwd: &Path,
    files: Vec<PathBuf>,
    options: &CatsOptions,
) -> Result<Bundled, BundleError> {
    let named: std::collections::HashSet<PathBuf> = named(cwd, options).into_iter().collect();
    let mut entries = Vec::new();
    let mut counted_files = Vec::new();
    let mut left_out = Vec::new();
    let mut secrets = Vec::new();
    // The budget counts the bundle, not only its files: header, instructions, markers.
    let mut total = bytes_as_tokens(format::fixed_overhead(options.instructions));
    // Read and judged on every core: a bundle of many files waits on the disk and on the
    // secret scan, and both spread.
    let read: Vec<Result<Read, BundleError>> = files
        .par_iter()
        .map(|rel| Read::of(cwd, rel, !named.contains(rel)))
        .collect();
    for (rel, read) in files.into_iter().zip(read) {
        let Read {
            content,
            judged,
            secret,
        } = read?;
        if let Some(why) = secret {
            secrets.push((rel.to_string_lossy().into_owned(), why));
            continue;
        }
        let path = rel.as_os_str().as_bytes();
        let counted = Counted {
            path: rel.to_string_lossy().into_owned(),
            tokens: estimate(&content, judged.binary)
                + bytes_as_tokens(format::overhead(path, judged.binary)),
        };
        if options
            .max_tokens
            .is_some_and(|max| total + counted.tokens > max)
        {
            left_out.push(counted);
            continue;
        }
        total += counted.tokens;
        counted_files.push(counted);
        let path = path.to_vec();
        entries.push((Entry { path, content }, judged));
    }
    Ok(Bundled {
        front: Vec::new(),
        entries,
        instructions: options.instructions,
        files: counted_files,
        left_out,
        secrets,
        counted: Err("not counted".into()),
    })
}

/// One file as read, and what cats makes of it.
struct Read {
    content: Vec<u8>,
    judged: format::Judged,
    /// Why it is left out as a secret (only asked of files the command line did not name).
    secret: Option<&'static str>,
}

impl Read {
    /// Read and judged in one go, while the content is still in the CPU's cache.
    fn of(cwd: &Path, rel: &Path, judge: bool) -> Result<Read, BundleError> {
        let content = std::fs::read(cwd.join(rel)).map_err(|source| BundleError::Io {
            action: "read",
            path: rel.to_path_buf(),
            source,
        })?;
        let path = rel.as_os_str().as_bytes();
        let text = format::as_text(path, &content);
        let secret = if judge { secret(rel, text) } else { None };
        let judged = format::Judged {
            binary: text.is_none(),
            // A secret is left out: nothing to hash.
            digest: if secret.is_none() {
                format::digest(&content)
            } else {
                String::new()
            },
        };
        Ok(Read {
            content,
            judged,
            secret,
        })
    }
}

fn globs(patterns: &[String]) -> Result<GlobSet, BundleError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|e| BundleError::BadGlob {
            pattern: pattern.clone(),
            reason: e.kind().to_string(),
        })?;
        set.add(glob);
    }
    set.build().map_err(|e| BundleError::BadGlob {
        pattern: patterns.join(" "),
        reason: e.to_string(),
    })
}

/// The files `arg` names, relative to `cwd`: a file, every file under a directory, or the
/// files of the tree a glob matches.
fn collect(cwd: &Path, arg: &str, out: &mut Vec<PathBuf>) -> Result<(), BundleError> {
    let path = cwd.join(arg);
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => {
            out.push(relative(cwd, &path)?);
            Ok(())
        }
        Ok(meta) if meta.is_dir() => {
            for file in walk(&path)? {
                out.push(relative(cwd, &file)?);
            }
            Ok(())
        }
        _ => {
            let glob = Glob::new(arg)
                .map_err(|e| BundleError::BadGlob {
                    pattern: arg.to_string(),
                    reason: e.kind().to_string(),
                })?
                .compile_matcher();
            let before = out.len();
            for file in walk(cwd)? {
                let rel = relative(cwd, &file)?;
                if glob.is_match(&rel) {
                    out.push(rel);
                }
            }
            if out.len() == before {
                return Err(BundleError::NoMatch {
                    arg: arg.to_string(),
                });
            }
            Ok(())
        }
    }
}

/// The files under `dir`, as git would see them: `.gitignore` and `.ignore` honoured, hidden
/// files kept, `.git` itself never entered.
fn walk(dir: &Path) -> Result<Vec<PathBuf>, BundleError> {
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| BundleError::Walk {
            dir: dir.to_path_buf(),
            reason: e.to_string(),
        })?;
        if entry.file_type().is_some_and(|t| t.is_file()) {
            files.push(entry.into_path());
        }
    }
    Ok(files)
}

/// `path` relative to `cwd`, without `.` or `..`: what dogs will accept back.
fn relative(cwd: &Path, path: &Path) -> Result<PathBuf, BundleError> {
    let outside = || BundleError::Outside {
        path: path.to_path_buf(),
    };
    let mut rel = PathBuf::new();
    for component in path.strip_prefix(cwd).map_err(|_| outside())?.components() {
        match component {
            Component::Normal(name) => rel.push(name),
            Component::CurDir => {}
            _ => return Err(outside()),
        }
    }
    if rel.as_os_str().as_bytes().contains(&b'\n') {
        return Err(crate::paws::PawsError::NewlineInName { path: rel }.into());
    }
    Ok(rel)
}

/// `ouro cats`: the bundle to `output` (`-`: stdout), the token table to stderr. A path `-`
/// reads more paths from stdin, one per line. With `curate`, a brain picks the files first.
pub async fn run(
    cwd: &Path,
    mut options: CatsOptions,
    output: &str,
    curate: Option<CurateOptions>,
) -> Result<i32, BundleError> {
    if options.paths.iter().any(|p| p == "-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| {
            BundleError::Io {
                action: "read the paths from",
                path: "stdin".into(),
                source,
            }
        })?;
        options.paths.retain(|p| p != "-");
        options.paths.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from),
        );
    }
    // The bundle being written is never bundled into itself (a second run would carry the
    // first one's output).
    if output != "-"
        && let Ok(rel) = cwd.join(output).strip_prefix(cwd)
    {
        options
            .exclude
            .push(globset::escape(&rel.to_string_lossy()));
    }
    let (mut bundled, confidence) = match &curate {
        None => (cats(cwd, &options)?, None),
        Some(curate) => curated(cwd, &options, curate).await?,
    };
    let task = options
        .task
        .clone()
        .or_else(|| curate.as_ref().map(|c| c.task.clone()));
    if let Some(task_description) = task {
        let front = CatsFront {
            task_description,
            // cats runs outside any session: there is none to name.
            source_session: None,
            curation_method: match curate {
                None => CurationMethod::Manual,
                Some(_) => CurationMethod::AiCurated,
            },
            ai_curation_confidence: confidence,
        };
        bundled.front = front.to_yaml()?.into_bytes();
    }
    bundled.counted = if options.count_with_api {
        api_count(&bundled.bytes()).await
    } else {
        Err(
            "the bundle is sent nowhere unless you ask: `--count-tokens api` has the API count it"
                .into(),
        )
    };
    if output == "-" {
        match bundled.write_to(std::io::stdout().lock()) {
            // A reader that closed the pipe (`ouro cats . | head`) took what it wanted: a
            // normal end, as ripgrep treats it.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(0),
            written => written.map_err(|source| BundleError::Io {
                action: "write the bundle to",
                path: "stdout".into(),
                source,
            })?,
        }
    } else {
        let written = std::fs::File::create(cwd.join(output)).and_then(|f| bundled.write_to(f));
        written.map_err(|source| BundleError::Io {
            action: "write the bundle to",
            path: output.into(),
            source,
        })?;
    }
    eprint!("{}", table(&bundled));
    // The process ends next: freeing a large bundle file by file would only delay that.
    std::mem::forget(bundled);
    Ok(0)
}

/// The files a brain ranked at or above the threshold, most relevant first, within budget,
/// and the brain's confidence in its choice when it gave one; the selection and its reasons
/// on stderr.
async fn curated(
    cwd: &Path,
    options: &CatsOptions,
    curate: &CurateOptions,
) -> Result<(Bundled, Option<f64>), BundleError> {
    let files = candidates(cwd, options)?;
    let sized: Vec<(String, u64)> = files
        .iter()
        .map(|rel| {
            let bytes = std::fs::metadata(cwd.join(rel)).map_or(0, |m| m.len());
            (rel.to_string_lossy().into_owned(), bytes.div_ceil(4))
        })
        .collect();
    let ranking = super::curate::rank(cwd, &sized, curate).await?;
    let mut ranked = ranking.files;
    ranked.retain(|r| r.relevance >= curate.threshold);
    ranked.sort_by(|a, b| {
        b.relevance
            .total_cmp(&a.relevance)
            .then(a.path.cmp(&b.path))
    });
    ranked.dedup_by(|a, b| a.path == b.path);
    if ranked.is_empty() {
        return Err(BundleError::Curate(format!(
            "the brain rated no file at or above {} for this task; lower --threshold or name the files",
            curate.threshold
        )));
    }
    eprintln!(
        "selected by {} (relevance ≥ {}):",
        curate.brain, curate.threshold
    );
    for r in &ranked {
        eprintln!("  {:.2}  {}  {}", r.relevance, r.path, r.why);
    }
    let chosen = ranked.iter().map(|r| PathBuf::from(&r.path)).collect();
    Ok((build(cwd, chosen, options)?, ranking.confidence))
}

/// The table cats prints on stderr: each file's tokens, then the total.
pub fn table(bundled: &Bundled) -> String {
    let width = bundled
        .files
        .iter()
        .chain(&bundled.left_out)
        .map(|f| f.path.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!("{:width$}  tokens (estimated: 1 per 4 bytes)\n", "file");
    for f in &bundled.files {
        out.push_str(&format!("{:width$}  {:>8}\n", f.path, f.tokens));
    }
    // Each file's row counts its markers too; the header and instructions are the bundle's.
    let fixed = bytes_as_tokens(format::fixed_overhead(bundled.instructions));
    out.push_str(&format!("{:width$}  {fixed:>8}\n", "(header)"));
    let total: u64 = bundled.files.iter().map(|f| f.tokens).sum::<u64>() + fixed;
    out.push_str(&format!(
        "{:width$}  {total:>8}  ({} files)\n",
        "total",
        bundled.files.len()
    ));
    match &bundled.counted {
        Ok(tokens) => out.push_str(&format!(
            "the whole bundle, counted by the API: {tokens} tokens\n"
        )),
        Err(why) => out.push_str(&format!("(estimates only: {why})\n")),
    }
    if !bundled.secrets.is_empty() {
        out.push_str(
            "left out as secrets (name a file on the command line to bundle it anyway):\n",
        );
        for (path, why) in &bundled.secrets {
            out.push_str(&format!("  {path} ({why})\n"));
        }
    }
    if !bundled.left_out.is_empty() {
        out.push_str("left out to stay within --max-tokens:\n");
        for f in &bundled.left_out {
            out.push_str(&format!("  {} ({} tokens)\n", f.path, f.tokens));
        }
    }
    out
}
