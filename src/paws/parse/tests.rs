use super::*;

fn changes(reply: &str) -> Vec<Block> {
    match parse(reply.as_bytes()).unwrap() {
        Reply::Changes { blocks, .. } => blocks,
        other => panic!("{other:?}"),
    }
}

fn full(path: &str, content: &str, machine: bool) -> Block {
    Block::Full {
        path: path.into(),
        content: content.into(),
        binary: false,
        machine,
    }
}

#[test]
fn a_reply_with_prose_fences_and_crlf() {
    let reply = "Sure! Here you go:\r\n\r\n```\r\n🐕 --- DOGS_START_FILE: src/a.py ---\r\n```python\r\nprint(1)\r\n```\r\n🐕 --- DOGS_END_FILE: src/a.py ---\r\n```\r\nHope it helps.\r\n";
    assert_eq!(changes(reply), vec![full("src/a.py", "print(1)", false)]);
}

#[test]
fn markers_are_read_as_leniently_as_paws_reads_them() {
    let reply =
        "  🐕 ----- dogs_start_file :  x.txt  -----  \nhi\n🐕 --- DOGS_END_FILE: x.txt ---\n";
    assert_eq!(changes(reply), vec![full("x.txt", "hi", false)]);
}

#[test]
fn markers_without_their_emoji_are_read_and_keep_the_base64_hint() {
    let reply = "--- DOGS_START_FILE: img.bin (Content:Base64) ---\naGk=\n--- DOGS_END_FILE: img.bin (Content:Base64) ---\n  --- cats_start_file: b.txt ---\nyo\n--- CATS_END_FILE: b.txt ---\n";
    let got = changes(reply);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        got[0],
        Block::Full {
            path: "img.bin".into(),
            content: b"hi".to_vec(),
            binary: true,
            machine: false,
        }
    );
    assert_eq!(got[1].path(), b"b.txt");
    // Neither a line of dashes nor one with text before the dashes is a marker.
    for not in [
        "---",
        "--- DOGS_START_FILE: ---",
        "note --- DOGS_START_FILE: a ---",
    ] {
        assert!(
            crate::paws::format::marker(not.as_bytes()).is_none(),
            "{not}"
        );
    }
}

#[test]
fn a_cats_bundle_skips_what_precedes_its_header() {
    // As PAWS's cats prepends a persona and its system prompt, examples and all.
    let reply = "\n--- START PERSONA ---\ninstructions\n🐕 --- DOGS_START_FILE: example.py ---\nx\n🐕 --- DOGS_END_FILE: example.py ---\n--- END PERSONA ---\n\n--- END PREPENDED INSTRUCTIONS ---\nThe following content is the Cats Bundle.\n# Cats Bundle\n# Format: FULL\n\n🐈 --- CATS_START_FILE: a.txt ---\n```\nreal\n\n```\n🐈 --- CATS_END_FILE: a.txt ---\n";
    assert_eq!(changes(reply), vec![full("a.txt", "real\n", true)]);
    let bare = "# Cats Bundle\n\n🐈 --- CATS_START_FILE: a.txt ---\n```\nreal\n\n```\n🐈 --- CATS_END_FILE: a.txt ---\n";
    assert_eq!(changes(bare), vec![full("a.txt", "real\n", true)]);
}

#[test]
fn a_bundle_shown_inside_a_changed_file_is_its_content() {
    let reply = "🐕 --- DOGS_START_FILE: other.txt ---\nnew\n🐕 --- DOGS_END_FILE: other.txt ---\n\n🐕 --- DOGS_START_FILE: README.md ---\n````markdown\nA bundle looks like this:\n\n```\n# Cats Bundle\n\n🐈 --- CATS_START_FILE: src/a.py ---\n```\n````\n🐕 --- DOGS_END_FILE: README.md ---\n";
    let got = changes(reply);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], full("other.txt", "new", false));
    assert_eq!(got[1].path(), b"README.md");
}

#[test]
fn changes_followed_by_a_quoted_bundle_are_refused_not_half_read() {
    let reply = "🐕 --- DOGS_START_FILE: a.txt ---\n```\nnew\n```\n🐕 --- DOGS_END_FILE: a.txt ---\n\nThe bundle you sent was:\n\n# Cats Bundle\n\n🐈 --- CATS_START_FILE: a.txt ---\n```\nold\n\n```\n🐈 --- CATS_END_FILE: a.txt ---\n";
    let e = parse(reply.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("cannot be told"), "{e}");
}

