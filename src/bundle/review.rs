//! `ouro dogs --interactive`: a full-screen review of a checked plan before anything is
//! written. The files with their +/- counts on the left, the selected file's diff on the
//! right in hunks; each file and each hunk is accepted or rejected, a hunk can carry a comment
//! for the next prompt to the model. `q` writes what was accepted, `x` writes nothing. Fits an
//! 80×24 terminal; the terminal is restored on every way out (ratatui's own panic hook too).

use std::path::Path;

use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};
use similar::{DiffOp, capture_diff_slices};

use super::BundleError;
use super::plan::Change;

/// Lines of context shown around a hunk.
const CONTEXT: usize = 3;

/// One file under review: its diff as operations, and which of its hunks are accepted.
struct Review {
    change: Change,
    old: Vec<String>,
    new: Vec<String>,
    ops: Vec<DiffOp>,
    /// For each op, the hunk it belongs to (`None`: unchanged lines).
    hunk_of: Vec<Option<usize>>,
    accepted: Vec<bool>,
    comments: Vec<Option<String>>,
    /// Only the whole file can be taken or left (binary, created, deleted).
    whole: bool,
}

fn lines_of(bytes: Option<&[u8]>) -> Option<Vec<String>> {
    let text = std::str::from_utf8(bytes.unwrap_or_default()).ok()?;
    Some(text.split_inclusive('\n').map(String::from).collect())
}

impl Review {
    fn new(change: Change) -> Review {
        let old = lines_of(change.before.as_ref().map(|(b, _)| b.as_slice()));
        let new = lines_of(change.after.as_deref());
        let whole = change.before.is_none() || change.after.is_none();
        let (old, new) = match (old, new) {
            (Some(o), Some(n)) => (o, n),
            _ => (Vec::new(), Vec::new()),
        };
        let ops = capture_diff_slices(similar::Algorithm::Myers, &old, &new);
        // A hunk is a run of changes whose gaps are at most two contexts long.
        let mut hunk_of = Vec::with_capacity(ops.len());
        let mut hunks = 0usize;
        let mut gap = usize::MAX;
        for op in &ops {
            match op {
                DiffOp::Equal { len, .. } => {
                    gap = gap.saturating_add(*len);
                    hunk_of.push(None);
                }
                _ => {
                    if gap > 2 * CONTEXT || hunks == 0 {
                        hunks += 1;
                    }
                    gap = 0;
                    hunk_of.push(Some(hunks - 1));
                }
            }
        }
        let whole = whole || hunks == 0;
        let count = if whole { 1 } else { hunks };
        Review {
            change,
            old,
            new,
            ops,
            hunk_of,
            accepted: vec![true; count],
            comments: vec![None; count],
            whole,
        }
    }

    fn state(&self) -> &'static str {
        match (
            self.accepted.iter().all(|a| *a),
            self.accepted.iter().any(|a| *a),
        ) {
            (true, _) => "✓",
            (false, true) => "~",
            (false, false) => "✗",
        }
    }

    /// The file as accepted: the new side of accepted hunks, the old side of the rest.
    fn result(&self) -> Option<Change> {
        if !self.accepted.iter().any(|a| *a) {
            return None;
        }
        if self.whole || self.accepted.iter().all(|a| *a) {
            return Some(self.change.clone());
        }
        let mut out = String::new();
        for (op, hunk) in self.ops.iter().zip(&self.hunk_of) {
            let take_new = hunk.is_some_and(|h| self.accepted[h]);
            let (side, range) = if take_new {
                (&self.new, op.new_range())
            } else {
                (&self.old, op.old_range())
            };
            for line in &side[range] {
                out.push_str(line);
            }
        }
        let mut change = self.change.clone();
        change.after = Some(out.into_bytes());
        Some(change)
    }

    /// The diff lines of the file, each tagged with its hunk.
    fn rendered(&self) -> Vec<(Option<usize>, Line<'static>)> {
        if self.whole {
            let (sign, colour, lines) = match (&self.change.before, &self.change.after) {
                (None, Some(after)) => ("+", Color::Green, lines_of(Some(after))),
                (Some((before, _)), None) => ("-", Color::Red, lines_of(Some(before))),
                _ => ("~", Color::Yellow, None),
            };
            return match lines {
                Some(lines) => lines
                    .iter()
                    .map(|l| (Some(0), styled(sign, l, colour)))
                    .collect(),
                None => vec![(Some(0), Line::from("(binary content)"))],
            };
        }
        let mut out = Vec::new();
        for (i, (op, hunk)) in self.ops.iter().zip(&self.hunk_of).enumerate() {
            match op {
                DiffOp::Equal { old_index, len, .. } => {
                    // Context only next to a hunk.
                    let after_hunk = i > 0 && self.hunk_of[i - 1].is_some();
                    let before_hunk = self.hunk_of.get(i + 1).is_some_and(Option::is_some);
                    let lines = &self.old[*old_index..old_index + len];
                    let shown: Vec<&String> = if *len <= 2 * CONTEXT && after_hunk && before_hunk {
                        lines.iter().collect()
                    } else {
                        let head = if after_hunk { CONTEXT.min(*len) } else { 0 };
                        let tail = if before_hunk {
                            CONTEXT.min(*len - head)
                        } else {
                            0
                        };
                        lines[..head].iter().chain(&lines[len - tail..]).collect()
                    };
                    let owner = if after_hunk {
                        self.hunk_of[i - 1]
                    } else {
                        None
                    };
                    for line in shown {
                        out.push((owner, styled(" ", line, Color::Reset)));
                    }
                }
                _ => {
                    for line in &self.old[op.old_range()] {
                        out.push((*hunk, styled("-", line, Color::Red)));
                    }
                    for line in &self.new[op.new_range()] {
                        out.push((*hunk, styled("+", line, Color::Green)));
                    }
                }
            }
        }
        out
    }
}

