//! The server's memory: which turn and fault come next, and the log of every request.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::scenario::{Fault, Scenario};
use super::validate::{ApiError, MAX_BODY_BYTES, check_body, check_headers};

/// How many bytes of request bodies the log keeps, newest first: a long session sends its whole
/// history with every request, and the log must not hold all of them.
pub(super) const MAX_LOGGED_BODY_BYTES: usize = 64 << 20;

/// The context window assumed by a `prompt_too_long` fault when the scenario sets no limit.
const DEFAULT_CONTEXT_LIMIT: u64 = 200_000;

/// One request as the server saw it, and what it answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Header names are lowercase; repeated headers are joined with ", ".
    pub headers: BTreeMap<String, String>,
    /// The parsed JSON body; a body that is not JSON is kept as a string, an empty one as null.
    /// Only the newest bodies are kept (see [`MAX_LOGGED_BODY_BYTES`]); older ones become null
    /// with `body_dropped` set.
    pub body: Value,
    /// The size of the body as received.
    #[serde(default)]
    pub(crate) body_bytes: usize,
    #[serde(default)]
    pub(crate) body_dropped: bool,
    pub status: u16,
    /// The scenario turn this request was served, or was aimed at when a fault, an
    /// `expect_text` mismatch or the context limit answered it instead.
    pub turn: Option<usize>,
}

/// What to answer.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    Error {
        error: ApiError,
        retry_after: Option<u64>,
    },
    Turn {
        turn: usize,
        ending: Ending,
    },
}

/// How a turn's response ends.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ending {
    Complete,
    /// After this many SSE events the connection drops.
    CutAfter(usize),
    /// After this many SSE events an `error` event closes the stream.
    ErrorAfter {
        after: usize,
        error: ApiError,
    },
    /// After this many events, one whose data is not JSON; then the rest.
    InvalidJsonAfter(usize),
    /// Every event of this type is left out.
    Without(String),
    /// After this many events the stream goes quiet (apart from pings, if set).
    StallAfter {
        after: usize,
        pings: bool,
    },
    /// After this many events, a line of this many bytes that never ends.
    OversizedAfter {
        after: usize,
        bytes: usize,
    },
}

#[derive(Debug, Default)]
pub(super) struct Ledger {
    next_turn: usize,
    /// Turns with `when_text` served so far.
    routed: Vec<usize>,
    /// Every turn with `when_text`.
    routes: Option<Vec<usize>>,
    faults_used: usize,
    log: Vec<RecordedRequest>,
    /// Body bytes held by the log, and the oldest entry that still holds its body.
    logged_body_bytes: usize,
    oldest_body: usize,
    responses: u64,
}

impl Ledger {
    pub(super) fn requests(&self) -> Vec<RecordedRequest> {
        self.log.clone()
    }

    pub(super) fn body_sizes(&self) -> Vec<usize> {
        self.log.iter().map(|r| r.body_bytes).collect()
    }

    pub(super) fn turns_served(&self) -> usize {
        self.next_turn
    }

    /// Decides the answer to `request`, completes its status and turn, and logs it.
    /// `parse_error` is set when the body was not JSON. Returns the request id to send back.
    pub(super) fn handle(
        &mut self,
        scenario: &Scenario,
        mut request: RecordedRequest,
        parse_error: Option<String>,
        body_len: usize,
    ) -> (Outcome, String) {
        let (outcome, turn) = match validate(&request, parse_error, body_len) {
            Err(error) => (
                Outcome::Error {
                    error,
                    retry_after: None,
                },
                None,
            ),
            Ok(()) => {
                let aimed = (self.next_turn < scenario.turns.len()).then_some(self.next_turn);
                (self.play(scenario, &request, body_len), aimed)
            }
        };
        request.status = match &outcome {
            Outcome::Error { error, .. } => error.status,
            Outcome::Turn { .. } => 200,
        };
        request.turn = turn;
        request.body_bytes = body_len;
        self.log(request);
        self.responses += 1;
        (outcome, format!("req_mock_{:06}", self.responses))
    }

    /// Logs `request`, dropping the oldest bodies beyond the byte budget (never the newest).
    fn log(&mut self, request: RecordedRequest) {
        self.logged_body_bytes += request.body_bytes;
        self.log.push(request);
        while self.logged_body_bytes > MAX_LOGGED_BODY_BYTES
            && self.oldest_body + 1 < self.log.len()
        {
            let old = &mut self.log[self.oldest_body];
            old.body = Value::Null;
            old.body_dropped = true;
            self.logged_body_bytes -= old.body_bytes;
            self.oldest_body += 1;
        }
    }

