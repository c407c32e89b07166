//! `ouro serve` as a GUI uses it: a real server process over HTTP and SSE, its turns run by
//! real brain processes against the mock Messages API.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Sandbox, Watched, bodies, server};

/// One SSE event: id, name, data.
#[derive(Debug, Clone)]
struct Sse {
    id: u64,
    kind: String,
    data: Value,
}

fn parse_sse(text: &str) -> Vec<Sse> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut id = None;
            let mut kind = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    kind = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(v).ok();
                }
            }
            Some(Sse {
                id: id?,
                kind: kind?,
                data: data?,
            })
        })
        .collect()
}

fn kinds(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

struct Serve {
    process: Watched,
    base: String,
    token: String,
    client: reqwest::Client,
}

impl Serve {
    async fn start(sb: &Sandbox, api: &str, env: &[(&str, &str)]) -> Serve {
        Serve::start_with(sb, api, &[], env).await
    }

    /// `ouro serve` with these flags added.
    async fn start_with(sb: &Sandbox, api: &str, flags: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut args = vec!["serve", "--port", "0", "--permission-timeout", "20"];
        args.extend(flags);
        let mut command = sb.command(api, &args);
        for (k, v) in env {
            command.env(k, v);
        }
        let process = Watched::spawn(command);
        process.wait_stdout("token file:").await;
        let out = process.stdout_text();
        let url = out
            .lines()
            .find_map(|l| l.strip_prefix("ouro serve: "))
            .unwrap()
            .to_string();
        let (base, token) = url.split_once("/?token=").unwrap();
        Serve {
            process,
            base: base.to_string(),
            token: token.to_string(),
            client: crate::common::http_client(),
        }
    }

    fn post(&self, path: &str, body: Value) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
    }

    async fn get_json(&self, path: &str) -> Value {
        self.get(path).send().await.unwrap().json().await.unwrap()
    }

    async fn create(&self, root: &Path, extra: Value) -> String {
        let mut body = json!({"projectRoot": root, "persona": null, "mode": "workbench"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let response = self
            .post("/api/harness/session/create", body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let v: Value = response.json().await.unwrap();
        v["session"]["id"].as_str().unwrap().to_string()
    }

    /// Runs a turn and reads its whole stream.
    /// Posts a turn; the response, whatever its status.
    async fn start_turn(&self, body: Value) -> reqwest::Response {
        self.post("/api/harness/turn", body).send().await.unwrap()
    }

    async fn turn(&self, session: &str, message: &str) -> Vec<Sse> {
        self.turn_with(session, message, json!({})).await
    }

    async fn turn_with(&self, session: &str, message: &str, opts: Value) -> Vec<Sse> {
        let response = self
            .start_turn(json!({"sessionId": session, "message": message, "opts": opts}))
            .await;
        assert_eq!(response.status(), 200);
        parse_sse(&response.text().await.unwrap())
    }

    /// SIGTERM, then the exit, which must be clean.
    async fn stop(self) {
        self.process.signal(libc::SIGTERM);
        let run = self.process.finish(Duration::from_secs(30)).await;
        assert!(run.status.success(), "{}", run.debug());
    }
}

const OURO: &str = "ouro@anthropic/claude/sonnet";
const CLAUDE: &str = "claude@anthropic/claude/sonnet";

/// Whether `brain` can run here; the claude CLI is skipped (and reported) where it is absent.
fn available(brain: &str) -> bool {
    if brain == CLAUDE && !crate::common::skip::on_path("claude") {
        crate::common::skip::not_installed(
            "the real `claude` CLI (npm install -g @anthropic-ai/claude-code; .ci/run does)",
        );
        return false;
    }
    true
}

/// Each named scenario as two tests, `<name>::ouro` and `<name>::claude` (the claude CLI where
/// it is installed; a counted skip elsewhere).
macro_rules! on_both_brains {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn ouro() {
                super::$name(super::OURO).await;
            }

            #[tokio::test]
            async fn claude() {
                if super::available(super::CLAUDE) {
                    super::$name(super::CLAUDE).await;
                }
            }
        }
    )*};
}

on_both_brains!(
    a_turn_streams_its_events_in_order_and_tools_never_see_secrets,
    a_second_turn_is_409_interrupt_ends_the_turn_and_the_next_turn_goes_on,
    an_interrupt_as_soon_as_a_turn_is_accepted_stops_that_turn_and_no_other,
    sessions_resume_across_a_restart_and_a_lost_brain_session_starts_anew,
    permission_requests_are_answered_allow_and_deny,
    a_reconnect_with_last_event_id_gets_exactly_the_missed_events,
    a_persona_refuses_its_disallowed_tools_and_runs_its_auto_approved_ones_unasked,
    the_next_turn_reuses_the_warm_brain_and_an_idle_one_ends,
);

