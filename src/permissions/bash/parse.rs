//! Walks the tree-sitter-bash syntax tree of a command line and turns it into simple commands
//! plus findings. Only node kinds listed here are understood; anything else is reported as
//! unsupported so the caller asks instead of guessing.

use tree_sitter::{Node, Parser};

use super::{Finding, FindingKind, MAX_COMMAND_LEN, Word};

/// Deeper syntax trees than this are not walked (each shell construct adds a few levels).
const MAX_DEPTH: usize = 200;

/// One simple command as written, before wrappers are stripped.
#[derive(Debug, Clone, Default)]
pub(super) struct RawCommand {
    pub source: String,
    /// `NAME=value` prefixes.
    pub assignments: Vec<String>,
    pub words: Vec<Word>,
    /// A here-document or here-string feeds its standard input.
    pub(crate) fed_script: bool,
}

#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub commands: Vec<RawCommand>,
    pub findings: Vec<Finding>,
    /// Files read through `<` redirections.
    pub reads: Vec<Word>,
    /// Files written through `>`-style redirections (other than /dev/null and friends).
    pub writes: Vec<Word>,
}

pub(super) fn parse(command: &str) -> Parsed {
    let mut out = Parsed::default();
    if command.len() > MAX_COMMAND_LEN {
        out.findings
            .push(Finding::new(FindingKind::TooLong(command.len()), command));
        return out;
    }
    if misread_characters(command) {
        out.findings
            .push(Finding::new(FindingKind::Lexing, command));
    }
    let mut parser = Parser::new();
    let tree = match parser.set_language(&tree_sitter_bash::LANGUAGE.into()) {
        Ok(()) => parser.parse(ascii_stand_in(command), None),
        Err(_) => None,
    };
    let Some(tree) = tree else {
        out.findings
            .push(Finding::new(FindingKind::ParseError, command));
        return out;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.findings
            .push(Finding::new(FindingKind::ParseError, command));
    }
    let mut walker = Walker {
        src: command,
        out,
        too_deep: false,
        dynamic_test_words: 0,
        test_command: None,
        heredocs: Vec::new(),
    };
    walker.statement(root, 0);
    if !heredocs_end_where_bash_ends_them(command, &mut walker.heredocs) {
        walker
            .out
            .findings
            .push(Finding::new(FindingKind::HeredocMismatch, command));
    }
    walker.out
}

/// Control characters other than newline and tab, or a backslash before a tab: bash and
/// tree-sitter-bash split words differently around them (`echo hi<VT># ; touch x` is one
/// comment to the parser and two commands to bash), so the whole command is not analysed.
fn misread_characters(command: &str) -> bool {
    command
        .bytes()
        .any(|b| (b.is_ascii_control() && b != b'\n' && b != b'\t') || b == 0x7f)
        || command.contains("\\\t")
}

/// The bytes the parser sees: every non-ASCII byte becomes `x`. tree-sitter-bash's scanner
/// passes arbitrary code points to C's `isdigit`, which is undefined behaviour and crashes on
/// some (`{` then U+E0147 does). Bash's syntax is all ASCII, so non-ASCII text is always plain
/// word characters; `x` keeps that, errs on the cautious side where it differs (`$é` is
/// literal in bash, `$xx` an expansion), and keeps every byte offset, so node ranges still
/// index the original command, whose real text is what gets judged.
fn ascii_stand_in(command: &str) -> Vec<u8> {
    command
        .bytes()
        .map(|b| if b.is_ascii() { b } else { b'x' })
        .collect()
}

struct Walker<'s> {
    src: &'s str,
    out: Parsed,
    too_deep: bool,
    /// Words of test expressions that are not literal, seen so far.
    dynamic_test_words: usize,
    /// The `[ ]`/`[[ ]]` command being walked: the operands of its file tests are added to its
    /// words, so the paths they probe are judged like any other command's.
    test_command: Option<usize>,
    /// Every here-document, to check that the parser ended each where bash will.
    heredocs: Vec<Heredoc>,
}