#[test]
fn a_marker_like_line_inside_a_fenced_file_is_content() {
    let reply = "🐈 --- CATS_START_FILE: doc.md ---\n```\n🐈 --- CATS_END_FILE: doc.md ---\nafter\n```\n🐈 --- CATS_END_FILE: doc.md ---\n";
    assert_eq!(
        changes(reply),
        vec![full(
            "doc.md",
            "🐈 --- CATS_END_FILE: doc.md ---\nafter",
            true
        )]
    );
}

#[test]
fn an_unclosed_block_and_a_stray_end_are_errors() {
    let cut = "🐕 --- DOGS_START_FILE: a.txt ---\nline\n";
    assert!(
        parse(cut.as_bytes())
            .unwrap_err()
            .message
            .contains("never closed")
    );
    let two = "🐕 --- DOGS_START_FILE: a.txt ---\nx\n🐕 --- DOGS_START_FILE: b.txt ---\ny\n🐕 --- DOGS_END_FILE: b.txt ---\n";
    assert!(parse(two.as_bytes()).is_err());
    let stray = "🐕 --- DOGS_END_FILE: a.txt ---\n";
    assert!(parse(stray.as_bytes()).is_err());
}

#[test]
fn line_commands_take_the_content_that_follows_them() {
    let reply = "🐕 --- DOGS_START_FILE: m.py ---\n@@ PAWS_CMD REPLACE_LINES(2, 3) @@\nnew two\nnew three\n\n@@ PAWS_CMD DELETE_LINES(5, 5) @@\n@@ PAWS_CMD INSERT_AFTER_LINE(7) @@\nseven and a half\n🐕 --- DOGS_END_FILE: m.py ---\n";
    let lines = |s: &str| s.lines().map(|l| l.as_bytes().to_vec()).collect::<Vec<_>>();
    assert_eq!(
        changes(reply),
        vec![Block::Lines {
            path: b"m.py".to_vec(),
            commands: vec![
                LineCommand::Replace {
                    from: 2,
                    to: 3,
                    content: lines("new two\nnew three"),
                },
                LineCommand::Delete { from: 5, to: 5 },
                LineCommand::InsertAfter {
                    line: 7,
                    content: lines("seven and a half"),
                },
            ],
        }]
    );
}

#[test]
fn delete_and_request_context() {
    let reply = "🐕 --- DOGS_START_FILE: old.txt ---\n@@ PAWS_CMD DELETE_FILE() @@\n🐕 --- DOGS_END_FILE: old.txt ---\n";
    assert_eq!(
        changes(reply),
        vec![Block::Delete {
            path: b"old.txt".to_vec()
        }]
    );
    let ask = "I need more.\n🐕 --- DOGS_START_FILE: x ---\n@@ PAWS_CMD REQUEST_CONTEXT(reason=\"need the tests\") @@\n🐕 --- DOGS_END_FILE: x ---\n";
    assert_eq!(
        parse(ask.as_bytes()).unwrap(),
        Reply::RequestContext("reason=\"need the tests\"".into())
    );
}

#[test]
fn search_replace_blocks_name_their_file_above_the_fence() {
    let reply = "Change this:\n\nsrc/lib.rs\n```rust\n<<<<<<< SEARCH\nfn a() {}\n=======\nfn a() { b() }\n>>>>>>> REPLACE\n```\n";
    assert_eq!(
        changes(reply),
        vec![Block::SearchReplace {
            path: b"src/lib.rs".to_vec(),
            search: vec![b"fn a() {}".to_vec()],
            replace: vec![b"fn a() { b() }".to_vec()],
        }]
    );
    let unnamed = "Here:\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n";
    assert!(parse(unnamed.as_bytes()).is_err());
    let cut = "a.txt\n<<<<<<< SEARCH\nx\n=======\ny\n";
    assert!(parse(cut.as_bytes()).is_err());
}

