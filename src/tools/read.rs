//! Read: shows a text file with line numbers and remembers what was seen for Edit and Write.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::file_state::{ContentHasher, FileState};
use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use super::{image, paths};
use crate::event::ToolDisplay;
use crate::permissions::Access;

/// Lines shown when the model gives no limit.
pub(crate) const DEFAULT_LIMIT: u64 = 2_000;
/// Longer lines are cut; minified files would otherwise flood the context.
pub const MAX_LINE_CHARS: usize = 2_000;
/// Output stops growing past this many characters; the model pages on with `offset`.
const OUTPUT_BUDGET: usize = 100_000;
/// A NUL byte within this prefix marks a file as binary.
const BINARY_SNIFF: usize = 8 * 1024;
const CHUNK: usize = 64 * 1024;
/// Bytes of one line kept for display: enough for MAX_LINE_CHARS of any UTF-8 text, plus one
/// to tell that the line goes on.
const LINE_BYTES_KEPT: usize = MAX_LINE_CHARS * 4 + 1;

pub struct ReadTool;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReadInput {
    /// The absolute path of the file to read.
    pub file_path: String,
    /// The line number to start reading from (1 is the first line). Only needed for files too
    /// long to read at once.
    pub offset: Option<u64>,
    /// How many lines to read (default 2000).
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// What one pass over the file produced.
struct Scan {
    text: String,
    /// Line number of the last line shown; 0 when none was.
    last_shown: u64,
    /// The last line shown is the empty one after the file's final newline.
    last_is_after_newline: bool,
    total_lines: u64,
    total_bytes: u64,
    budget_hit: bool,
    hash: u64,
}

impl Scan {
    /// Lines of file text shown, not counting the empty line after a final newline.
    fn lines_shown(&self, first: u64) -> u64 {
        if self.last_shown < first {
            return 0;
        }
        self.last_shown - first + 1 - u64::from(self.last_is_after_newline)
    }
}

enum Outcome {
    Binary,
    Cancelled,
    Text(Scan),
}

impl Tool for ReadTool {
    type Input = ReadInput;

    const NAME: &'static str = "Read";

    fn description(&self) -> &'static str {
        include_str!("../../tools/Read.md")
    }

    fn validate(&self, input: &ReadInput, ctx: &ToolContext) -> Result<(), String> {
        let path = paths::absolute(&input.file_path, ctx)?;
        if input.limit == Some(0) {
            return Err("limit must be at least 1; omit it to read up to 2000 lines.".into());
        }
        if !paths::may_inspect(&path, ctx) {
            return Ok(());
        }
        inspect(&path).map(|_| ()).map_err(|e| e.to_string())
    }

    fn access(&self, input: &ReadInput, ctx: &ToolContext) -> Access {
        Access::Read(ctx.current_dir().join(&input.file_path))
    }

    fn is_read_only(&self, _input: &ReadInput) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &ReadInput) -> bool {
        true
    }

    fn max_result_chars(&self) -> usize {
        OUTPUT_BUDGET + 1_000
    }

    fn summary(&self, input: &ReadInput) -> String {
        input.file_path.clone()
    }

    async fn call(
        &self,
        input: ReadInput,
        ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let ctx = ctx.clone();
        paths::blocking(move || read_file(&input, &ctx)).await
    }
}

fn directory_message(path: &Path) -> String {
    format!(
        "{} is a directory, not a file. Use Glob to find files in it, or run `ls` with Bash \
         to list it.",
        path.display()
    )
}

/// Checks, before opening, that `path` is a regular file: opening a FIFO would block.
fn inspect(path: &Path) -> Result<fs::Metadata, ToolError> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(ToolError::Invalid(directory_message(path))),
        Ok(meta) if !meta.is_file() => Err(ToolError::Invalid(paths::special_file_message(path))),
        Ok(meta) => Ok(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(ToolError::Invalid(paths::missing_file_message(path)))
        }
        Err(e) => Err(ToolError::io(
            format!("cannot access {}", path.display()),
            e,
        )),
    }
}

fn read_file(input: &ReadInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let path = paths::absolute(&input.file_path, ctx).map_err(ToolError::Invalid)?;
    inspect(&path)?;
    let mut file = crate::sys::beneath::read(&ctx.project_root, &path)
        .map_err(|e| ToolError::io(format!("cannot open {}", path.display()), e))?;
    // The state must describe the file that is actually read, so it comes from the handle.
    let meta = file
        .metadata()
        .map_err(|e| ToolError::io(format!("cannot inspect {}", path.display()), e))?;
    if let Some(media_type) = picture(&mut file)
        .map_err(|e| ToolError::io(format!("cannot read {}", path.display()), e))?
    {
        return image::read(&path, media_type, meta.len()).map_err(ToolError::Invalid);
    }
    let first = input.offset.unwrap_or(1).max(1);
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let scan = match scan(file, first, limit, &ctx.cancel) {
        Ok(Outcome::Text(scan)) => scan,
        Ok(Outcome::Binary) => return Err(ToolError::Invalid(binary_message(&path))),
        Ok(Outcome::Cancelled) => return Err(ToolError::Cancelled),
        Err(e) => return Err(ToolError::io(format!("cannot read {}", path.display()), e)),
    };
    ctx.files.record(&path, FileState::new(scan.hash, &meta));
    let shown = scan.lines_shown(first);
    let output = ToolOutput::ok(render(&path, first, scan));
    Ok(match shown {
        0 => output,
        n => output.with_display(ToolDisplay::LinesRead(n)),
    })
}

