//! Keeps the history valid before every request. A tool_use without its tool_result (after
//! Ctrl-C, a crash or a resume) would make every later API call fail, so each one gets a
//! synthesised result; stray results and empty or same-role neighbours are folded away.

use std::collections::HashSet;

use crate::api::types::{ContentBlock, Message, Role};

pub(crate) const INTERRUPTED: &str = "The tool call was interrupted before it finished (cancelled by the user or the session ended); its result is unknown. Check the current state before relying on it.";

/// Repair `history` in place; returns how many tool results were synthesised.
pub(crate) fn repair(history: &mut Vec<Message>) -> usize {
    history.retain(|m| !m.content.is_empty());
    merge_same_role(history);
    let mut synthesised = 0;
    let mut i = 0;
    while i < history.len() {
        if history[i].role != Role::Assistant {
            i += 1;
            continue;
        }
        // Two merged messages can repeat a call id; the API takes each id once.
        let mut seen = HashSet::new();
        history[i].content.retain(|b| match b {
            ContentBlock::ToolUse { id, .. } => seen.insert(id.clone()),
            _ => true,
        });
        let wanted: Vec<String> = history[i]
            .tool_uses()
            .map(|(id, _, _)| id.to_string())
            .collect();
        let next_is_user = history.get(i + 1).is_some_and(|m| m.role == Role::User);
        if !next_is_user {
            if wanted.is_empty() {
                i += 1;
                continue;
            }
            history.insert(
                i + 1,
                Message {
                    role: Role::User,
                    content: Vec::new(),
                },
            );
        }
        let wanted_set: HashSet<&str> = wanted.iter().map(String::as_str).collect();
        let next = &mut history[i + 1];
        next.content.retain(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => {
                wanted_set.contains(tool_use_id.as_str())
            }
            _ => true,
        });
        let have: HashSet<String> = next
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                _ => None,
            })
            .collect();
        // Results must come first in the user message, in tool_use order.
        let mut results: Vec<ContentBlock> = Vec::new();
        for id in &wanted {
            if have.contains(id) {
                if let Some(pos) = next.content.iter().position(
                    |b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == id),
                ) {
                    results.push(next.content.remove(pos));
                }
            } else {
                results.push(ContentBlock::tool_result(id.clone(), INTERRUPTED, true));
                synthesised += 1;
            }
        }
        // What is left of the results are duplicates: the API takes one result per call.
        next.content
            .retain(|b| !matches!(b, ContentBlock::ToolResult { .. }));
        results.append(&mut next.content);
        next.content = results;
        i += 1;
    }
    // A user message left holding only results for no tool_use at all is dropped.
    strip_orphan_results(history);
    history.retain(|m| !m.content.is_empty());
    merge_same_role(history);
    // Stripping may have emptied the opening user message.
    if history.first().is_some_and(|m| m.role == Role::Assistant) {
        history.insert(0, Message::user_text("(conversation resumed)"));
    }
    synthesised
}

/// Whether `history` is already what `repair` makes of it: no empty messages, roles that
/// alternate starting with the user, and after every assistant message the results of its
/// tool calls, first and in order, and no others.
#[cfg(test)]
pub(crate) fn is_valid(history: &[Message]) -> bool {
    is_valid_from(history, 0)
}

/// [`is_valid`] for a history whose messages before `from` are known to be valid among
/// themselves: only the messages from `from` on (and their link to the one before) are checked,
/// so checking a conversation that only grew costs what was added.
pub(crate) fn is_valid_from(history: &[Message], from: usize) -> bool {
    if from == 0 && history.first().is_some_and(|m| m.role == Role::Assistant) {
        return false;
    }
    for (i, m) in history.iter().enumerate().skip(from) {
        if m.content.is_empty() || history.get(i + 1).is_some_and(|n| n.role == m.role) {
            return false;
        }
        let wanted: Vec<&str> = match i.checked_sub(1).map(|p| &history[p]) {
            Some(prev) if m.role == Role::User => prev.tool_uses().map(|(id, _, _)| id).collect(),
            _ => Vec::new(),
        };
        let mut ids: Vec<&str> = m.tool_uses().map(|(id, _, _)| id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return false;
        }
        let results: Vec<(usize, &str)> = m
            .content
            .iter()
            .enumerate()
            .filter_map(|(at, b)| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some((at, tool_use_id.as_str())),
                _ => None,
            })
            .collect();
        let in_order = results.len() == wanted.len()
            && results
                .iter()
                .zip(&wanted)
                .enumerate()
                .all(|(k, ((at, id), want))| *at == k && id == want);
        if !in_order {
            return false;
        }
        if m.role == Role::Assistant
            && m.tool_uses().next().is_some()
            && history.get(i + 1).is_none()
        {
            return false;
        }
    }
    true
}