async fn the_next_turn_reuses_the_warm_brain_and_an_idle_one_ends(brain: &str) {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"serve": {"brainIdleSeconds": 3}}).to_string(),
    )
    .unwrap();
    let api = server(json!({"turns": [
        text("First."),
        {"expect_text": "first words", "content": [{"type": "text", "text": "Second."}]},
        {"expect_text": "first words", "content": [{"type": "text", "text": "Third."}]}
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({"brain": brain})).await;
    let pid_of = |session: &Value| session["session"]["brainPid"].as_u64();
    let path = format!("/api/harness/session/{id}");
    let alive = |pid: u64| {
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid as i32, 0) == 0 }
    };

    // The brain starts with the session, and its first turn runs on it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let prepared = loop {
        if let Some(pid) = pid_of(&serve.get_json(&path).await) {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "no brain started with the session"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let first = serve.turn(&id, "first words").await;
    assert_eq!(kinds(&first).last(), Some(&"process:exit"));
    let warm = pid_of(&serve.get_json(&path).await).expect("no warm brain after a turn");
    assert!(alive(warm));
    assert_eq!(warm, prepared, "the first turn started another process");

    let second = serve.turn(&id, "second words").await;
    assert!(
        second
            .iter()
            .any(|e| e.kind == "chat:complete" && e.data["text"] == "Second."),
        "{:?}",
        kinds(&second)
    );
    assert_eq!(second.last().unwrap().data["code"], 0);
    assert_eq!(
        pid_of(&serve.get_json(&path).await),
        Some(warm),
        "the second turn started another process"
    );

    // Idle past `serve.brainIdleSeconds`: the process ends, the session stays.
    let deadline = Instant::now() + Duration::from_secs(30);
    while pid_of(&serve.get_json(&path).await).is_some() || alive(warm) {
        assert!(
            Instant::now() < deadline,
            "the idle brain {warm} never ended"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let third = serve.turn(&id, "third words").await;
    assert!(
        third
            .iter()
            .any(|e| e.kind == "chat:complete" && e.data["text"] == "Third."),
        "the conversation did not resume: {:?}",
        kinds(&third)
    );
    let again = pid_of(&serve.get_json(&path).await).expect("no warm brain after a turn");
    assert_ne!(again, warm);
    serve.stop().await;
}

/// A new session's brain starts before its first turn only while a warm place is free.
#[tokio::test]
async fn past_max_warm_brains_a_new_session_starts_its_brain_with_its_turn() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"serve": {"maxWarmBrains": 1}}).to_string(),
    )
    .unwrap();
    let api = server(json!({"turns": [text("Hello.")]})).await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let pid_of = |session: &Value| session["session"]["brainPid"].as_u64();
    // Created back to back: the first's brain is still starting when the second comes.
    let first = serve.create(&sb.root(), json!({"brain": OURO})).await;
    let second = serve.create(&sb.root(), json!({"brain": OURO})).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while pid_of(
        &serve
            .get_json(&format!("/api/harness/session/{first}"))
            .await,
    )
    .is_none()
    {
        assert!(
            Instant::now() < deadline,
            "no brain started with the session"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let path = format!("/api/harness/session/{second}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(pid_of(&serve.get_json(&path).await), None);
    let events = serve.turn(&second, "hi").await;
    assert!(
        kinds(&events).contains(&"chat:complete"),
        "{:?}",
        kinds(&events)
    );
    assert!(pid_of(&serve.get_json(&path).await).is_some());
    serve.stop().await;
}

/// Waits until the mock holds a reply back (`hold_after_events`): the turn is mid-stream.
async fn held(api: &ouro::mock::MockServer) {
    tokio::time::timeout(Duration::from_secs(30), api.wait_held(1))
        .await
        .expect("the brain never asked the API");
}

/// Where the server keeps session `id` of the sandbox's one project.
fn session_file(sb: &Sandbox, id: &str) -> std::path::PathBuf {
    std::fs::read_dir(sb.home.path().join("serve/projects"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join(format!("sessions/{id}.json"))
}

fn text(answer: &str) -> Value {
    json!({"content": [{"type": "text", "text": answer}]})
}

fn tool(name: &str, input: Value) -> Value {
    json!({"content": [{"type": "tool_use", "name": name, "input": input}]})
}

async fn a_turn_streams_its_events_in_order_and_tools_never_see_secrets(brain: &str) {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let a = sb.root().join("a.txt");
    let api = server(json!({"turns": [
        {"content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "name": "Read", "input": {"file_path": a}},
            {"type": "tool_use", "name": "Bash", "input": {"command": "env"}}
        ]},
        text("All read.")
    ]}))
    .await;
    let serve = Serve::start(
        &sb,
        &api.url(),
        &[("FOO_SECRET", "hunter2"), ("PLAIN_VALUE", "kept")],
    )
    .await;
    let id = serve.create(&sb.root(), json!({"brain": brain})).await;
    let events = serve
        .turn_with(
            &id,
            "read it",
            json!({"autoApproveTools": ["Bash(env)", "Read"]}),
        )
        .await;
    let names = kinds(&events);
    assert_eq!(names.first(), Some(&"session:init"), "{names:?}");
    assert_eq!(names.last(), Some(&"process:exit"), "{names:?}");
    assert_eq!(names[names.len() - 2], "session:complete", "{names:?}");
    for expected in ["chat:delta", "chat:complete", "tool:start", "tool:result"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(events.windows(2).all(|w| w[0].id < w[1].id), "ids increase");
    assert!(events.iter().all(|e| e.data["sessionId"] == id.as_str()));
    let deltas: String = events
        .iter()
        .filter(|e| e.kind == "chat:delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Reading.All read.");
    let result_of = |tool: &str| {
        let start = events
            .iter()
            .find(|e| e.kind == "tool:start" && e.data["name"] == tool)
            .unwrap();
        events
            .iter()
            .find(|e| e.kind == "tool:result" && e.data["toolUseId"] == start.data["toolUseId"])
            .unwrap()
            .data["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(result_of("Read").contains("alpha"));
    let env = result_of("Bash");
    assert!(env.contains("PLAIN_VALUE=kept"), "{env}");
    assert!(
        !env.contains("FOO_SECRET") && !env.contains("hunter2"),
        "{env}"
    );
    assert!(!env.contains(crate::common::API_KEY), "{env}");
    let exit = events.last().unwrap();
    assert_eq!(exit.data["code"], 0);
    let session: Value = serve.get_json(&format!("/api/harness/session/{id}")).await;
    assert_eq!(session["session"]["turns"], 1);
    assert!(session["session"]["claudeSessionId"].is_string());
    let log = std::fs::read_to_string(sb.home.path().join("serve/logs/harness.log")).unwrap();
    assert!(log.contains("\"turn_completed\"") && !log.contains(crate::common::API_KEY));
    serve.stop().await;
}

async fn a_second_turn_is_409_interrupt_ends_the_turn_and_the_next_turn_goes_on(brain: &str) {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "A long answer that is held"}], "hold_after_events": 3},
        {"expect_text": "second", "content": [{"type": "text", "text": "Second answer."}]}
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({"brain": brain})).await;
    let first = serve
        .start_turn(json!({"sessionId": id, "message": "first", "turnId": "t-1"}))
        .await;
    assert_eq!(first.status(), 200);
    held(&api).await;
    let busy = serve
        .start_turn(json!({"sessionId": id, "message": "again"}))
        .await;
    assert_eq!(busy.status(), 409);
    let error: Value = busy.json().await.unwrap();
    assert_eq!(error["error"]["code"], "conflict");
    let stopped = serve
        .post("/api/harness/interrupt", json!({"sessionId": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(stopped.status(), 200);
    let events = parse_sse(&first.text().await.unwrap());
    assert_eq!(
        kinds(&events).last(),
        Some(&"process:exit"),
        "{:?}",
        kinds(&events)
    );
    // Claude Code may leave the held response open instead of hanging up; the mock serves one
    // response at a time.
    api.release();
    let none = serve
        .post("/api/harness/interrupt", json!({"sessionId": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), 404);
    let second = serve.turn(&id, "second").await;
    assert!(
        kinds(&second).contains(&"chat:complete"),
        "{:?}",
        kinds(&second)
    );
    let last = bodies(&api).last().cloned().unwrap().to_string();
    assert!(
        last.contains("first") && last.contains("second"),
        "the conversation went on: {last}"
    );
    serve.stop().await;
}

/// A GUI's first message then Esc: the interrupt comes while the new session's brain may still
/// be starting, before it has taken the turn. It stops that turn (which would otherwise wait
/// on the held answer forever) and leaves the next one alone.
async fn an_interrupt_as_soon_as_a_turn_is_accepted_stops_that_turn_and_no_other(brain: &str) {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "A long answer that is held"}], "hold_after_events": 3},
        {"expect_text": "second", "content": [{"type": "text", "text": "Second answer."}]}
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({"brain": brain})).await;
    let first = serve
        .start_turn(json!({"sessionId": id, "message": "first"}))
        .await;
    assert_eq!(first.status(), 200);
    let stopped = serve
        .post("/api/harness/interrupt", json!({"sessionId": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(stopped.status(), 200);
    let events = tokio::time::timeout(Duration::from_secs(30), first.text())
        .await
        .expect("the interrupted turn never ended")
        .unwrap();
    let events = parse_sse(&events);
    assert_eq!(kinds(&events).last(), Some(&"process:exit"));
    api.release();
    let second = serve.turn(&id, "second").await;
    assert!(
        kinds(&second).contains(&"chat:complete"),
        "the next turn was cut too: {:?}",
        kinds(&second)
    );
    serve.stop().await;
}

async fn sessions_resume_across_a_restart_and_a_lost_brain_session_starts_anew(brain: &str) {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        text("First."),
        {"expect_text": "remember me", "content": [{"type": "text", "text": "Resumed."}]},
        text("Fresh.")
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({"brain": brain})).await;
    serve.turn(&id, "remember me").await;
    serve.stop().await;

    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let list: Value = serve
        .get_json(&format!(
            "/api/harness/session/list?projectRoot={}",
            sb.root().display()
        ))
        .await;
    assert_eq!(list[0]["id"], id.as_str(), "{list}");
    let events = serve.turn(&id, "and again").await;
    assert!(
        kinds(&events).contains(&"chat:complete"),
        "{:?}",
        kinds(&events)
    );
    let history: Value = serve
        .get_json(&format!("/api/harness/session/{id}/history"))
        .await;
    assert_eq!(history["turns"].as_array().unwrap().len(), 2, "{history}");
    assert_eq!(history["turns"][0]["message"], "remember me");
    serve.stop().await;

    // The brain's own session is gone: the turn says so, then starts a new one.
    let file = session_file(&sb, &id);
    let mut session: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    session["claudeSessionId"] = json!("00000000-0000-4000-8000-000000000000");
    std::fs::write(&file, session.to_string()).unwrap();
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let events = serve.turn(&id, "once more").await;
    let names = kinds(&events);
    let error = names.iter().position(|k| *k == "session:error").unwrap();
    let init = names.iter().position(|k| *k == "session:init").unwrap();
    assert!(error < init, "{names:?}");
    assert_eq!(names.last(), Some(&"process:exit"));
    assert!(names.contains(&"session:complete"), "{names:?}");
    serve.stop().await;
}

async fn permission_requests_are_answered_allow_and_deny(brain: &str) {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        tool("Write", json!({"file_path": sb.root().join("yes.txt"), "content": "allowed\n"})),
        tool("Write", json!({"file_path": sb.root().join("no.txt"), "content": "denied\n"})),
        text("Done.")
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({"brain": brain})).await;
    let mut stream = serve
        .start_turn(json!({"sessionId": id, "message": "write"}))
        .await;
    let mut seen = String::new();
    let mut answered = 0;
    while let Some(chunk) = stream.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        let requests: Vec<Sse> = parse_sse(&seen)
            .into_iter()
            .filter(|e| e.kind == "permission:request")
            .collect();
        if requests.len() > answered {
            let request = &requests[answered];
            assert_eq!(request.data["toolName"], "Write");
            let decision = if answered == 0 { "allow" } else { "deny" };
            let response = serve
                .post(
                    "/api/harness/permission",
                    json!({"sessionId": id, "requestId": request.data["requestId"], "decision": decision}),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            answered += 1;
        }
    }
    assert_eq!(answered, 2, "{seen}");
    let events = parse_sse(&seen);
    let results: Vec<&Sse> = events.iter().filter(|e| e.kind == "tool:result").collect();
    assert_eq!(results[0].data["isError"], false);
    assert_eq!(results[1].data["isError"], true);
    assert_eq!(
        std::fs::read_to_string(sb.root().join("yes.txt")).unwrap(),
        "allowed\n"
    );
    assert!(!sb.root().join("no.txt").exists());
    let stale = serve
        .post(
            "/api/harness/permission",
            json!({"sessionId": id, "requestId": "gone", "decision": "allow"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 404);
    serve.stop().await;
}

async fn a_persona_refuses_its_disallowed_tools_and_runs_its_auto_approved_ones_unasked(
    brain: &str,
) {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"trustedDirectories": [sb.root()]}).to_string(),
    )
    .unwrap();
    sb.write(
        "agents/AGENT_BUILDER.md",
        "---\nname: builder\ndescription: Builds\ndisallowed_tools: [Bash]\nauto_approve_tools: [Write]\nmax_turns: 5\n---\nYou build things.\n",
    );
    let api = server(json!({"turns": [
        tool("Write", json!({"file_path": sb.root().join("made.txt"), "content": "made\n"})),
        tool("Bash", json!({"command": "touch bash.txt"})),
        text("Built.")
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let personas: Value = serve
        .get_json(&format!(
            "/api/harness/personas?projectRoot={}",
            sb.root().display()
        ))
        .await;
    assert_eq!(personas[0]["id"], "BUILDER", "{personas}");
    assert_eq!(personas[0]["maxTurns"], 5);
    let id = serve
        .create(&sb.root(), json!({"persona": "BUILDER", "brain": brain}))
        .await;
    let events = serve.turn(&id, "build").await;
    let names = kinds(&events);
    assert!(!names.contains(&"permission:request"), "{names:?}");
    assert_eq!(
        std::fs::read_to_string(sb.root().join("made.txt")).unwrap(),
        "made\n"
    );
    assert!(!sb.root().join("bash.txt").exists());
    let results: Vec<&Sse> = events.iter().filter(|e| e.kind == "tool:result").collect();
    assert_eq!(results[1].data["isError"], true, "{:?}", results[1]);
    let request = bodies(&api)
        .iter()
        .map(|b| b.to_string())
        .collect::<String>();
    assert!(
        request.contains("You build things."),
        "the persona is in the system prompt"
    );
    let bad = serve
        .post(
            "/api/harness/session/create",
            json!({"projectRoot": sb.root(), "persona": "NOBODY", "mode": "workbench"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    serve.stop().await;
}

async fn a_reconnect_with_last_event_id_gets_exactly_the_missed_events(brain: &str) {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [text("One two three four five six."), text("Once.")]})).await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({"brain": brain})).await;
    let all = serve.turn(&id, "count").await;
    let after = all[2].id;
    let mut stream = serve
        .get(&format!("/api/harness/session/{id}/events"))
        .header("Last-Event-ID", after.to_string())
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while parse_sse(&seen).len() < all.len() - 3 {
        let chunk = tokio::time::timeout(Duration::from_secs(30), stream.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let replayed: Vec<u64> = parse_sse(&seen).iter().map(|e| e.id).collect();
    let missed: Vec<u64> = all[3..].iter().map(|e| e.id).collect();
    assert_eq!(replayed, missed);
    // The same turn id again attaches to that turn: its events, not a second run.
    let again = serve
        .start_turn(json!({"sessionId": id, "message": "count", "turnId": "t-once"}))
        .await;
    let once = parse_sse(&again.text().await.unwrap());
    let requests = bodies(&api).len();
    let again = serve
        .start_turn(json!({"sessionId": id, "message": "count", "turnId": "t-once"}))
        .await;
    let twice = parse_sse(&again.text().await.unwrap());
    assert_eq!(bodies(&api).len(), requests, "the turn ran once");
    let ids = |events: &[Sse]| events.iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(ids(&once), ids(&twice));
    let by_query = serve
        .get(&format!(
            "/api/harness/session/{id}/events?after={}",
            all[all.len() - 2].id
        ))
        .send()
        .await
        .unwrap();
    let mut by_query = by_query;
    let chunk = by_query.chunk().await.unwrap().unwrap();
    let first = parse_sse(&String::from_utf8_lossy(&chunk));
    assert_eq!(first[0].kind, "process:exit");
    drop(stream);
    drop(by_query);
    serve.stop().await;
}

/// The disk holding the event logs fills mid-turn: live clients still get every event, the
/// log never gets a torn line, and what found no room is written once there is room, so a
/// restarted server replays both turns whole, ids in order.
#[tokio::test]
async fn a_full_disk_mid_turn_loses_and_tears_no_event() {
    let sb = Sandbox::new();
    let projects = sb.home.path().join("serve/projects");
    let Some(disk) = crate::common::SmallDisk::mount(&projects, "128k") else {
        crate::common::skip::cannot_mount("a small tmpfs");
        return;
    };
    let long: String = (0..4000).map(|i| format!("word{i} ")).collect();
    let api = server(json!({"turns": [text(&long), text("After the disk had room.")]})).await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({})).await;
    // Leave a few KB: the session's files fit, the long answer's events do not.
    let filler = projects.join("filler");
    let room = disk.free().saturating_sub(8 * 1024);
    std::fs::write(&filler, vec![b'x'; room]).unwrap();
    let first = serve.turn(&id, "say a lot").await;
    assert_eq!(
        kinds(&first).last(),
        Some(&"process:exit"),
        "{:?}",
        kinds(&first)
    );
    let streamed: String = first
        .iter()
        .filter(|e| e.kind == "chat:delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, long, "a live client lost text to the full disk");
    std::fs::remove_file(&filler).unwrap();
    let second = serve.turn(&id, "and now").await;
    assert_eq!(kinds(&second).last(), Some(&"process:exit"));
    serve.stop().await;

    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let mut stream = serve
        .get(&format!("/api/harness/session/{id}/events?after=0"))
        .send()
        .await
        .unwrap();
    let mut replay = String::new();
    while replay.matches("event: process:exit").count() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(30), stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("the replay stopped at {replay}"))
            .unwrap()
            .unwrap();
        replay.push_str(&String::from_utf8_lossy(&chunk));
    }
    let events = parse_sse(&replay);
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] + 1 == w[1]), "{ids:?}");
    let exits = events.iter().filter(|e| e.kind == "process:exit").count();
    assert_eq!(exits, 2, "{:?}", kinds(&events));
    let replayed: String = events
        .iter()
        .take_while(|e| e.kind != "process:exit")
        .filter(|e| e.kind == "chat:delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(replayed, long);
    serve.stop().await;
}

/// A connection that never finishes its request's headers is closed; the server goes on
/// answering everyone else.
#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let sb = Sandbox::new();
    let api = server(json!({"turns": []})).await;
    let serve = Serve::start(&sb, &api.url(), &[("OURO_SERVE_HEADER_TIMEOUT_MS", "300")]).await;
    let address = serve.base.trim_start_matches("http://").to_string();
    let mut slow = tokio::net::TcpStream::connect(&address).await.unwrap();
    slow.write_all(b"GET /api/harness/projects HTTP/1.1\r\nHost: ")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(20), slow.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the half-sent request was never cut off");
    let (status, _) = (
        serve
            .get("/api/harness/projects")
            .send()
            .await
            .unwrap()
            .status(),
        (),
    );
    assert_eq!(status, 200);
    serve.stop().await;
}

#[tokio::test]
async fn requests_without_the_token_from_foreign_sites_or_too_big_are_refused_as_json() {
    let sb = Sandbox::new();
    let api = server(json!({"turns": []})).await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let plain = crate::common::http_client();
    let list = format!("{}/api/harness/session/list", serve.base);
    let check = |status: u16, code: &'static str| {
        move |(got, body): (reqwest::StatusCode, Value)| {
            assert_eq!(got.as_u16(), status, "{body}");
            assert_eq!(body["error"]["code"], code, "{body}");
        }
    };
    async fn call(r: reqwest::RequestBuilder) -> (reqwest::StatusCode, Value) {
        let response = r.send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }
    check(401, "unauthorized")(call(plain.get(&list)).await);
    check(401, "unauthorized")(call(plain.get(&list).bearer_auth("wrong")).await);
    check(403, "forbidden_host")(
        call(
            serve
                .get("/api/harness/session/list")
                .header("Host", "evil.example"),
        )
        .await,
    );
    check(403, "forbidden_origin")(
        call(
            serve
                .get("/api/harness/session/list")
                .header("Origin", "https://evil.example"),
        )
        .await,
    );
    check(404, "not_found")(call(serve.get("/api/harness/session/nope")).await);
    check(404, "not_found")(call(serve.get("/api/harness/nothing-here")).await);
    // axum's own rejections answer as the API does.
    check(400, "bad_request")(
        call(serve.get(&format!("/api/harness/session/{}/events?after=-5", "x"))).await,
    );
    check(405, "method_not_allowed")(
        call(serve.post("/api/harness/session/list", json!({}))).await,
    );
    check(413, "too_large")(too_big(&serve).await);
    check(400, "bad_request")(
        call(
            serve
                .client
                .post(format!("{}/api/harness/turn", serve.base))
                .bearer_auth(&serve.token)
                .body("{not json"),
        )
        .await,
    );
    check(400, "bad_request")(
        call(serve.post(
            "/api/harness/session/create",
            json!({"projectRoot": sb.root(), "persona": null, "mode": "sideways"}),
        ))
        .await,
    );
    check(400, "bad_request")(
        call(serve.post(
            "/api/harness/session/create",
            json!({"projectRoot": "/no/such/dir", "persona": null, "mode": "direct"}),
        ))
        .await,
    );
    // The token buys the web app a cookie that then works as the token.
    let auth = plain
        .post(format!("{}/api/auth", serve.base))
        .json(&json!({"token": serve.token}))
        .send()
        .await
        .unwrap();
    let cookie = auth.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let ok = plain
        .get(&list)
        .header("Cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert!(ok.headers().get("access-control-allow-origin").is_none());
    serve.stop().await;
}

/// A request announcing an 11 MB body gets its 413 before the body is sent (as a client
/// that waits for `100 Continue` would see it).
async fn too_big(serve: &Serve) -> (reqwest::StatusCode, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = serve.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /api/harness/turn HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        serve.token,
        11 << 20
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&response).contains("}}") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&response));
        response.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split(' ').nth(1).unwrap().parse::<u16>().unwrap();
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let body = &body[body.find('{').unwrap()..=body.rfind('}').unwrap()];
    (
        reqwest::StatusCode::from_u16(status).unwrap(),
        serde_json::from_str(body).unwrap(),
    )
}