/// The image type of the file, its reading position put back to the start.
fn picture(file: &mut File) -> io::Result<Option<&'static str>> {
    use std::io::{Seek as _, SeekFrom};
    let mut head = Vec::with_capacity(12);
    (&mut *file).take(12).read_to_end(&mut head)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(image::media_type(&head))
}

fn binary_message(path: &Path) -> String {
    format!(
        "{} is a binary file (it contains NUL bytes), so Read cannot show it as text. Use Bash \
         with a suitable tool (`file`, `xxd`, `strings`) if you need to inspect it.",
        path.display()
    )
}

fn render(path: &Path, first: u64, scan: Scan) -> String {
    if scan.total_bytes == 0 {
        return format!("The file {} exists but is empty.", path.display());
    }
    if scan.last_shown == 0 {
        let total = scan.total_lines;
        return format!(
            "The file {} has {total} lines, so offset {first} is past its end. Use an offset \
             between 1 and {total}.",
            path.display()
        );
    }
    let mut text = scan.text;
    if scan.last_shown < scan.total_lines {
        let why = if scan.budget_hit {
            " (output size limit reached)"
        } else {
            ""
        };
        let _ = write!(
            text,
            "\n\n(Showing lines {first}-{} of {}{why}. Call Read with offset={} to read more.)",
            scan.last_shown,
            scan.total_lines,
            scan.last_shown + 1
        );
    }
    text
}

/// One streaming pass: hashes every byte, counts every line and formats the wanted ones, so
/// a huge file costs one read and little memory.
fn scan(
    reader: impl Read,
    first: u64,
    limit: u64,
    cancel: &CancellationToken,
) -> io::Result<Outcome> {
    let mut reader = BufReader::with_capacity(CHUNK, reader);
    let last_wanted = first.saturating_add(limit - 1);
    let mut hasher = ContentHasher::default();
    let mut out = Lines {
        text: String::new(),
        line: Vec::new(),
        line_len: 0,
        last_shown: 0,
        budget_hit: false,
    };
    let mut line_no: u64 = 1;
    let mut total_bytes: u64 = 0;
    loop {
        if cancel.is_cancelled() {
            return Ok(Outcome::Cancelled);
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        if total_bytes == 0 && buf[..buf.len().min(BINARY_SNIFF)].contains(&0) {
            return Ok(Outcome::Binary);
        }
        hasher.update(buf);
        let len = buf.len();
        total_bytes += len as u64;
        let mut rest = buf;
        while !rest.is_empty() {
            if line_no > last_wanted || out.budget_hit {
                line_no += rest.iter().filter(|&&b| b == b'\n').count() as u64;
                break;
            }
            match rest.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    if line_no >= first {
                        out.push(&rest[..end]);
                        out.emit(line_no);
                    }
                    line_no += 1;
                    rest = &rest[end + 1..];
                }
                None => {
                    if line_no >= first {
                        out.push(rest);
                    }
                    break;
                }
            }
        }
        reader.consume(len);
    }
    let mut last_is_after_newline = false;
    if line_no >= first && line_no <= last_wanted && !out.budget_hit && total_bytes > 0 {
        last_is_after_newline = out.line_len == 0;
        out.emit(line_no);
    }
    Ok(Outcome::Text(Scan {
        text: out.text,
        last_shown: out.last_shown,
        last_is_after_newline: last_is_after_newline && out.last_shown == line_no,
        total_lines: line_no,
        total_bytes,
        budget_hit: out.budget_hit,
        hash: hasher.finish(),
    }))
}

/// The formatted output and the line being assembled (lines can span read chunks).
struct Lines {
    text: String,
    line: Vec<u8>,
    /// Full length of the current line in bytes, including what was not kept.
    line_len: usize,
    last_shown: u64,
    budget_hit: bool,
}

impl Lines {
    fn push(&mut self, bytes: &[u8]) {
        let room = LINE_BYTES_KEPT.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.line_len += bytes.len();
    }