    /// Answers a valid request from the scenario: the context limit, the current turn's
    /// expectation and faults, then the turn itself.
    fn play(&mut self, scenario: &Scenario, request: &RecordedRequest, body_len: usize) -> Outcome {
        let reject = |error: ApiError| Outcome::Error {
            error,
            retry_after: None,
        };
        let estimate = (body_len / 4) as u64;
        if let Some(limit) = scenario.context_limit_tokens
            && estimate > limit
        {
            return reject(ApiError::prompt_too_long(estimate, limit));
        }
        let model = request
            .body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("");
        if scenario.overloaded_models.iter().any(|m| m == model) {
            return Outcome::Error {
                error: ApiError::for_status(529, None),
                retry_after: None,
            };
        }
        // The turns with `when_text`, found once: a long scenario is not walked per request.
        let routes = self.routes.get_or_insert_with(|| {
            (scenario.turns.iter().enumerate())
                .filter(|(_, t)| t.when_text.is_some())
                .map(|(i, _)| i)
                .collect()
        });
        let routed = routes.iter().copied().find(|i| {
            !self.routed.contains(i)
                && (scenario.turns.get(*i))
                    .and_then(|t| t.when_text.as_ref())
                    .is_some_and(|w| contains_text(&request.body, w))
        });
        if let Some(index) = routed {
            self.routed.push(index);
            return Outcome::Turn {
                turn: index,
                ending: Ending::Complete,
            };
        }
        while scenario
            .turns
            .get(self.next_turn)
            .is_some_and(|t| t.when_text.is_some())
        {
            self.next_turn += 1;
        }
        let index = self.next_turn;
        let Some(turn) = scenario.turns.get(index) else {
            return reject(ApiError::invalid_request(format!(
                "mock scenario exhausted after {index} turns: the client sent a request the scenario did not script"
            )));
        };
        if let Some(expected) = &turn.expect_text
            && !contains_text(&request.body, expected)
        {
            return reject(ApiError::invalid_request(format!(
                "mock scenario turn {index} expected the request to contain {expected:?}, but it does not"
            )));
        }
        let streaming = request.body.get("stream").and_then(Value::as_bool) == Some(true);
        if let Some(fault) = turn.faults.get(self.faults_used) {
            self.faults_used += 1;
            return match fault {
                Fault::Http {
                    status,
                    retry_after,
                    message,
                } => Outcome::Error {
                    error: ApiError::for_status(*status, message.clone()),
                    retry_after: *retry_after,
                },
                Fault::PromptTooLong => {
                    let limit = scenario
                        .context_limit_tokens
                        .unwrap_or(DEFAULT_CONTEXT_LIMIT);
                    reject(ApiError::prompt_too_long(
                        estimate.max(limit + limit / 4),
                        limit,
                    ))
                }
                Fault::Cut {
                    after_events,
                    served,
                } => {
                    if *served || *after_events >= super::sse::event_count(turn) {
                        self.next_turn += 1;
                        self.faults_used = 0;
                    }
                    Outcome::Turn {
                        turn: index,
                        ending: Ending::CutAfter(*after_events),
                    }
                }
                Fault::InvalidJson { after_events } => Outcome::Turn {
                    turn: index,
                    ending: Ending::InvalidJsonAfter(*after_events),
                },
                Fault::DropEvents { event } => Outcome::Turn {
                    turn: index,
                    ending: Ending::Without(event.clone()),
                },
                Fault::Stall {
                    after_events,
                    pings,
                } => Outcome::Turn {
                    turn: index,
                    ending: Ending::StallAfter {
                        after: *after_events,
                        pings: *pings,
                    },
                },
                Fault::OversizedLine {
                    after_events,
                    bytes,
                } => Outcome::Turn {
                    turn: index,
                    ending: Ending::OversizedAfter {
                        after: *after_events,
                        bytes: *bytes,
                    },
                },
                Fault::SseError {
                    after_events,
                    error_type,
                    message,
                } => {
                    let error = ApiError::for_type(error_type, message.clone());
                    if streaming {
                        Outcome::Turn {
                            turn: index,
                            ending: Ending::ErrorAfter {
                                after: *after_events,
                                error,
                            },
                        }
                    } else {
                        reject(error)
                    }
                }
            };
        }
        self.next_turn += 1;
        self.faults_used = 0;
        Outcome::Turn {
            turn: index,
            ending: Ending::Complete,
        }
    }
}