#[test]
fn unified_diffs_per_file() {
    let reply = "```diff\n--- a/src/x.txt\n+++ b/src/x.txt\n@@ -1,4 +1,4 @@\n one\n-two\n+TWO\n\n three\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+hello\n```\n";
    let blocks = changes(reply);
    assert_eq!(blocks.len(), 2);
    let Block::Diff { old, new, hunks } = &blocks[0] else {
        panic!("{blocks:?}")
    };
    assert_eq!(old.as_deref(), Some(&b"src/x.txt"[..]));
    assert_eq!(new.as_deref(), Some(&b"src/x.txt"[..]));
    assert_eq!(
        hunks[0].old,
        vec![
            b"one".to_vec(),
            b"two".to_vec(),
            b"".to_vec(),
            b"three".to_vec()
        ]
    );
    assert_eq!(blocks[1].path(), b"new.txt");
}

#[test]
fn manifest_lines_are_collected() {
    let sha = "ab".repeat(32);
    let blake = "cd".repeat(32);
    let reply = format!(
        "# Cats Bundle\n# Format: FULL\n# Manifest: sha256={sha} a b.txt\n# Manifest: blake3={blake} c.txt\n# Manifest: md5=abc d.txt\n\n"
    );
    assert_eq!(
        parse(reply.as_bytes()).unwrap(),
        Reply::Changes {
            blocks: vec![],
            manifest: vec![
                (b"a b.txt".to_vec(), format!("sha256={sha}")),
                (b"c.txt".to_vec(), format!("blake3={blake}")),
            ],
            front: None,
        }
    );
}

#[test]
fn a_removed_line_that_reads_like_a_file_header_is_content() {
    let reply = "--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,3 @@\n select 1;\n--- old comment\n+-- new comment\n select 2;\n";
    let blocks = changes(reply);
    let Block::Diff { hunks, .. } = &blocks[0] else {
        panic!("{blocks:?}")
    };
    assert_eq!(hunks[0].old[1], b"-- old comment");
    assert_eq!(hunks[0].new[1], b"-- new comment");
    let wrong_counts = "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\n+b\n c\n-d\n";
    assert!(parse(wrong_counts.as_bytes()).is_err());
}

#[test]
fn a_paws_command_without_parentheses_is_still_a_command() {
    let reply = "🐕 --- DOGS_START_FILE: old.txt ---\n@@ PAWS_CMD DELETE_FILE @@\n🐕 --- DOGS_END_FILE: old.txt ---\n";
    assert_eq!(
        changes(reply),
        vec![Block::Delete {
            path: b"old.txt".to_vec()
        }]
    );
    let unknown =
        "🐕 --- DOGS_START_FILE: a ---\n@@ PAWS_CMD FROB @@\n🐕 --- DOGS_END_FILE: a ---\n";
    assert!(parse(unknown.as_bytes()).is_err());
}

#[test]
fn prose_and_headings_above_a_search_block() {
    let reply = "### src/a.rs\n```rust\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```\n";
    assert_eq!(changes(reply)[0].path(), b"src/a.rs");
    let prose = "Create src/new.rs\n<<<<<<< SEARCH\n=======\ny\n>>>>>>> REPLACE\n";
    assert!(parse(prose.as_bytes()).is_err());
    let two_dividers = "a.md\n<<<<<<< SEARCH\nTitle\n=======\nx\n=======\n>>>>>>> REPLACE\n";
    assert!(parse(two_dividers.as_bytes()).is_err());
}

#[test]
fn front_matter_is_never_content_and_lines_keep_their_numbers() {
    let reply = "---\nversion: \"1.0\"\ntask_description: |\n  🐕 --- DOGS_START_FILE: trap.txt ---\n  x\n  🐕 --- DOGS_END_FILE: trap.txt ---\n  # Manifest: sha256=abc trap.txt\n---\n🐕 --- DOGS_START_FILE: a.txt ---\nline\n";
    let err = parse(reply.as_bytes()).unwrap_err();
    assert_eq!(err.line, 9, "{err}");
    let whole = format!("{reply}🐕 --- DOGS_END_FILE: a.txt ---\n");
    let Reply::Changes {
        blocks,
        manifest,
        front,
    } = parse(whole.as_bytes()).unwrap()
    else {
        panic!()
    };
    // A program wrote it: its blocks are exact, as 🐈 entries are.
    assert_eq!(blocks, vec![full("a.txt", "line", true)]);
    assert!(manifest.is_empty());
    assert_eq!(front.unwrap().version, "1.0");
    // The same lines with no front matter around them are a block.
    let bare = "🐕 --- DOGS_START_FILE: trap.txt ---\nx\n🐕 --- DOGS_END_FILE: trap.txt ---\n";
    assert_eq!(changes(bare), vec![full("trap.txt", "x", false)]);
    let v2 =
        "---\nversion: 2.0\n---\n🐕 --- DOGS_START_FILE: a ---\nx\n🐕 --- DOGS_END_FILE: a ---\n";
    let err = parse(v2.as_bytes()).unwrap_err();
    assert!(err.message.contains("version `2.0`"), "{err}");
}