#[tokio::test]
async fn fifty_sessions_at_once_all_complete_and_no_event_reaches_the_wrong_stream() {
    const SESSIONS: usize = 50;
    let sb = Sandbox::new();
    let turns: Vec<Value> = (0..SESSIONS)
        .map(|n| json!({"when_text": format!("job-{n}-"), "content": [{"type": "text", "text": format!("answer-{n}-")}]}))
        .collect();
    let api = server(json!({"turns": turns})).await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let mut ids = Vec::new();
    for _ in 0..SESSIONS {
        ids.push(serve.create(&sb.root(), json!({"mode": "direct"})).await);
    }
    let runs = ids.iter().enumerate().map(|(n, id)| {
        let serve = &serve;
        async move { (n, id.clone(), serve.turn(id, &format!("job-{n}-")).await) }
    });
    for (n, id, events) in futures::future::join_all(runs).await {
        assert_eq!(
            kinds(&events).last(),
            Some(&"process:exit"),
            "session {n}: {:?}",
            kinds(&events)
        );
        assert!(
            events.iter().all(|e| e.data["sessionId"] == id.as_str()),
            "session {n}"
        );
        let complete: Vec<&Sse> = events
            .iter()
            .filter(|e| e.kind == "chat:complete")
            .collect();
        assert_eq!(complete.len(), 1, "session {n}");
        assert_eq!(
            complete[0].data["text"],
            format!("answer-{n}-"),
            "session {n}"
        );
    }
    serve.stop().await;
}