/// The checks the real API makes before it looks at the conversation.
fn validate(
    request: &RecordedRequest,
    parse_error: Option<String>,
    body_len: usize,
) -> Result<(), ApiError> {
    if request.method != "POST" || request.path != "/v1/messages" {
        return Err(ApiError::for_status(404, None));
    }
    if body_len > MAX_BODY_BYTES {
        return Err(ApiError::for_status(413, None));
    }
    check_headers(&request.headers)?;
    if let Some(e) = parse_error {
        return Err(ApiError::invalid_request(format!(
            "The request body is not valid JSON: {e}"
        )));
    }
    check_body(&request.body)
}

/// Whether `needle` is in the body: in any JSON string (so escaping does not matter) or in the
/// serialised JSON itself.
fn contains_text(body: &Value, needle: &str) -> bool {
    fn walk(v: &Value, needle: &str) -> bool {
        match v {
            Value::String(s) => s.contains(needle),
            Value::Array(items) => items.iter().any(|i| walk(i, needle)),
            Value::Object(map) => map
                .iter()
                .any(|(k, v)| k.contains(needle) || walk(v, needle)),
            _ => false,
        }
    }
    walk(body, needle) || body.to_string().contains(needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::scenario::Turn;
    use serde_json::json;

    fn request(body: Value) -> RecordedRequest {
        let headers = [("x-api-key", "k"), ("anthropic-version", "2023-06-01")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RecordedRequest {
            method: "POST".into(),
            path: "/v1/messages".into(),
            query: None,
            headers,
            body,
            body_bytes: 0,
            body_dropped: false,
            status: 0,
            turn: None,
        }
    }

    fn valid(text: &str) -> RecordedRequest {
        request(json!({"model": "m", "max_tokens": 10, "stream": true,
            "messages": [{"role": "user", "content": text}]}))
    }

    fn run(ledger: &mut Ledger, s: &Scenario, r: RecordedRequest) -> Outcome {
        let len = r.body.to_string().len();
        ledger.handle(s, r, None, len).0
    }

    #[test]
    fn faults_come_first_then_the_turn_then_exhaustion() {
        let mut turn = Turn::text("hi");
        turn.faults = vec![
            Fault::Http {
                status: 529,
                retry_after: None,
                message: None,
            },
            Fault::Cut {
                after_events: 2,
                served: false,
            },
        ];
        let s = Scenario::new(vec![turn]);
        let mut l = Ledger::default();
        assert!(
            matches!(run(&mut l, &s, valid("a")), Outcome::Error { error, .. } if error.status == 529)
        );
        assert_eq!(
            run(&mut l, &s, valid("a")),
            Outcome::Turn {
                turn: 0,
                ending: Ending::CutAfter(2)
            }
        );
        assert_eq!(l.turns_served(), 0);
        assert_eq!(
            run(&mut l, &s, valid("a")),
            Outcome::Turn {
                turn: 0,
                ending: Ending::Complete
            }
        );
        assert_eq!(l.turns_served(), 1);
        let Outcome::Error { error, .. } = run(&mut l, &s, valid("a")) else {
            panic!("expected exhaustion")
        };
        assert!(
            error
                .message
                .starts_with("mock scenario exhausted after 1 turns")
        );
        let log = l.requests();
        assert_eq!(
            log.iter().map(|r| (r.status, r.turn)).collect::<Vec<_>>(),
            [(529, Some(0)), (200, Some(0)), (200, Some(0)), (400, None)]
        );
    }

    #[test]
    fn invalid_requests_consume_neither_turns_nor_faults() {
        let mut turn = Turn::text("hi");
        turn.faults = vec![Fault::PromptTooLong];
        let s = Scenario::new(vec![turn]);
        let mut l = Ledger::default();
        let mut bad = valid("a");
        bad.headers.remove("x-api-key");
        assert!(
            matches!(run(&mut l, &s, bad), Outcome::Error { error, .. } if error.status == 401)
        );
        let Outcome::Error { error, .. } = run(&mut l, &s, valid("a")) else {
            panic!("expected the fault")
        };
        assert_eq!(
            error.message,
            "prompt is too long: 250000 tokens > 200000 maximum"
        );
        assert!(matches!(
            run(&mut l, &s, valid("a")),
            Outcome::Turn { turn: 0, .. }
        ));
        assert_eq!(l.requests()[0].turn, None);
        assert_eq!(l.requests()[1].turn, Some(0));
    }

    #[test]
    fn expect_text_guards_the_turn() {
        let mut turn = Turn::text("hi");
        turn.expect_text = Some("line \"one\"".into());
        let s = Scenario::new(vec![turn]);
        let mut l = Ledger::default();
        let Outcome::Error { error, .. } = run(&mut l, &s, valid("nothing here")) else {
            panic!("expected a rejection")
        };
        assert!(
            error.message.contains("turn 0 expected"),
            "{}",
            error.message
        );
        assert!(matches!(
            run(&mut l, &s, valid("the line \"one\" is here")),
            Outcome::Turn { turn: 0, .. }
        ));
    }

    #[test]
    fn context_limit_rejects_without_consuming() {
        let s = Scenario {
            context_limit_tokens: Some(50),
            cache_min_tokens: None,
            overloaded_models: Vec::new(),
            turns: vec![Turn::text("hi")],
        };
        let mut l = Ledger::default();
        let big = valid(&"x".repeat(400));
        let len = big.body.to_string().len();
        let Outcome::Error { error, .. } = run(&mut l, &s, big) else {
            panic!("expected prompt too long")
        };
        assert_eq!(
            error.message,
            format!("prompt is too long: {} tokens > 50 maximum", len / 4)
        );
        assert_eq!(l.requests()[0].turn, Some(0));
        assert!(matches!(
            run(&mut l, &s, valid("small")),
            Outcome::Turn { turn: 0, .. }
        ));
    }

    #[test]
    fn sse_error_on_a_non_streaming_request_is_a_plain_error() {
        let mut turn = Turn::text("hi");
        turn.faults = vec![Fault::SseError {
            after_events: 1,
            error_type: "overloaded_error".into(),
            message: None,
        }];
        let s = Scenario::new(vec![turn]);
        let mut l = Ledger::default();
        let plain = request(json!({"model": "m", "max_tokens": 10,
            "messages": [{"role": "user", "content": "a"}]}));
        assert!(
            matches!(run(&mut l, &s, plain), Outcome::Error { error, .. } if error.status == 529)
        );
    }

    #[test]
    fn the_log_keeps_only_the_newest_bodies() {
        let s = Scenario::new(vec![Turn::text("hi")]);
        let mut l = Ledger::default();
        let big = MAX_LOGGED_BODY_BYTES / 3 + 1;
        for _ in 0..5 {
            l.handle(&s, valid("a"), None, big);
        }
        let log = l.requests();
        assert_eq!(log.len(), 5);
        let kept: Vec<bool> = log.iter().map(|r| !r.body_dropped).collect();
        assert_eq!(kept, [false, false, false, true, true]);
        assert!(log[0].body.is_null() && log[4].body.is_object());
        assert_eq!(log[0].body_bytes, big);
    }

    #[test]
    fn a_cut_after_every_event_serves_the_turn() {
        let mut first = Turn::text("hi");
        first.faults = vec![Fault::Cut {
            after_events: 100,
            served: false,
        }];
        let mut second = Turn::text("again");
        second.faults = vec![Fault::Cut {
            after_events: 4,
            served: true,
        }];
        let s = Scenario::new(vec![first, second, Turn::text("last")]);
        let mut l = Ledger::default();
        for expected in [0, 1, 2] {
            let Outcome::Turn { turn, .. } = run(&mut l, &s, valid("a")) else {
                panic!("expected turn {expected}")
            };
            assert_eq!(turn, expected);
        }
        assert_eq!(l.turns_served(), 3);
    }

    #[test]
    fn unknown_paths_are_logged_as_404() {
        let s = Scenario::new(vec![Turn::text("hi")]);
        let mut l = Ledger::default();
        let mut r = valid("a");
        r.path = "/v1/complete".into();
        assert!(
            matches!(run(&mut l, &s, r), Outcome::Error { error, .. } if error.kind == "not_found_error")
        );
        assert_eq!((l.requests()[0].status, l.requests()[0].turn), (404, None));
    }
}