fn styled(sign: &str, line: &str, colour: Color) -> Line<'static> {
    Line::from(Span::styled(
        format!("{sign}{}", line.trim_end_matches(['\n', '\r'])),
        Style::default().fg(colour),
    ))
}

/// What the review decided: the changes to write, and the comments for the model.
pub(super) struct Decision {
    pub changes: Vec<Change>,
    pub feedback: String,
    /// `x`: write nothing.
    pub aborted: bool,
}

struct Ui {
    files: Vec<Review>,
    file: usize,
    hunk: usize,
    /// A comment being typed for the current hunk.
    typing: Option<String>,
}

pub(super) fn review(changes: Vec<Change>) -> Result<Decision, BundleError> {
    let mut ui = Ui {
        files: changes.into_iter().map(Review::new).collect(),
        file: 0,
        hunk: 0,
        typing: None,
    };
    let mut terminal = ratatui::try_init().map_err(|source| BundleError::Io {
        action: "open the review on",
        path: "the terminal".into(),
        source,
    })?;
    let outcome = run(&mut terminal, &mut ui);
    ratatui::restore();
    let aborted = outcome.map_err(|source| BundleError::Io {
        action: "run the review on",
        path: "the terminal".into(),
        source,
    })?;
    Ok(Decision {
        changes: ui.files.iter().filter_map(Review::result).collect(),
        feedback: feedback(&ui.files),
        aborted,
    })
}

/// Runs until `q` (false) or `x` / Ctrl-C (true: abort).
fn run(terminal: &mut ratatui::DefaultTerminal, ui: &mut Ui) -> std::io::Result<bool> {
    loop {
        terminal.draw(|frame| draw(frame, ui))?;
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        if let Some(text) = &mut ui.typing {
            match key.code {
                KeyCode::Enter => {
                    let text = std::mem::take(text);
                    let file = &mut ui.files[ui.file];
                    file.comments[ui.hunk] = (!text.trim().is_empty()).then_some(text);
                    ui.typing = None;
                }
                KeyCode::Esc => ui.typing = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) => text.push(c),
                _ => {}
            }
            continue;
        }
        let hunks = ui.files[ui.file].accepted.len();
        match key.code {
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return Ok(true),
            KeyCode::Char('q') => return Ok(false),
            KeyCode::Char('x') => return Ok(true),
            KeyCode::Up | KeyCode::Char('k') => {
                ui.file = ui.file.saturating_sub(1);
                ui.hunk = 0;
            }
            KeyCode::Down | KeyCode::Char('j') => {
                ui.file = (ui.file + 1).min(ui.files.len().saturating_sub(1));
                ui.hunk = 0;
            }
            KeyCode::Tab | KeyCode::Right | KeyCode::Char('n') => {
                ui.hunk = (ui.hunk + 1).min(hunks - 1);
            }
            KeyCode::BackTab | KeyCode::Left | KeyCode::Char('p') => {
                ui.hunk = ui.hunk.saturating_sub(1);
            }
            KeyCode::Char('a') => ui.files[ui.file].accepted[ui.hunk] = true,
            KeyCode::Char('r') => ui.files[ui.file].accepted[ui.hunk] = false,
            KeyCode::Char('A') => ui.files[ui.file].accepted.fill(true),
            KeyCode::Char('R') => ui.files[ui.file].accepted.fill(false),
            KeyCode::Char('c') => {
                ui.typing = Some(
                    ui.files[ui.file].comments[ui.hunk]
                        .clone()
                        .unwrap_or_default(),
                );
            }
            _ => {}
        }
    }
}