#[tokio::test]
async fn a_signal_ends_the_running_turn_cleanly_and_a_second_server_on_the_port_is_refused() {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "A long answer that is held"}], "hold_after_events": 3}
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let port = serve.base.rsplit(':').next().unwrap().to_string();
    // Another home, the same port.
    let other = Sandbox::new();
    let second = other
        .command(&api.url(), &["serve", "--port", &port])
        .output()
        .await
        .unwrap();
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains("could not listen") && said.contains("--port"),
        "{said}"
    );
    // The same home, another port: refused at once, naming the running server.
    let started = std::time::Instant::now();
    let third = sb
        .command(&api.url(), &["serve", "--port", "0"])
        .output()
        .await
        .unwrap();
    assert_eq!(third.status.code(), Some(1));
    assert!(started.elapsed() < Duration::from_secs(10));
    let said = String::from_utf8_lossy(&third.stderr);
    assert!(
        said.contains("another ouro serve")
            && said.contains(&format!("pid {}", serve.process.pid()))
            && said.contains(&format!("{}/", serve.base)),
        "{said}"
    );

    let id = serve.create(&sb.root(), json!({})).await;
    let turn = serve
        .start_turn(json!({"sessionId": id, "message": "go"}))
        .await;
    held(&api).await;
    serve.process.signal(libc::SIGTERM);
    let events = parse_sse(&turn.text().await.unwrap());
    assert_eq!(
        kinds(&events).last(),
        Some(&"process:exit"),
        "{:?}",
        kinds(&events)
    );
    let run = serve.process.finish(Duration::from_secs(30)).await;
    assert!(run.status.success(), "{}", run.debug());
    let saved = session_file(&sb, &id);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert_eq!(saved["turns"], 1, "{saved}");
}

