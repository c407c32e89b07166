//! Grep: regex search over file contents with ripgrep's engine (grep-regex, grep-searcher and
//! a parallel `ignore` walk), so .gitignore, hidden and binary files are skipped like `rg`.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};

use super::memo::Memo;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;

use super::paths;
use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use crate::permissions::Access;

/// Output collected at most, across files. Far more than a tool result shows, so any result
/// that could be shown whole comes from a complete, deterministic search.
const MAX_COLLECTED_BYTES: usize = 1 << 20;
/// Matched lines are cut here: one minified line must not fill the result.
const MAX_LINE_CHARS: usize = 500;

pub struct GrepTool;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines, as `path:line:text`.
    Content,
    /// Only the paths of files that match.
    #[default]
    FilesWithMatches,
    /// The number of matching lines per file, as `path:N`.
    Count,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// The regular expression to search for (Rust regex syntax, like ripgrep).
    pub pattern: String,
    /// File or directory to search. Defaults to the current working directory.
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.js` or `*.{ts,tsx}`.
    pub glob: Option<String>,
    /// Only search files of this ripgrep type, e.g. `rs`, `py`, `js`, `go`.
    #[serde(rename = "type")]
    pub file_type: Option<String>,
    /// `files_with_matches` (default): paths; `content`: matching lines; `count`: per file.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Case-insensitive search.
    #[serde(default, rename = "-i")]
    pub case_insensitive: bool,
    /// Show line numbers (content mode).
    #[serde(default = "yes", rename = "-n")]
    pub(crate) line_numbers: bool,
    /// Lines of context after each match (content mode).
    #[serde(rename = "-A")]
    pub after: Option<usize>,
    /// Lines of context before each match (content mode).
    #[serde(rename = "-B")]
    pub before: Option<usize>,
    /// Lines of context before and after each match (content mode).
    #[serde(rename = "-C")]
    pub context: Option<usize>,
    /// Let the pattern span lines; `.` then also matches newlines.
    #[serde(default)]
    pub(crate) multiline: bool,
    /// Show only the first N lines (content) or entries (other modes); 0 means no limit.
    pub head_limit: Option<usize>,
    /// Skip the first N lines or entries, to page through results with head_limit.
    pub offset: Option<usize>,
    #[serde(skip)]
    #[schemars(skip)]
    search: Memo<Search>,
}

fn yes() -> bool {
    true
}

/// A compiled search, ready to run.
struct Search {
    root: PathBuf,
    /// A single file was named: its path is not repeated on every line, as with `rg`.
    single_file: bool,
    matcher: RegexMatcher,
    /// Searchers keep per-search buffers and are not `Sync`; each walker thread builds one.
    searcher: SearcherBuilder,
    mode: OutputMode,
    line_numbers: bool,
    context: bool,
    types: Option<Types>,
    overrides: Option<Override>,
    offset: usize,
    limit: Option<usize>,
}

/// One file with matches.
struct Hit {
    path: PathBuf,
    mtime: Option<SystemTime>,
    matches: u64,
    /// Formatted lines (content mode), each ending in `\n`.
    text: String,
}

impl Tool for GrepTool {
    type Input = GrepInput;

    const NAME: &'static str = "Grep";

    fn description(&self) -> &'static str {
        include_str!("../../tools/Grep.md")
    }

    fn validate(&self, input: &GrepInput, ctx: &ToolContext) -> Result<(), String> {
        let root = paths::search_root(input.path.as_deref(), ctx);
        if !paths::may_inspect(&root, ctx) {
            return Ok(());
        }
        compiled(input, ctx).map(|_| ())
    }

    fn access(&self, input: &GrepInput, ctx: &ToolContext) -> Access {
        Access::Read(paths::search_root(input.path.as_deref(), ctx))
    }

    fn is_read_only(&self, _input: &GrepInput) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &GrepInput) -> bool {
        true
    }

    fn summary(&self, input: &GrepInput) -> String {
        match &input.path {
            Some(path) => format!("{} in {path}", input.pattern),
            None => input.pattern.clone(),
        }
    }

    async fn call(
        &self,
        input: GrepInput,
        ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let search = compiled(&input, ctx).map_err(ToolError::Invalid)?;
        let ctx = ctx.clone();
        paths::blocking(move || run(&search, &ctx)).await
    }
}

fn compiled(input: &GrepInput, ctx: &ToolContext) -> Result<std::sync::Arc<Search>, String> {
    input.search.get_or_try(|| compile(input, ctx))
}

fn compile(input: &GrepInput, ctx: &ToolContext) -> Result<Search, String> {
    let root = paths::search_root(input.path.as_deref(), ctx);
    let single_file = !paths::require_existing(&root)?.is_dir();
    let multiline = input.multiline;
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(input.case_insensitive)
        .multi_line(true);
    if multiline {
        builder.dot_matches_new_line(true);
    } else {
        // Lets the searcher scan whole buffers instead of line by line.
        builder.line_terminator(Some(b'\n'));
    }
    let matcher = builder.build(&input.pattern).map_err(|e| {
        let hint = if !multiline && input.pattern.contains("\\n") {
            " To match across lines, set multiline to true."
        } else {
            " Note that literal braces, parentheses and brackets must be escaped, e.g. \
             `interface\\{\\}` to find `interface{}`."
        };
        format!("The pattern is not a valid regular expression: {e}.{hint}")
    })?;
    let mode = input.output_mode;
    let content = mode == OutputMode::Content;
    let before = input.before.or(input.context).unwrap_or(0);
    let after = input.after.or(input.context).unwrap_or(0);
    let mut searcher = SearcherBuilder::new();
    searcher
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .multi_line(multiline)
        .before_context(if content { before } else { 0 })
        .after_context(if content { after } else { 0 });
    Ok(Search {
        types: input.file_type.as_deref().map(file_types).transpose()?,
        overrides: input
            .glob
            .as_deref()
            .map(|g| glob_filter(&root, g))
            .transpose()?,
        root,
        single_file,
        matcher,
        searcher,
        mode,
        line_numbers: content && input.line_numbers,
        context: content && (before > 0 || after > 0),
        offset: input.offset.unwrap_or(0),
        limit: input.head_limit.filter(|&n| n > 0),
    })
}

fn file_types(name: &str) -> Result<Types, String> {
    let mut builder = TypesBuilder::new();
    builder.add_defaults().select(name);
    builder.build().map_err(|_| {
        format!(
            "Unknown file type `{name}`. Use a ripgrep type name such as rs, py, js, ts, go, \
             java, c, cpp, md or json, or filter with glob instead."
        )
    })
}

/// `*.ts,*.tsx` and `*.ts *.tsx` are common spellings for several globs; braces keep commas.
fn glob_filter(root: &Path, glob: &str) -> Result<Override, String> {
    let mut builder = OverrideBuilder::new(root);
    let parts: Vec<&str> = if glob.contains('{') {
        glob.split_whitespace().collect()
    } else {
        glob.split([',', ' ']).filter(|p| !p.is_empty()).collect()
    };
    for part in parts {
        builder
            .add(part)
            .map_err(|e| format!("The glob `{part}` is invalid: {e}"))?;
    }
    builder
        .build()
        .map_err(|e| format!("The glob `{glob}` is invalid: {e}"))
}

/// Collects one file's output while grep-searcher reports matches.
struct FileSink<'a> {
    search: &'a Search,
    path: String,
    text: String,
    lines: usize,
    matches: u64,
    binary: bool,
}

impl FileSink<'_> {
    fn start(&mut self, path: &Path) {
        self.path.clear();
        if !self.search.single_file {
            self.path.push_str(&path.to_string_lossy());
        }
        self.text.clear();
        self.lines = 0;
        self.matches = 0;
        self.binary = false;
    }

    /// No file can contribute more than offset + limit lines to what is shown (one more
    /// tells that the limit cut something), nor more than the whole search may collect.
    fn wants_more(&self) -> bool {
        self.text.len() <= MAX_COLLECTED_BYTES
            && self
                .search
                .limit
                .is_none_or(|limit| self.lines <= self.search.offset + limit)
    }

    fn push_line(&mut self, number: Option<u64>, separator: char, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = String::from_utf8_lossy(line);
        if !self.path.is_empty() {
            self.text.push_str(&self.path);
            self.text.push(separator);
        }
        if let (true, Some(n)) = (self.search.line_numbers, number) {
            let _ = write!(self.text, "{n}{separator}");
        }
        let (shown, cut) = crate::text::prefix_chars(&text, MAX_LINE_CHARS);
        self.text.push_str(shown);
        if cut {
            self.text.push_str(" [... line truncated]");
        }
        self.text.push('\n');
        self.lines += 1;
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> io::Result<bool> {
        self.matches += 1;
        match self.search.mode {
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Count => Ok(true),
            OutputMode::Content => {
                let mut number = mat.line_number();
                for line in mat.lines() {
                    if !self.wants_more() {
                        break;
                    }
                    self.push_line(number, ':', line);
                    number = number.map(|n| n + 1);
                }
                Ok(self.wants_more())
            }
        }
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> io::Result<bool> {
        if self.wants_more() {
            self.push_line(context.line_number(), '-', context.bytes());
        }
        Ok(self.wants_more())
    }

    fn context_break(&mut self, _: &Searcher) -> io::Result<bool> {
        self.text.push_str("--\n");
        self.lines += 1;
        Ok(self.wants_more())
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}

fn run(search: &Search, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    super::paths::check_search_root(&search.root, ctx)?;
    let hits: Mutex<Vec<Hit>> = Mutex::new(Vec::new());
    let collected = AtomicUsize::new(0);
    let stopped_early = AtomicBool::new(false);
    let mut walk = WalkBuilder::new(&search.root);
    walk.require_git(false);
    if let Some(types) = &search.types {
        walk.types(types.clone());
    }
    if let Some(overrides) = &search.overrides {
        walk.overrides(overrides.clone());
    }
    walk.build_parallel().run(|| {
        let (hits, collected, stopped_early) = (&hits, &collected, &stopped_early);
        let mut searcher = search.searcher.build();
        let mut sink = FileSink {
            search,
            path: String::new(),
            text: String::new(),
            lines: 0,
            matches: 0,
            binary: false,
        };
        Box::new(move |entry| {
            if ctx.cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if ctx.file_denials.denies(entry.path()) {
                return WalkState::Skip;
            }
            if !is_searchable(&entry) {
                return WalkState::Continue;
            }
            sink.start(entry.path());
            // Unreadable files are skipped, as ripgrep does.
            let searched = searcher.search_path(&search.matcher, entry.path(), &mut sink);
            if searched.is_err() || sink.binary || sink.matches == 0 {
                return WalkState::Continue;
            }
            let size = sink.text.len() + sink.path.len() + 16;
            let total = collected.fetch_add(size, Ordering::Relaxed) + size;
            let mtime = entry.metadata().ok().and_then(|m| m.modified().ok());
            if let Ok(mut hits) = hits.lock() {
                hits.push(Hit {
                    path: entry.into_path(),
                    mtime,
                    matches: sink.matches,
                    text: std::mem::take(&mut sink.text),
                });
            }
            if total > MAX_COLLECTED_BYTES {
                stopped_early.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let mut hits = hits.into_inner().unwrap_or_else(|p| p.into_inner());
    // Newest first like Claude Code; the path keeps the order stable for equal mtimes.
    hits.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path)));
    Ok(ToolOutput::ok(render(
        search,
        &hits,
        stopped_early.into_inner(),
    )))
}

/// Files are searched, directories descended; symlinks only when named directly.
fn is_searchable(entry: &ignore::DirEntry) -> bool {
    match entry.file_type() {
        Some(t) if t.is_file() => true,
        Some(t) if t.is_symlink() && entry.depth() == 0 => {
            std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file())
        }
        _ => false,
    }
}

fn render(search: &Search, hits: &[Hit], stopped_early: bool) -> String {
    if hits.is_empty() {
        return match search.mode {
            OutputMode::FilesWithMatches => "No files found".into(),
            _ => "No matches found".into(),
        };
    }
    let mut out = String::new();
    match search.mode {
        OutputMode::FilesWithMatches => {
            let _ = writeln!(
                out,
                "Found {} file{}",
                hits.len(),
                plural(hits.len() as u64)
            );
            let entries: Vec<Cow<str>> = hits.iter().map(|h| h.path.to_string_lossy()).collect();
            page(search, &entries, &mut out, "files");
        }
        OutputMode::Count => {
            let entries: Vec<Cow<str>> = hits
                .iter()
                .map(|h| match search.single_file {
                    true => h.matches.to_string().into(),
                    false => format!("{}:{}", h.path.to_string_lossy(), h.matches).into(),
                })
                .collect();
            page(search, &entries, &mut out, "entries");
            let total: u64 = hits.iter().map(|h| h.matches).sum();
            let _ = write!(
                out,
                "\n\nFound {total} match{} across {} file{}.",
                if total == 1 { "" } else { "es" },
                hits.len(),
                plural(hits.len() as u64)
            );
        }
        OutputMode::Content => {
            let mut entries: Vec<Cow<str>> = Vec::new();
            for (i, hit) in hits.iter().enumerate() {
                if i > 0 && search.context {
                    entries.push(Cow::Borrowed("--"));
                }
                entries.extend(hit.text.lines().map(Cow::Borrowed));
            }
            page(search, &entries, &mut out, "lines");
        }
    }
    if stopped_early {
        let _ = write!(
            out,
            "\n\n(The search stopped early because it found too much, so these results are \
             incomplete. Narrow it with path, glob, type or a more specific pattern.)"
        );
    }
    out
}

/// Appends the entries selected by offset and head_limit, and a note when some were left out.
fn page(search: &Search, entries: &[Cow<str>], out: &mut String, unit: &str) {
    let start = search.offset.min(entries.len());
    let end = search
        .limit
        .map_or(entries.len(), |limit| (start + limit).min(entries.len()));
    out.push_str(&entries[start..end].join("\n"));
    if let (Some(limit), true) = (search.limit, end < entries.len()) {
        let _ = write!(
            out,
            "\n\n(Results limited to {limit} {unit} by head_limit; more exist. Call Grep \
             again with offset={end} to see the next ones.)"
        );
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests;