    fn emit(&mut self, line_no: u64) {
        let mut bytes = self.line.as_slice();
        if self.line_len == bytes.len() && bytes.last() == Some(&b'\r') {
            bytes = &bytes[..bytes.len() - 1];
        }
        let decoded = String::from_utf8_lossy(bytes);
        // Lines cut by bytes always exceed MAX_LINE_CHARS, so they are reported as cut here.
        let (shown, cut) = crate::text::prefix_chars(&decoded, MAX_LINE_CHARS);
        if self.last_shown > 0 && self.text.len() + shown.len() + 24 > OUTPUT_BUDGET {
            self.budget_hit = true;
        } else {
            if self.last_shown > 0 {
                self.text.push('\n');
            }
            let _ = write!(self.text, "{line_no}\t{shown}");
            if cut {
                let _ = write!(
                    self.text,
                    " [... line truncated at {MAX_LINE_CHARS} characters]"
                );
            }
            self.last_shown = line_no;
        }
        self.line.clear();
        self.line_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{erase, file_state::content_hash};
    use serde_json::json;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path().to_path_buf());
        (dir, ctx)
    }

    async fn read(ctx: &ToolContext, input: serde_json::Value) -> Result<ToolOutput, String> {
        let tool = erase(ReadTool);
        tool.check_schema(&input)?;
        let call = tool.prepare(&input, ctx)?;
        call.run(ctx, &Progress::none())
            .await
            .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn reports_how_many_lines_of_text_it_returned() {
        let (dir, ctx) = setup();
        let cases: [(&str, serde_json::Value, Option<u64>); 5] = [
            ("one\ntwo\nthree\n", json!({}), Some(3)),
            ("one\ntwo", json!({}), Some(2)),
            ("a\nb\nc\nd\n", json!({"offset": 2, "limit": 2}), Some(2)),
            ("a\nb\nc\nd\n", json!({"offset": 3}), Some(2)),
            ("", json!({}), None),
        ];
        for (i, (text, window, expected)) in cases.into_iter().enumerate() {
            let path = dir.path().join(format!("f{i}.txt"));
            std::fs::write(&path, text).unwrap();
            let mut input = json!({"file_path": path});
            for (k, v) in window.as_object().unwrap() {
                input[k] = v.clone();
            }
            let out = read(&ctx, input).await.unwrap();
            assert_eq!(
                out.display,
                expected.map(ToolDisplay::LinesRead),
                "{text:?} {window}: {}",
                out.content
            );
        }
    }

    #[tokio::test]
    async fn numbers_lines_like_claude_code_and_records_state() {
        let (dir, ctx) = setup();
        let file = dir.path().join("notes.txt");
        let content = "line one\nthe quick brwon fox\nline three\n";
        fs::write(&file, content).unwrap();
        let out = read(&ctx, json!({"file_path": file})).await.unwrap();
        assert_eq!(
            out.content,
            "1\tline one\n2\tthe quick brwon fox\n3\tline three\n4\t"
        );
        assert!(!out.is_error);
        let state = ctx.files.get(&file).unwrap();
        assert_eq!(state.hash, content_hash(content.as_bytes()));
        assert_eq!(state.len, content.len() as u64);
    }

    #[tokio::test]
    async fn offset_and_limit_select_lines_and_say_how_to_continue() {
        let (dir, ctx) = setup();
        let file = dir.path().join("many.txt");
        let content: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        fs::write(&file, &content).unwrap();
        let out = read(&ctx, json!({"file_path": file, "offset": 3, "limit": 2}))
            .await
            .unwrap();
        assert!(
            out.content
                .starts_with("3\tl3\n4\tl4\n\n(Showing lines 3-4 of 11.")
        );
        assert!(out.content.contains("offset=5"), "{}", out.content);
        // A partial read still records the whole file's state.
        let state = ctx.files.get(&file).unwrap();
        assert_eq!(state.hash, content_hash(content.as_bytes()));
        let past = read(&ctx, json!({"file_path": file, "offset": 50}))
            .await
            .unwrap();
        assert!(past.content.contains("past its end"), "{}", past.content);
    }

    #[tokio::test]
    async fn default_limit_is_2000_lines() {
        let (dir, ctx) = setup();
        let file = dir.path().join("long.txt");
        let content: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        fs::write(&file, content).unwrap();
        let out = read(&ctx, json!({"file_path": file})).await.unwrap();
        assert!(out.content.contains("\n2000\t2000\n"), "missing line 2000");
        assert!(!out.content.contains("2001\t"));
        assert!(out.content.contains("offset=2001"));
    }

    #[tokio::test]
    async fn long_lines_are_cut_with_a_marker_and_crlf_is_hidden() {
        let (dir, ctx) = setup();
        let file = dir.path().join("wide.txt");
        let long = "é".repeat(MAX_LINE_CHARS + 10);
        fs::write(&file, format!("a\r\n{long}\r\nb")).unwrap();
        let out = read(&ctx, json!({"file_path": file})).await.unwrap();
        let lines: Vec<&str> = out.content.split('\n').collect();
        assert_eq!(lines[0], "1\ta");
        assert!(lines[1].starts_with(&format!("2\t{}", "é".repeat(MAX_LINE_CHARS))));
        assert!(lines[1].ends_with("line truncated at 2000 characters]"));
        assert!(!lines[1].contains(&"é".repeat(MAX_LINE_CHARS + 1)));
        assert_eq!(lines[2], "3\tb");
    }

    #[tokio::test]
    async fn lines_spanning_read_chunks_are_reassembled() {
        let (dir, ctx) = setup();
        let file = dir.path().join("chunky.txt");
        let first = "x".repeat(CHUNK - 3);
        fs::write(&file, format!("{first}\nsecond line\n")).unwrap();
        let out = read(&ctx, json!({"file_path": file, "offset": 2}))
            .await
            .unwrap();
        assert_eq!(out.content, "2\tsecond line\n3\t");
    }

    #[tokio::test]
    async fn refuses_missing_binary_directory_and_relative_paths() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("readme.md"), "hi").unwrap();
        let missing = read(&ctx, json!({"file_path": dir.path().join("readme.txt")}))
            .await
            .unwrap_err();
        assert!(missing.contains("does not exist"), "{missing}");
        assert!(missing.contains("readme.md"), "{missing}");

        let bin = dir.path().join("tool.bin");
        fs::write(&bin, b"\x7fELF\0\0\x01").unwrap();
        let binary = read(&ctx, json!({"file_path": bin})).await.unwrap_err();
        assert!(binary.contains("binary"), "{binary}");
        assert!(ctx.files.get(&bin).is_none());

        let directory = read(&ctx, json!({"file_path": dir.path()}))
            .await
            .unwrap_err();
        assert!(directory.contains("is a directory"), "{directory}");
        assert!(directory.contains("Glob"), "{directory}");

        let relative = read(&ctx, json!({"file_path": "readme.md"}))
            .await
            .unwrap_err();
        assert!(relative.contains("absolute"), "{relative}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn refuses_a_fifo_without_blocking_and_stops_when_cancelled() {
        let (dir, ctx) = setup();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = read(&ctx, json!({"file_path": fifo})).await.unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");

        let file = dir.path().join("a.txt");
        fs::write(&file, "a").unwrap();
        ctx.cancel.cancel();
        let cancelled = read(&ctx, json!({"file_path": file})).await.unwrap_err();
        assert_eq!(cancelled, ToolError::Cancelled.to_string());
        assert!(ctx.files.get(&file).is_none());
    }

    #[tokio::test]
    async fn empty_file_says_so() {
        let (dir, ctx) = setup();
        let file = dir.path().join("empty.txt");
        fs::write(&file, "").unwrap();
        let out = read(&ctx, json!({"file_path": file})).await.unwrap();
        assert!(
            out.content.contains("exists but is empty"),
            "{}",
            out.content
        );
        assert!(ctx.files.get(&file).is_some());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlink_reads_target_and_records_the_link_path() {
        let (dir, ctx) = setup();
        let target = dir.path().join("target.txt");
        fs::write(&target, "through the link").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let out = read(&ctx, json!({"file_path": link})).await.unwrap();
        assert_eq!(out.content, "1\tthrough the link");
        assert!(ctx.files.get(&link).is_some());
    }

    /// A link inside the project that leads out (say, swapped in after the call was
    /// approved) is not followed when the file is opened.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_link_leading_out_of_the_project_is_not_followed() {
        let (dir, ctx) = setup();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "outside").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let err = read(&ctx, json!({"file_path": dir.path().join("out/secret")}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("outside the project"), "{err}");
    }

    #[test]
    fn schema_errors_name_the_failing_paths() {
        let tool = erase(ReadTool);
        let err = tool
            .check_schema(&json!({"file_path": 5, "limit": "ten"}))
            .unwrap_err();
        assert!(err.contains("/file_path"), "{err}");
        assert!(err.contains("/limit"), "{err}");
        let missing = tool.check_schema(&json!({})).unwrap_err();
        assert!(missing.contains("file_path"), "{missing}");
        assert_eq!(tool.name(), "Read");
        assert!(tool.description().contains("absolute"));
    }

    #[tokio::test]
    async fn typed_tool_reports_access_and_flags() {
        let (dir, ctx) = setup();
        let input = ReadInput {
            file_path: dir.path().join("a").display().to_string(),
            offset: None,
            limit: None,
        };
        assert_eq!(
            ReadTool.access(&input, &ctx),
            Access::Read(dir.path().join("a"))
        );
        assert!(ReadTool.is_read_only(&input) && ReadTool.is_concurrency_safe(&input));
        let err = ReadTool
            .call(input, &ctx, &Progress::none())
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Invalid(_)));
    }
}