/// A here-document as the parser saw it.
struct Heredoc {
    /// Where its `<<` is.
    start: usize,
    /// `<<-`: leading tabs are stripped from body lines.
    strip_tabs: bool,
    /// The delimiter word as the parser took it (`EOF`, `'EOF'`, `E"OF"`).
    word: String,
    /// Where that word starts.
    word_start: usize,
    /// The byte after the parser's end line, if it found one.
    parser_end: Option<usize>,
}

/// Bash ends a here-document at the first line equal to its delimiter (the word with quotes
/// removed; tabs stripped first for `<<-`); tree-sitter-bash's scanner does not always agree
/// (it keeps quotes, accepts prefixes, strips spaces). Where they differ, text bash runs as
/// commands would pass as document text, so the caller refuses to judge the command.
fn heredocs_end_where_bash_ends_them(command: &str, heredocs: &mut [Heredoc]) -> bool {
    heredocs.sort_by_key(|h| h.start);
    let mut cursor = 0;
    for doc in heredocs.iter() {
        // The parser must have taken the same word bash reads there.
        if bash_word_at(command, doc.word_start) != doc.word {
            return false;
        }
        // Only plain delimiter words: a metacharacter inside means the words differ already.
        if doc.word.is_empty()
            || !doc
                .word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.'\"\\".contains(c))
        {
            return false;
        }
        let delimiter = remove_quotes(&doc.word);
        // The body starts on the line after the one holding the `<<`.
        let from = cursor.max(doc.start);
        let Some(newline) = command[from..].find('\n') else {
            return doc.parser_end.is_none();
        };
        let mut at = from + newline + 1;
        let mut bash_end = None;
        while at <= command.len() {
            let line_end = command[at..].find('\n').map_or(command.len(), |i| at + i);
            let line = &command[at..line_end];
            let line = if doc.strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line
            };
            if line == delimiter {
                bash_end = Some(line_end);
                break;
            }
            if line_end == command.len() {
                break;
            }
            at = line_end + 1;
        }
        if bash_end != doc.parser_end {
            return false;
        }
        cursor = bash_end.map_or(command.len(), |end| end);
    }
    true
}

/// The word bash reads from `start`: up to an unquoted blank or metacharacter.
fn bash_word_at(command: &str, start: usize) -> &str {
    let Some(text) = command.get(start..) else {
        return "";
    };
    let (mut single, mut double, mut escaped) = (false, false, false);
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            c if !single && !double && (c.is_whitespace() || ";&|<>()".contains(c)) => {
                return &text[..i];
            }
            _ => {}
        }
    }
    text
}

/// A word with bash's quote removal applied.
fn remove_quotes(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let (mut single, mut double) = (false, false);
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '\\' if !single => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// A node's children paired with the field name each one fills, if any.
fn fields<'t>(node: Node<'t>) -> Vec<(Option<&'t str>, Node<'t>)> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.field_name(), cursor.node()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// Whether a `for` loop may bind `name` without asking: a loop variable is an assignment
/// like any other (`for PATH in ./bin` runs the project's programs), so only a lowercase name
/// that bash gives no meaning and the environment does not hold (a variable already exported
/// stays exported with the loop's value) is let through.
fn harmless_loop_variable(name: &str) -> bool {
    name.bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !matches!(name, "auto_resume" | "histchars")
        && std::env::var_os(name).is_none()
}

/// Operators of `[[ ]]` that evaluate their operands as arithmetic, where array subscripts
/// can run commands.
const ARITHMETIC_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

impl<'s> Walker<'s> {
    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    fn find(&mut self, kind: FindingKind, node: Node<'_>) {
        let snippet = self.text(node);
        self.out.findings.push(Finding::new(kind, snippet));
    }