fn draw(frame: &mut Frame, ui: &Ui) {
    let [main, help] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(2)]).areas(frame.area());
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(35), Constraint::Percentage(65)]).areas(main);
    let items: Vec<ListItem> = ui
        .files
        .iter()
        .map(|f| {
            let (plus, minus) = counts(f);
            ListItem::new(format!(
                "{} {} {} +{plus} -{minus}",
                f.state(),
                f.change.kind(),
                f.change.path.display()
            ))
        })
        .collect();
    let mut state = ListState::default().with_selected(Some(ui.file));
    frame.render_stateful_widget(
        List::new(items)
            .block(Block::default().borders(Borders::ALL).title(" files "))
            .highlight_style(Style::default().add_modifier(Modifier::REVERSED)),
        left,
        &mut state,
    );
    let file = &ui.files[ui.file];
    let lines = file.rendered();
    let first_of_hunk = lines
        .iter()
        .position(|(h, _)| *h == Some(ui.hunk))
        .unwrap_or(0);
    let body: Vec<Line> = lines
        .into_iter()
        .map(|(h, line)| {
            let mark = if h == Some(ui.hunk) { "▶" } else { " " };
            let mut spans = vec![Span::raw(mark)];
            spans.extend(line.spans);
            Line::from(spans)
        })
        .collect();
    let verdict = if file.accepted[ui.hunk] {
        "accepted"
    } else {
        "rejected"
    };
    let title = format!(
        " {} · hunk {}/{} {verdict}{} ",
        file.change.path.display(),
        ui.hunk + 1,
        file.accepted.len(),
        if file.comments[ui.hunk].is_some() {
            " · commented"
        } else {
            ""
        }
    );
    let scroll = u16::try_from(first_of_hunk.saturating_sub(2)).unwrap_or(u16::MAX);
    frame.render_widget(
        Paragraph::new(body)
            .block(Block::default().borders(Borders::ALL).title(title))
            .scroll((scroll, 0)),
        right,
    );
    let help_text = match &ui.typing {
        Some(text) => format!("comment on this hunk (Enter saves, Esc cancels): {text}▏"),
        None => "↑↓ file  ←→/Tab hunk  a/r accept/reject hunk  A/R whole file  c comment\nq write what is accepted and quit   x quit writing nothing"
            .to_string(),
    };
    frame.render_widget(Paragraph::new(help_text), help);
}

fn counts(review: &Review) -> (usize, usize) {
    if review.whole {
        let n = |b: Option<&[u8]>| lines_of(b).map_or(0, |l| l.len());
        return (
            n(review.change.after.as_deref()),
            n(review.change.before.as_ref().map(|(b, _)| b.as_slice())),
        );
    }
    review.ops.iter().fold((0, 0), |(p, m), op| match op {
        DiffOp::Equal { .. } => (p, m),
        _ => (p + op.new_range().len(), m + op.old_range().len()),
    })
}

/// The comments, with the hunk each is about, as text for the next prompt.
fn feedback(files: &[Review]) -> String {
    let mut out = String::new();
    for file in files {
        let lines = file.rendered();
        for (hunk, comment) in file.comments.iter().enumerate() {
            let Some(comment) = comment else { continue };
            let verdict = if file.accepted[hunk] {
                "accepted"
            } else {
                "rejected"
            };
            out.push_str(&format!(
                "## {} (hunk {}, {verdict})\n\n```diff\n",
                file.change.path.display(),
                hunk + 1
            ));
            for (_, line) in lines.iter().filter(|(h, _)| *h == Some(hunk)) {
                let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
                out.push_str(&text);
                out.push('\n');
            }
            out.push_str(&format!("```\n\n{comment}\n\n"));
        }
    }
    out
}

/// Writes the review's comments to `path` (nothing when there are none).
pub(super) fn write_feedback(path: &Path, feedback: &str) -> Result<(), BundleError> {
    if feedback.is_empty() {
        return Ok(());
    }
    std::fs::write(path, feedback).map_err(|source| BundleError::Io {
        action: "write the feedback to",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(before: &str, after: &str) -> Change {
        Change {
            path: "f.txt".into(),
            before: Some((before.as_bytes().to_vec(), 0o644)),
            after: Some(after.as_bytes().to_vec()),
            protected: None,
        }
    }

    #[test]
    fn a_rejected_hunk_keeps_its_old_lines_and_the_others_apply() {
        let lines = |edit: &dyn Fn(usize) -> Option<&'static str>| -> String {
            (1..=20)
                .map(|i| format!("{}\n", edit(i).map_or(format!("line {i}"), String::from)))
                .collect()
        };
        let old = lines(&|_| None);
        let new = lines(&|i| match i {
            2 => Some("two"),
            18 => Some("eighteen"),
            _ => None,
        });
        let mut review = Review::new(change(&old, &new));
        assert_eq!(review.accepted.len(), 2);
        review.accepted[1] = false;
        let after = String::from_utf8(review.result().unwrap().after.unwrap()).unwrap();
        assert_eq!(after, lines(&|i| (i == 2).then_some("two")));
        review.accepted[0] = false;
        assert!(review.result().is_none());
    }

    #[test]
    fn comments_become_feedback_with_their_hunk() {
        let mut review = Review::new(change("a\nb\n", "a\nc\n"));
        review.comments[0] = Some("keep b".into());
        let text = feedback(&[review]);
        assert!(text.contains("## f.txt (hunk 1, accepted)"), "{text}");
        assert!(
            text.contains("-b") && text.contains("+c") && text.contains("keep b"),
            "{text}"
        );
    }
}