#[test]
fn markers_of_other_files_inside_a_block_closed_by_its_own_end_are_content() {
    let reply = "🐕 --- DOGS_START_FILE: README.md ---\nAnswer like this:\n🐕 --- DOGS_START_FILE: example.py ---\nprint(1)\n🐕 --- DOGS_END_FILE: example.py ---\nThat is all.\n🐕 --- DOGS_END_FILE: README.md ---\n";
    assert_eq!(
        changes(reply),
        vec![full(
            "README.md",
            "Answer like this:\n🐕 --- DOGS_START_FILE: example.py ---\nprint(1)\n🐕 --- DOGS_END_FILE: example.py ---\nThat is all.",
            false
        )]
    );
    let unclosed = "🐕 --- DOGS_START_FILE: a.txt ---\nx\n🐕 --- DOGS_START_FILE: b.txt ---\ny\n🐕 --- DOGS_END_FILE: b.txt ---\n";
    let error = parse(unclosed.as_bytes()).unwrap_err().message;
    assert!(
        error.contains("a.txt is never closed") && error.contains("b.txt at line 3"),
        "{error}"
    );
}

#[test]
fn a_paws_command_line_down_a_full_file_is_its_text() {
    let reply = "🐕 --- DOGS_START_FILE: docs/paws.md ---\n# Commands\n@@ PAWS_CMD DELETE_FILE() @@\ndeletes the file.\n🐕 --- DOGS_END_FILE: docs/paws.md ---\n";
    assert_eq!(
        changes(reply),
        vec![full(
            "docs/paws.md",
            "# Commands\n@@ PAWS_CMD DELETE_FILE() @@\ndeletes the file.",
            false
        )]
    );
}

#[test]
fn a_fenced_replace_lines_text_is_unwrapped() {
    let reply = "🐕 --- DOGS_START_FILE: m.py ---\n@@ PAWS_CMD REPLACE_LINES(1, 1) @@\n```python\nnew one\n```\n\n🐕 --- DOGS_END_FILE: m.py ---\n";
    assert_eq!(
        changes(reply),
        vec![Block::Lines {
            path: b"m.py".to_vec(),
            commands: vec![LineCommand::Replace {
                from: 1,
                to: 1,
                content: vec![b"new one".to_vec()],
            }],
        }]
    );
}

#[test]
fn lines_split_as_a_byte_split_does() {
    for text in [
        &b""[..],
        b"\n",
        b"a",
        b"a\n",
        b"a\n\nb",
        b"\n\na\r\n",
        b"x\ny\n\n",
    ] {
        let expected: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
        assert_eq!(split_lines(text), expected, "{text:?}");
    }
}

#[test]
fn a_files_lines_are_joined_as_they_were_whether_copied_whole_or_line_by_line() {
    let reply = b"x\nfirst\n\nlast \nafter".as_slice();
    let lines = split_lines(reply);
    assert_eq!(joined(reply, &lines[1..4]), b"first\n\nlast ");
    assert_eq!(joined(reply, &lines[1..2]), b"first");
    assert_eq!(joined(reply, &[]), b"");
    // Lines that are not side by side in the reply (their `\r`s taken off, or not the
    // reply's at all) are joined one by one.
    let crlf = b"a\r\nb\r\n".as_slice();
    let stripped: Vec<&[u8]> = split_lines(crlf)[..2]
        .iter()
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    assert_eq!(joined(crlf, &stripped), b"a\nb");
    assert_eq!(
        joined(reply, &[b"elsewhere".as_slice(), b"too"]),
        b"elsewhere\ntoo"
    );
}

#[test]
fn a_marker_needs_its_closing_dashes_and_only_trailing_blanks_may_follow_them() {
    assert!(marker(b"  \xf0\x9f\x90\x95 --- DOGS_START_FILE: a.txt ---  \r").is_some());
    assert!(marker(b"--- dogs_end_file: a.txt ---").is_some());
    assert!(marker(b"--- DOGS_END_FILE: a.txt --").is_none());
    assert!(marker(b"--- DOGS_END_FILE: a.txt --- and more").is_none());
}