#[tokio::test]
async fn files_mark_what_turns_changed_and_delete_removes_a_session() {
    let sb = Sandbox::new();
    sb.write(".gitignore", "build/\n");
    sb.write("build/out.bin", "x");
    sb.write("src/lib.rs", "fn a() {}\n");
    let api = server(json!({"turns": [
        tool("Write", json!({"file_path": sb.root().join("src/new.rs"), "content": "fn b() {}\n"})),
        text("Written.")
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve
        .create(&sb.root(), json!({"permissionMode": "acceptEdits"}))
        .await;
    serve.turn(&id, "write").await;
    let files: Value = serve
        .get_json(&format!(
            "/api/harness/files?projectRoot={}&sessionId={id}",
            sb.root().display()
        ))
        .await;
    let listed: Vec<(&str, bool)> = files["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["changed"].as_bool().unwrap()))
        .collect();
    assert!(listed.contains(&("src/new.rs", true)), "{listed:?}");
    assert!(listed.contains(&("src/lib.rs", false)), "{listed:?}");
    assert!(
        !listed.iter().any(|(p, _)| p.starts_with("build/")),
        "{listed:?}"
    );
    // A page following the session's events: the delete ends its stream.
    let following = serve
        .get(&format!("/api/harness/session/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(following.status(), 200);
    let gone = serve
        .client
        .delete(format!("{}/api/harness/session/{id}", serve.base))
        .bearer_auth(&serve.token)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 204);
    tokio::time::timeout(Duration::from_secs(10), following.text())
        .await
        .expect("a deleted session's event stream stayed open")
        .unwrap();
    let after = serve
        .get(&format!("/api/harness/session/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 404);
    let list: Value = serve.get_json("/api/harness/session/list").await;
    assert_eq!(list, json!([]));
    serve.stop().await;
}

#[tokio::test]
async fn a_conversation_a_cli_is_writing_is_409_for_a_served_turn() {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        text("First."),
        {"content": [{"type": "text", "text": "The CLI's turn, held"}], "hold_after_events": 3},
        // The warm brain must not answer from a conversation the CLI has moved on from.
        {"expect_text": "from the cli", "content": [{"type": "text", "text": "Served again."}]}
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({})).await;
    serve.turn(&id, "first").await;
    let session: Value = serve.get_json(&format!("/api/harness/session/{id}")).await;
    let conversation = session["session"]["claudeSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let cli = Watched::spawn(sb.command(
        &api.url(),
        &["-p", "--resume", &conversation, "from the cli"],
    ));
    held(&api).await;
    let busy = serve
        .start_turn(json!({"sessionId": id, "message": "now"}))
        .await;
    assert_eq!(busy.status(), 409);
    let error: Value = busy.json().await.unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("in use") && message.contains("pid"),
        "{message}"
    );
    api.release();
    let run = cli.finish(Duration::from_secs(30)).await;
    assert!(run.status.success(), "{}", run.debug());
    let events = serve.turn(&id, "now").await;
    assert!(
        kinds(&events).contains(&"chat:complete"),
        "{:?}",
        kinds(&events)
    );
    serve.stop().await;
}

/// "Allow always" keeps the narrowest rule for the call (this command), not the whole tool:
/// the same command then runs unasked in a later turn, another one still asks.
#[tokio::test]
async fn allow_always_remembers_the_call_not_the_tool() {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        tool("Bash", json!({"command": "touch one.txt"})),
        text("Done."),
        tool("Bash", json!({"command": "touch one.txt"})),
        tool("Bash", json!({"command": "touch two.txt"})),
        text("Done again.")
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({})).await;
    let answer = |remember: bool, decision: &'static str| {
        let serve = &serve;
        let id = id.clone();
        move |request: Sse| {
            let id = id.clone();
            async move {
                let response = serve
                .post(
                    "/api/harness/permission",
                    json!({"sessionId": id, "requestId": request.data["requestId"], "decision": decision, "remember": remember}),
                )
                .send()
                .await
                .unwrap();
                assert_eq!(response.status(), 200);
            }
        }
    };
    let asked = run_answering(&serve, &id, "first", answer(true, "allow")).await;
    assert_eq!(asked.len(), 1);
    let session: Value = serve.get_json(&format!("/api/harness/session/{id}")).await;
    // The brain's own suggestion when it makes one (ouro's: this command as a prefix rule).
    let rules = session["session"]["alwaysAllow"].to_string();
    assert!(
        rules.contains("Bash(touch one.txt") && !rules.contains("\"Bash\""),
        "{rules}"
    );
    let asked = run_answering(&serve, &id, "second", answer(false, "deny")).await;
    assert_eq!(asked.len(), 1, "only the other command asks");
    assert_eq!(asked[0].data["input"]["command"], "touch two.txt");
    serve.stop().await;
}

/// Runs a turn, answering each permission request with `answer`; the requests seen.
async fn run_answering<F, Fut>(serve: &Serve, id: &str, message: &str, answer: F) -> Vec<Sse>
where
    F: Fn(Sse) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut stream = serve
        .start_turn(json!({"sessionId": id, "message": message}))
        .await;
    let mut seen = String::new();
    let mut asked: Vec<Sse> = Vec::new();
    while let Some(chunk) = stream.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        let requests: Vec<Sse> = parse_sse(&seen)
            .into_iter()
            .filter(|e| e.kind == "permission:request")
            .collect();
        for request in requests.into_iter().skip(asked.len()) {
            asked.push(request.clone());
            answer(request).await;
        }
    }
    assert_eq!(
        kinds(&parse_sse(&seen)).last(),
        Some(&"process:exit"),
        "{seen}"
    );
    asked
}

/// A claude@ brain started by serve (the fake `claude`, which logs its environment) gets the
/// API key and the names passed with `--pass-env`, and no other secret.
#[tokio::test(flavor = "multi_thread")]
async fn a_served_brain_gets_no_secret_but_what_was_passed_by_name() {
    use crate::common::secrets::{SECRET_ENV, assert_no_secrets, fake_claude_envs};
    const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_claude.py");
    let sb = Sandbox::new();
    let api = server(json!({"turns": []})).await;
    let log = sb.home.path().join("fake.log");
    let log_text = log.display().to_string();
    let mut env: Vec<(&str, &str)> = SECRET_ENV.to_vec();
    env.extend([
        ("OURO_CLAUDE_BIN", FAKE),
        ("FAKE_CLAUDE_LOG", log_text.as_str()),
    ]);
    let serve = Serve::start_with(&sb, &api.url(), &["--pass-env", "KEEP_TOKEN"], &env).await;
    let id = serve.create(&sb.root(), json!({"brain": CLAUDE})).await;
    let events = serve.turn(&id, "hello").await;
    assert_eq!(kinds(&events).last(), Some(&"process:exit"), "{events:?}");
    assert_no_secrets(&fake_claude_envs(&log), Some("KEEP_TOKEN"));
    serve.stop().await;
}

/// `kill -9` of the server mid-turn ends the brain and the tool it runs at once (no tool
/// effect or API spending goes on unseen), and the restarted server's replay says so.
async fn a_killed_server_leaves_no_brain_or_tool_behind(brain: &str) {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        tool("Bash", json!({"command": "tail -f /dev/null"})),
        text("never asked")
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({"brain": brain})).await;
    let request = serve.post(
        "/api/harness/turn",
        json!({
            "sessionId": id,
            "message": "wait",
            "opts": {"autoApproveTools": ["Bash(tail -f /dev/null)"]}
        }),
    );
    // Claude Code asks about a command on a path outside the project whatever the rules say:
    // every question of this turn is allowed.
    let (client, base, token) = (
        serve.client.clone(),
        serve.base.clone(),
        serve.token.clone(),
    );
    let session = id.clone();
    let turn = tokio::spawn(async move {
        let Ok(mut response) = request.send().await else {
            return;
        };
        let mut seen = String::new();
        let mut answered = 0;
        while let Ok(Some(chunk)) = response.chunk().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            let asked: Vec<Sse> = parse_sse(&seen)
                .into_iter()
                .filter(|e| e.kind == "permission:request")
                .collect();
            for question in asked.iter().skip(answered) {
                let _ = client
                    .post(format!("{base}/api/harness/permission"))
                    .bearer_auth(&token)
                    .json(&json!({
                        "sessionId": session,
                        "requestId": question.data["requestId"],
                        "decision": "allow"
                    }))
                    .send()
                    .await;
            }
            answered = asked.len();
        }
    });
    serve.process.wait_for_descendant("tail").await;
    let processes = crate::common::descendant_pids(serve.process.pid());
    assert!(processes.len() >= 2, "{processes:?}");
    serve.process.signal(libc::SIGKILL);
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        let left: Vec<i32> = processes
            .iter()
            .copied()
            .filter(|p| !crate::common::gone(*p))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running 2 s after the server's kill: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = turn.await;
    drop(serve);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(bodies(&api).len(), 1, "the brain asked the API again");

    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let mut stream = serve
        .get(&format!("/api/harness/session/{id}/events?after=0"))
        .send()
        .await
        .unwrap();
    let mut replay = String::new();
    while !replay.contains("process:exit") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("the replay stopped at {replay}"))
            .unwrap()
            .unwrap();
        replay.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        replay.contains("the server stopped during this turn, and its brain with it"),
        "{replay}"
    );
    // What was asked in the killed turn was kept when it began.
    let history: Value = serve
        .get_json(&format!("/api/harness/session/{id}/history"))
        .await;
    assert_eq!(history["turns"][0]["message"], "wait", "{history}");
    // The conversation the killed first turn began goes on: its prompt is in the next request.
    let events = serve.turn(&id, "and now").await;
    assert!(kinds(&events).contains(&"chat:complete"), "{events:?}");
    let last = bodies(&api).pop().unwrap();
    let messages = serde_json::to_string(&last["messages"]).unwrap();
    assert!(
        messages.contains("\"wait\"") && messages.contains("and now"),
        "{messages}"
    );
    serve.stop().await;
}