    fn deep(&mut self, depth: usize, node: Node<'_>) -> bool {
        if depth <= MAX_DEPTH {
            return false;
        }
        if !self.too_deep {
            self.too_deep = true;
            self.find(FindingKind::TooDeep, node);
        }
        true
    }

    fn statement(&mut self, node: Node<'_>, depth: usize) {
        if self.deep(depth, node) {
            return;
        }
        match node.kind() {
            "program" | "list" | "do_group" | "if_statement" | "elif_clause" | "else_clause"
            | "while_statement" | "negated_command" => {
                for child in named_children(node) {
                    self.statement(child, depth + 1);
                }
            }
            "pipeline" => {
                // Past the first `|`, a command's standard input is what came before it: a
                // shell there runs whatever that printed (`echo 'rm x' | sh`).
                for (i, child) in named_children(node).into_iter().enumerate() {
                    let before = self.out.commands.len();
                    self.statement(child, depth + 1);
                    if i > 0 {
                        for raw in self.out.commands.iter_mut().skip(before) {
                            raw.fed_script = true;
                        }
                    }
                }
            }
            "comment" => {}
            "command" => self.command(node, depth),
            "redirected_statement" => self.redirected(node, depth),
            "test_command" => self.test(node, depth),
            "subshell" => {
                self.find(FindingKind::Subshell, node);
                self.scan(node, depth);
            }
            "compound_statement" => {
                let arithmetic = node.child(0).is_some_and(|c| c.kind() == "((");
                let kind = if arithmetic {
                    FindingKind::Arithmetic
                } else {
                    FindingKind::CommandGroup
                };
                self.find(kind, node);
                self.scan(node, depth);
            }
            "function_definition" => {
                self.find(FindingKind::FunctionDefinition, node);
                self.scan(node, depth);
            }
            "for_statement" => {
                for (field, child) in fields(node) {
                    match field {
                        Some("value") => {
                            self.word(child, depth + 1);
                        }
                        Some("body") => self.statement(child, depth + 1),
                        Some("variable") if !harmless_loop_variable(self.text(child)) => {
                            self.find(FindingKind::Assignment, node);
                        }
                        _ => {}
                    }
                }
            }
            "case_statement" => {
                for (field, child) in fields(node) {
                    if field == Some("value") {
                        self.word(child, depth + 1);
                    } else if child.kind() == "case_item" {
                        for (item_field, item) in fields(child) {
                            if item_field == Some("value") {
                                self.word(item, depth + 2);
                            } else if item.is_named() {
                                self.statement(item, depth + 2);
                            }
                        }
                    }
                }
            }
            "variable_assignment"
            | "variable_assignments"
            | "declaration_command"
            | "unset_command" => {
                self.find(FindingKind::Assignment, node);
                self.scan(node, depth);
            }
            "ERROR" => self.scan(node, depth),
            other => {
                self.find(FindingKind::Unsupported(other.to_string()), node);
                self.scan(node, depth);
            }
        }
    }