fn strip_orphan_results(history: &mut [Message]) {
    for i in 0..history.len() {
        if history[i].role != Role::User {
            continue;
        }
        let allowed: HashSet<String> = if i > 0 && history[i - 1].role == Role::Assistant {
            history[i - 1]
                .tool_uses()
                .map(|(id, _, _)| id.to_string())
                .collect()
        } else {
            HashSet::new()
        };
        history[i].content.retain(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => allowed.contains(tool_use_id),
            _ => true,
        });
    }
}

fn merge_same_role(history: &mut Vec<Message>) {
    let mut merged: Vec<Message> = Vec::with_capacity(history.len());
    for m in history.drain(..) {
        match merged.last_mut() {
            Some(last) if last.role == m.role => last.content.extend(m.content),
            _ => merged.push(m),
        }
    }
    *history = merged;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool_use(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: json!({}),
        }
    }

    #[test]
    fn missing_results_are_synthesised_in_order() {
        let mut h = vec![
            Message::user_text("go"),
            Message::assistant(vec![ContentBlock::text("ok"), tool_use("a"), tool_use("b")]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result("b", "done", false)],
            },
        ];
        assert_eq!(repair(&mut h), 1);
        let ids: Vec<_> = h[2]
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::ToolResult {
                    tool_use_id,
                    is_error,
                    ..
                } => (tool_use_id.as_str(), *is_error),
                _ => panic!(),
            })
            .collect();
        assert_eq!(ids, vec![("a", true), ("b", false)]);
    }

    #[test]
    fn trailing_tool_use_gets_a_result_and_a_new_prompt_merges() {
        let mut h = vec![
            Message::user_text("go"),
            Message::assistant(vec![tool_use("a")]),
        ];
        repair(&mut h);
        assert_eq!(h.len(), 3);
        h.push(Message::user_text("next"));
        repair(&mut h);
        assert_eq!(h.len(), 3);
        assert!(matches!(h[2].content[0], ContentBlock::ToolResult { .. }));
        assert_eq!(h[2].content[1], ContentBlock::text("next"));
    }

    #[test]
    fn orphan_results_and_empty_messages_are_dropped() {
        let mut h = vec![
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result("zz", "x", false)],
            },
            Message::user_text("hi"),
            Message::assistant(vec![]),
            Message::assistant(vec![ContentBlock::text("hello")]),
        ];
        repair(&mut h);
        assert_eq!(
            h,
            vec![
                Message::user_text("hi"),
                Message::assistant(vec![ContentBlock::text("hello")])
            ]
        );
    }

    mod property {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::json;

        fn block() -> impl Strategy<Value = (u8, usize)> {
            (0u8..3, 0usize..3)
        }

        fn history() -> impl Strategy<Value = Vec<Message>> {
            let message = (any::<bool>(), proptest::collection::vec(block(), 0..4));
            proptest::collection::vec(message, 0..7).prop_map(|raw| {
                raw.into_iter()
                    .map(|(assistant, blocks)| {
                        let content = blocks
                            .into_iter()
                            .filter_map(|(kind, id)| {
                                let id = ["a", "b", "c"][id].to_string();
                                match kind {
                                    0 => Some(ContentBlock::text("t")),
                                    1 if assistant => Some(ContentBlock::ToolUse {
                                        id,
                                        name: "Read".into(),
                                        input: json!({}),
                                    }),
                                    2 if !assistant => {
                                        Some(ContentBlock::tool_result(id, "r", false))
                                    }
                                    _ => None,
                                }
                            })
                            .collect();
                        Message {
                            role: if assistant {
                                Role::Assistant
                            } else {
                                Role::User
                            },
                            content,
                        }
                    })
                    .collect()
            })
        }

        proptest! {
            #[test]
            fn repair_gives_a_valid_history_and_leaves_a_valid_one_alone(h in history()) {
                let mut repaired = h.clone();
                repair(&mut repaired);
                prop_assert!(is_valid(&repaired), "{repaired:?}");
                if is_valid(&h) {
                    prop_assert_eq!(&repaired, &h);
                }
                let mut again = repaired.clone();
                repair(&mut again);
                prop_assert_eq!(&again, &repaired);
                // Checking only from some point on agrees when the part before is valid.
                for from in 0..=repaired.len() {
                    let mut longer = repaired.clone();
                    longer.extend(h.iter().cloned());
                    if is_valid(&longer[..from]) {
                        prop_assert_eq!(is_valid_from(&longer, from.saturating_sub(1)), is_valid(&longer));
                    }
                }
            }
        }
    }

    #[test]
    fn a_valid_history_is_untouched() {
        let mut h = vec![
            Message::user_text("go"),
            Message::assistant(vec![tool_use("a")]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result("a", "r", false)],
            },
            Message::assistant(vec![ContentBlock::text("done")]),
        ];
        let before = h.clone();
        assert_eq!(repair(&mut h), 0);
        assert_eq!(h, before);
    }
}