on_both_brains!(a_killed_server_leaves_no_brain_or_tool_behind);

/// A cloned repository's README.md that links to a key outside the project: no served turn
/// sends the key to the API or keeps it, trusted project or not; an untrusted project's
/// context files are not read at all.
#[tokio::test]
async fn a_context_file_linking_out_of_the_project_never_reaches_the_prompt() {
    let sb = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n";
    std::fs::write(outside.path().join("id_rsa"), key).unwrap();
    std::os::unix::fs::symlink(outside.path().join("id_rsa"), sb.root().join("README.md")).unwrap();
    sb.write("AGENTS.md", "Build with make.\n");
    let api = server(json!({"turns": [text("One."), text("Two.")]})).await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({"brain": OURO})).await;
    serve.turn(&id, "hello").await;
    let untrusted = serde_json::to_string(&bodies(&api)[0]["system"]).unwrap();
    assert!(!untrusted.contains("PRIVATE KEY"), "{untrusted}");
    assert!(
        !untrusted.contains("Build with make"),
        "untrusted: {untrusted}"
    );
    serve.stop().await;

    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"trustedDirectories": [sb.root()]}).to_string(),
    )
    .unwrap();
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    serve.turn(&id, "again").await;
    let trusted = serde_json::to_string(&bodies(&api)[1]["system"]).unwrap();
    assert!(!trusted.contains("PRIVATE KEY"), "{trusted}");
    assert!(trusted.contains("Build with make"), "trusted: {trusted}");
    let kept = walk_text(sb.home.path());
    assert!(
        !kept.contains("PRIVATE KEY"),
        "a copy was kept in ouro's home"
    );
    assert!(
        serve.process.stdout_text().contains("README.md")
            || serve.process.stderr_text().contains("README.md"),
        "the skipped link is named"
    );
    serve.stop().await;
}