    /// Looks inside a construct that is not analysed as a whole, so the commands nested in it
    /// still show up (deny rules must see them) and their own findings are reported.
    fn scan(&mut self, node: Node<'_>, depth: usize) {
        if self.deep(depth, node) {
            return;
        }
        for child in named_children(node) {
            match child.kind() {
                "command_substitution" | "process_substitution" | "arithmetic_expansion" => {
                    self.word(child, depth + 1);
                }
                "program"
                | "list"
                | "pipeline"
                | "do_group"
                | "if_statement"
                | "elif_clause"
                | "else_clause"
                | "while_statement"
                | "negated_command"
                | "command"
                | "redirected_statement"
                | "test_command"
                | "subshell"
                | "compound_statement"
                | "function_definition"
                | "for_statement"
                | "c_style_for_statement"
                | "case_statement" => self.statement(child, depth + 1),
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    let mut fed = false;
                    self.redirect(child, depth + 1, &mut fed);
                }
                _ => self.scan(child, depth + 1),
            }
        }
    }

    fn command(&mut self, node: Node<'_>, depth: usize) {
        // The command goes in before the commands nested in its words, so the outer command
        // comes first when reasons are reported.
        let index = self.out.commands.len();
        self.out.commands.push(RawCommand {
            source: self.text(node).to_string(),
            ..RawCommand::default()
        });
        let mut assignments = Vec::new();
        let mut words = Vec::new();
        let mut fed = false;
        for (field, child) in fields(node) {
            match (field, child.kind()) {
                (Some("name"), _) => {
                    let inner = named_children(child);
                    match inner.as_slice() {
                        [single] => words.push(self.word(*single, depth + 1)),
                        _ => words.push(self.word(child, depth + 1)),
                    }
                }
                (Some("argument"), _) => words.push(self.word(child, depth + 1)),
                (Some("redirect"), _) => self.redirect(child, depth + 1, &mut fed),
                (_, "variable_assignment") => {
                    assignments.push(self.text(child).to_string());
                    self.scan(child, depth + 1);
                }
                (_, "comment") => {}
                (_, _) if !child.is_named() => {}
                (_, other) => {
                    self.find(FindingKind::Unsupported(other.to_string()), child);
                    self.scan(child, depth + 1);
                }
            }
        }
        if let Some(raw) = self.out.commands.get_mut(index) {
            raw.assignments = assignments;
            raw.words = words;
            raw.fed_script = fed;
        }
    }

    fn redirected(&mut self, node: Node<'_>, depth: usize) {
        let before = self.out.commands.len();
        let mut fed = false;
        for (field, child) in fields(node) {
            match (field, child.kind()) {
                (Some("body"), _) => self.statement(child, depth + 1),
                (_, "file_redirect" | "heredoc_redirect" | "herestring_redirect") => {
                    self.redirect(child, depth + 1, &mut fed);
                }
                (_, "comment") => {}
                (_, _) if !child.is_named() => {}
                (_, other) => {
                    self.find(FindingKind::Unsupported(other.to_string()), child);
                    self.scan(child, depth + 1);
                }
            }
        }
        if fed {
            // Everything in the body may read the document; which command actually does is
            // not worth guessing.
            for raw in self.out.commands.iter_mut().skip(before) {
                raw.fed_script = true;
            }
        }
    }

    fn redirect(&mut self, node: Node<'_>, depth: usize, fed: &mut bool) {
        if self.deep(depth, node) {
            return;
        }
        match node.kind() {
            "file_redirect" => *fed |= self.file_redirect(node, depth),
            "herestring_redirect" => {
                *fed = true;
                for child in named_children(node) {
                    if child.kind() != "file_descriptor" {
                        self.word(child, depth + 1);
                    }
                }
            }
            "heredoc_redirect" => {
                *fed = true;
                let children = named_children(node);
                self.heredocs.push(Heredoc {
                    start: node.start_byte(),
                    strip_tabs: has_token(node, &["<<-"]),
                    word: children
                        .iter()
                        .find(|c| c.kind() == "heredoc_start")
                        .map(|c| self.text(*c).to_string())
                        .unwrap_or_default(),
                    word_start: children
                        .iter()
                        .find(|c| c.kind() == "heredoc_start")
                        .map_or(0, |c| c.start_byte()),
                    parser_end: children
                        .iter()
                        .find(|c| c.kind() == "heredoc_end")
                        .map(|c| c.end_byte()),
                });
                // `<<'EOF'`, `<<"EOF"` and `<<\EOF` keep the body literal.
                let expands = named_children(node)
                    .iter()
                    .find(|c| c.kind() == "heredoc_start")
                    .is_some_and(|start| !self.text(*start).contains(['\'', '"', '\\']));
                for (field, child) in fields(node) {
                    match (field, child.kind()) {
                        (_, "heredoc_start" | "heredoc_end" | "file_descriptor") => {}
                        (_, "heredoc_body") => self.heredoc_body(child, depth + 1, expands),
                        (Some("redirect"), _) => self.redirect(child, depth + 1, fed),
                        (Some("argument"), _) => {
                            self.word(child, depth + 1);
                        }
                        (_, _) if !child.is_named() => {}
                        _ => self.statement(child, depth + 1),
                    }
                }
            }
            other => {
                self.find(FindingKind::Unsupported(other.to_string()), node);
                self.scan(node, depth);
            }
        }
    }

    fn heredoc_body(&mut self, node: Node<'_>, depth: usize, expands: bool) {
        let text = self.text(node);
        if expands && (text.contains('`') || text.contains("$[")) {
            // The parser leaves backquotes in a body as text; bash runs them.
            self.find(FindingKind::CommandSubstitution, node);
        }
        for child in named_children(node) {
            if child.kind() != "heredoc_content" {
                self.word(child, depth + 1);
            }
        }
    }

    /// Returns whether the redirection feeds the command's standard input (`sh < script`).
    fn file_redirect(&mut self, node: Node<'_>, depth: usize) -> bool {
        let mut operator = "";
        let mut parts = Vec::new();
        for (field, child) in fields(node) {
            match field {
                Some("destination") => parts.push(self.word(child, depth + 1)),
                Some("descriptor") => {}
                _ if !child.is_named() => operator = child.kind(),
                _ => {
                    self.find(FindingKind::Unsupported(child.kind().to_string()), child);
                }
            }
        }
        let target = Word::join(parts);
        let is_fd = target.literal
            && !target.text.is_empty()
            && (target.text == "-" || target.text.bytes().all(|b| b.is_ascii_digit()));
        match operator {
            "<" => {
                self.out.reads.push(target);
                return true;
            }
            "<&" => return true,
            "<&-" | ">&-" => {}
            ">&" if is_fd => {}
            ">" | ">>" | "&>" | "&>>" | ">|" | ">&" => {
                if !target.is_harmless_sink() {
                    // The statement reads better in a reason than the bare `> file`.
                    let statement = node
                        .parent()
                        .filter(|p| matches!(p.kind(), "redirected_statement" | "command"))
                        .unwrap_or(node);
                    self.find(FindingKind::WriteRedirect, statement);
                    self.out.writes.push(target);
                }
            }
            other => {
                self.find(
                    FindingKind::Unsupported(format!("redirection {other}")),
                    node,
                );
            }
        }
        false
    }

    fn test(&mut self, node: Node<'_>, depth: usize) {
        let bracket = node.child(0).map(|c| c.kind()).unwrap_or("[");
        self.out.commands.push(RawCommand {
            source: self.text(node).to_string(),
            words: vec![Word::literal(bracket)],
            ..RawCommand::default()
        });
        let findings_before = self.out.findings.len();
        let dynamic_before = self.dynamic_test_words;
        if bracket == "[" && has_token(node, &["<", ">", ">>", "<<", "&>", ">&", "<&", ">|"]) {
            self.find(FindingKind::RedirectInTest, node);
        }
        let at = self.out.commands.len() - 1;
        let outer = self.test_command.replace(at);
        for child in named_children(node) {
            self.test_expression(child, depth + 1);
        }
        self.test_command = outer;
        // In `[ ]` an expanded word can be the operator: `[ "$_" 'a[$(cmd)]' ]` after
        // `echo -v` is `-v`, whose array subscript runs cmd. `[[ ]]` parses operators first.
        let dynamic = self.dynamic_test_words > dynamic_before;
        if bracket == "[" && dynamic && self.out.findings.len() == findings_before {
            self.find(FindingKind::Arithmetic, node);
        }
    }

    fn test_expression(&mut self, node: Node<'_>, depth: usize) {
        if self.deep(depth, node) {
            return;
        }
        match node.kind() {
            "binary_expression" | "unary_expression" | "parenthesized_expression" => {
                let operator = node
                    .child_by_field_name("operator")
                    .map(|op| self.text(op))
                    .unwrap_or("");
                let operands: Vec<Node<'_>> = named_children(node)
                    .into_iter()
                    .filter(|c| c.kind() != "test_operator")
                    .collect();
                if operator == "-v" || operator == "-R" {
                    self.find(FindingKind::Arithmetic, node);
                }
                if super::readonly::FILE_TESTS.contains(&operator) {
                    // In the order written: `-e path`, `left -nt right`.
                    let mut words: Vec<Word> = operands
                        .iter()
                        .map(|op| self.word(*op, depth + 1))
                        .collect();
                    let at = usize::from(node.kind() == "binary_expression").min(words.len());
                    words.insert(at, Word::literal(operator));
                    if let Some(command) =
                        self.test_command.and_then(|i| self.out.commands.get_mut(i))
                    {
                        command.words.extend(words);
                    }
                }
                if ARITHMETIC_TESTS.contains(&operator) {
                    let plain_numbers = operands.iter().all(|op| {
                        let word = self.word(*op, depth + 1);
                        if !word.literal {
                            self.dynamic_test_words += 1;
                        }
                        word.literal && is_integer(&word.text)
                    });
                    if !plain_numbers {
                        self.find(FindingKind::Arithmetic, node);
                    }
                    return;
                }
                for operand in operands {
                    self.test_expression(operand, depth + 1);
                }
            }
            "test_operator" => {}
            "word"
            | "string"
            | "raw_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "number"
            | "command_substitution"
            | "regex"
            | "extglob_pattern"
            | "ansi_c_string" => {
                if !self.word(node, depth + 1).literal {
                    self.dynamic_test_words += 1;
                }
            }
            other => {
                self.find(FindingKind::Unsupported(other.to_string()), node);
                self.scan(node, depth);
            }
        }
    }

    /// Resolves a word-like node; substitutions inside it become commands and findings.
    fn word(&mut self, node: Node<'_>, depth: usize) -> Word {
        let raw = self.text(node);
        if self.deep(depth, node) {
            return Word::dynamic(raw);
        }
        if !node.is_named() {
            return Word::literal(raw);
        }
        // Leaves the parser does not split further can still hold what bash expands
        // (`[[ x =~ <(cmd) ]]`, `$[..]`).
        if matches!(node.kind(), "word" | "regex" | "extglob_pattern") && expands_inside(raw) {
            self.find(
                FindingKind::Unsupported("an expansion the parser kept as plain text".into()),
                node,
            );
        }
        match node.kind() {
            "word" => Word::unquoted(raw),
            "number" => {
                if node.named_child_count() == 0 {
                    Word::unquoted(raw)
                } else {
                    self.scan(node, depth);
                    Word::dynamic(raw)
                }
            }
            "raw_string" => {
                let inner = raw
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(raw);
                Word::quoted(inner.to_string())
            }
            "string" => self.double_quoted(node, depth),
            "concatenation" => {
                let parts = named_children(node)
                    .into_iter()
                    .map(|c| self.word(c, depth + 1))
                    .collect();
                Word::join(parts)
            }
            "simple_expansion" => Word::dynamic(raw),
            "expansion" => {
                self.expansion(node, depth);
                Word::dynamic(raw)
            }
            "command_substitution" => {
                self.find(FindingKind::CommandSubstitution, node);
                self.scan(node, depth);
                Word::dynamic(raw)
            }
            "process_substitution" => {
                self.find(FindingKind::ProcessSubstitution, node);
                self.scan(node, depth);
                Word::dynamic(raw)
            }
            "arithmetic_expansion" => {
                self.find(FindingKind::Arithmetic, node);
                self.scan(node, depth);
                Word::dynamic(raw)
            }
            "ansi_c_string"
            | "translated_string"
            | "brace_expression"
            | "array"
            | "regex"
            | "extglob_pattern"
            | "variable_name"
            | "special_variable_name" => {
                self.scan(node, depth);
                Word::dynamic(raw)
            }
            other => {
                self.find(FindingKind::Unsupported(other.to_string()), node);
                self.scan(node, depth);
                Word::dynamic(raw)
            }
        }
    }

    fn double_quoted(&mut self, node: Node<'_>, depth: usize) -> Word {
        let mut parts = Vec::new();
        for child in named_children(node) {
            if child.kind() == "string_content" {
                parts.push(Word::quoted(unescape_double_quoted(self.text(child))));
            } else {
                let mut inner = self.word(child, depth + 1);
                // Inside double quotes nothing is split or globbed.
                inner.glob = false;
                parts.push(inner);
            }
        }
        let mut word = Word::join(parts);
        word.bare = false;
        word
    }

    /// `${...}`: plain reads are fine; assignments, indirection, transformations and
    /// subscripts (arithmetic) are findings.
    fn expansion(&mut self, node: Node<'_>, depth: usize) {
        // The parser leaves some operands as text (`${x:+`cmd`}`, `${x/a/`cmd`}`); bash
        // expands them.
        if self.text(node).contains('`') || self.text(node).contains("$(") {
            self.find(FindingKind::CommandSubstitution, node);
        }
        let mut parameter_seen = false;
        for (field, child) in fields(node) {
            if field == Some("operator") {
                match self.text(child) {
                    "=" | ":=" => self.find(FindingKind::Assignment, node),
                    "!" | "@" => self.find(
                        FindingKind::Unsupported("indirect or transforming expansion".into()),
                        node,
                    ),
                    _ => {}
                }
                continue;
            }
            match child.kind() {
                "variable_name" | "special_variable_name" if !parameter_seen => {
                    parameter_seen = true;
                }
                // A name after the parameter is an operand evaluated as arithmetic
                // (`${PWD:_}`), where an array subscript in its value runs commands.
                "variable_name" | "special_variable_name" => {
                    self.find(FindingKind::Arithmetic, child);
                }
                // `${x#$(cmd)}`: the pattern is expanded, and the parser keeps it as text.
                "regex" if !is_plain_pattern(self.text(child)) => self.find(
                    FindingKind::Unsupported("a substitution inside a `${...}` pattern".into()),
                    child,
                ),
                "regex" => {}
                "subscript" => self.find(FindingKind::Arithmetic, child),
                _ if !child.is_named() => {}
                _ => {
                    self.word(child, depth + 1);
                    // The parser keeps `$[..]`, `<(..)` and line continuations in operands
                    // as plain words; bash expands them.
                    if !is_plain_operand(self.text(child)) {
                        self.find(
                            FindingKind::Unsupported(
                                "a `${...}` operand that is not plain text".into(),
                            ),
                            child,
                        );
                    }
                }
            }
        }
    }
}

/// Whether raw text holds the start of a substitution or arithmetic expansion.
fn expands_inside(raw: &str) -> bool {
    ["$(", "`", "<(", ">(", "$["]
        .iter()
        .any(|start| raw.contains(start))
}

/// Text with nothing bash would expand, substitute or continue.
fn is_plain_operand(text: &str) -> bool {
    !text.contains([
        '$', '`', '<', '>', '(', ')', '\\', '{', '}', '\n', '"', '\'',
    ])
}

/// A `${x#pattern}` pattern with nothing bash would expand or substitute in it (globs are
/// fine: they only match).
fn is_plain_pattern(text: &str) -> bool {
    !(text.contains(['$', '`'])
        || text.contains("<(")
        || text.contains(">(")
        || text.contains("\\\n"))
}

/// Whether an anonymous token of one of `kinds` appears anywhere below `node`.
fn has_token(node: Node<'_>, kinds: &[&str]) -> bool {
    let mut cursor = node.walk();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if !n.is_named() && kinds.contains(&n.kind()) {
            return true;
        }
        stack.extend(n.children(&mut cursor));
    }
    false
}

fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and a newline.
fn unescape_double_quoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}