/// Every file under `dir`, as text, one after another.
fn walk_text(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push_str(&walk_text(&path));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            out.push_str(&text);
        }
    }
    out
}

/// Reads `stream` (an SSE response) until its next `approvals` event; that event's list.
async fn next_approvals(stream: &mut reqwest::Response, seen: &mut String) -> Value {
    let read = async {
        loop {
            if let Some(end) = seen.find("\n\n") {
                let block: String = seen.drain(..end + 2).collect();
                if block.lines().any(|l| l == "event: approvals")
                    && let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: "))
                {
                    return serde_json::from_str(data).unwrap();
                }
                continue;
            }
            let chunk = stream
                .chunk()
                .await
                .unwrap()
                .expect("the inbox stream ended");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the inbox stream showed no change")
}

/// The Approvals inbox lists a question parked in a served session, live on its stream too,
/// and answers it by its id alone, as the session's own route would ("always" included); the
/// turn then finishes and the id is spent.
#[tokio::test]
async fn the_approvals_inbox_lists_a_parked_question_and_answers_it_by_id() {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        tool("Bash", json!({"command": "touch inbox.txt"})),
        text("Done.")
    ]}))
    .await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({})).await;
    let anonymous = serve
        .client
        .get(format!("{}/api/harness/approvals", serve.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_eq!(serve.get_json("/api/harness/approvals").await, json!([]));
    let mut inbox = serve
        .get("/api/harness/approvals/events")
        .send()
        .await
        .unwrap();
    assert_eq!(inbox.status(), 200);
    let mut seen = String::new();
    assert_eq!(next_approvals(&mut inbox, &mut seen).await, json!([]));

    let mut turn = serve
        .start_turn(json!({"sessionId": id, "message": "touch the inbox file\nnow"}))
        .await;
    assert_eq!(turn.status(), 200);
    let live = next_approvals(&mut inbox, &mut seen).await;
    let listed = serve.get_json("/api/harness/approvals").await;
    assert_eq!(listed, live);
    let [question] = listed.as_array().unwrap().as_slice() else {
        panic!("one question waits: {listed}");
    };
    assert_eq!(question["source"], "serve");
    assert_eq!(question["sessionId"], id.as_str());
    assert_eq!(question["sessionTitle"], "touch the inbox file");
    assert_eq!(question["tool"], "Bash");
    assert_eq!(question["input"]["command"], "touch inbox.txt");
    assert!(
        question["rule"]
            .as_str()
            .is_some_and(|r| r.starts_with("Bash(touch inbox.txt")),
        "{question}"
    );
    let expires = question["expiresAt"].as_str().unwrap();
    let expires = chrono::DateTime::parse_from_rfc3339(expires).expect("expiresAt is RFC 3339");
    assert!(expires > chrono::Utc::now(), "{question}");
    let session: Value = serve.get_json(&format!("/api/harness/session/{id}")).await;
    assert_eq!(session["session"]["pendingPermissions"][0], question["id"]);

    let path = format!(
        "/api/harness/approvals/{}",
        question["id"].as_str().unwrap()
    );
    let wrong = serve
        .post(&path, json!({"decision": "maybe"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 400);
    let answered = serve
        .post(&path, json!({"decision": "allow", "remember": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    assert_eq!(answered.json::<Value>().await.unwrap(), json!({"ok": true}));

    let mut events = String::new();
    while let Some(chunk) = turn.chunk().await.unwrap() {
        events.push_str(&String::from_utf8_lossy(&chunk));
    }
    let events = parse_sse(&events);
    assert_eq!(kinds(&events).last(), Some(&"process:exit"));
    let result = events.iter().find(|e| e.kind == "tool:result").unwrap();
    assert_eq!(result.data["isError"], false, "{:?}", result.data);
    assert!(sb.root().join("inbox.txt").exists());
    assert_eq!(next_approvals(&mut inbox, &mut seen).await, json!([]));
    assert_eq!(serve.get_json("/api/harness/approvals").await, json!([]));
    let session: Value = serve.get_json(&format!("/api/harness/session/{id}")).await;
    let rules = session["session"]["alwaysAllow"].to_string();
    assert!(rules.contains("Bash(touch inbox.txt"), "{rules}");

    for path in [path.as_str(), "/api/harness/approvals/not-a-question"] {
        let spent = serve
            .post(path, json!({"decision": "allow"}))
            .send()
            .await
            .unwrap();
        assert_eq!(spent.status(), 404, "{path}");
        let body: Value = spent.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("is waiting"), "{message}");
    }
    drop(inbox);
    serve.stop().await;
}

/// Kills the daemon of a sandbox's home when the test ends, however it ends.
struct DaemonGuard(std::path::PathBuf);

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        if let Some(pid) = std::fs::read_to_string(self.0.join("daemon/daemon.lock"))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            // SAFETY: kill only signals the daemon this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

#[tokio::test]
async fn the_approvals_inbox_shows_and_answers_an_agent_question_parked_in_the_daemon() {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [
        tool("Bash", json!({"command": "touch from-agent.txt"})),
        text("Done.")
    ]}))
    .await;
    // The server starts before any daemon or agent.
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let _daemon = DaemonGuard(sb.home.path().to_path_buf());
    let mut inbox = serve
        .get("/api/harness/approvals/events")
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    assert_eq!(next_approvals(&mut inbox, &mut seen).await, json!([]));

    // A definition of the user's (the project is not trusted).
    let agents = sb.home.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("toucher.md"),
        "---\nname: toucher\ndescription: Touches files\n---\nYou touch files.",
    )
    .unwrap();
    let run = sb
        .command(
            &api.url(),
            &["agent", "run", "toucher", "--detach", "touch it"],
        )
        .output()
        .await
        .unwrap();
    assert!(run.status.success(), "{run:?}");

    // Live: the stream shows the daemon's question without being asked again.
    let deadline = Instant::now() + Duration::from_secs(60);
    let live = loop {
        let rows = next_approvals(&mut inbox, &mut seen).await;
        if rows.as_array().is_some_and(|r| !r.is_empty()) {
            break rows;
        }
        assert!(Instant::now() < deadline, "no question reached the inbox");
    };
    let [question] = live.as_array().unwrap().as_slice() else {
        panic!("one question waits: {live}");
    };
    assert_eq!(question["source"], "daemon");
    assert_eq!(question["agent"], "toucher");
    assert_eq!(question["tool"], "Bash");
    assert_eq!(question["input"]["command"], "touch from-agent.txt");
    assert!(question.get("sessionId").is_none(), "{question}");
    assert_eq!(serve.get_json("/api/harness/approvals").await, live);
    // The same id the CLI shows.
    let pending = sb
        .command(&api.url(), &["agent", "pending", "--json"])
        .output()
        .await
        .unwrap();
    let pending: Value = serde_json::from_slice(&pending.stdout).unwrap();
    assert_eq!(pending[0]["id"], question["id"]);

    let path = format!(
        "/api/harness/approvals/{}",
        question["id"].as_str().unwrap()
    );
    let answered = serve
        .post(&path, json!({"decision": "allow"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let spent = serve
        .post(&path, json!({"decision": "allow"}))
        .send()
        .await
        .unwrap();
    assert_eq!(spent.status(), 404, "an id is answered once");

    let deadline = Instant::now() + Duration::from_secs(60);
    while !sb.root().join("from-agent.txt").exists() {
        assert!(Instant::now() < deadline, "the approved call never ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = next_approvals(&mut inbox, &mut seen).await;
        if rows == json!([]) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the answered question stayed: {rows}"
        );
    }
    drop(inbox);
    serve.stop().await;
}

/// A message no model's window holds is refused before it enters the conversation, which
/// stays usable.
#[tokio::test]
async fn a_message_too_big_for_any_model_is_refused_and_the_session_goes_on() {
    let sb = Sandbox::new();
    let api = server(json!({"turns": [text("Fine.")]})).await;
    let serve = Serve::start(&sb, &api.url(), &[]).await;
    let id = serve.create(&sb.root(), json!({})).await;
    let huge = "HELLO ".repeat(700_000);
    let refused = serve
        .start_turn(json!({"sessionId": id, "message": huge}))
        .await;
    assert_eq!(refused.status(), 400);
    let error: Value = refused.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("context window"),
        "{error}"
    );
    let next = serve.turn(&id, "small").await;
    assert!(
        kinds(&next).contains(&"chat:complete"),
        "{:?}",
        kinds(&next)
    );
    serve.stop().await;
}
