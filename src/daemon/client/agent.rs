//! `ouro agent …`: agent definitions and instances. Definitions and instances are files (read
//! and written here); runs, questions and stops go through the daemon, which runs every
//! instance (started on demand), so a run outlives the terminal that started it.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{Client, table, unexpected};
use crate::agents::instance::{Instance, InstanceError, Instances};
use crate::agents::spec::{self, Parsed};
use crate::agents::start::StartAt;
use crate::daemon::frame::{Header, PendingQuestion};
use crate::daemon::{DaemonError, Paths};

pub enum AgentCommand {
    List {
        json: bool,
    },
    /// `ouro agents`: the instance half of `list`, with the daemon's clones and the questions
    /// each waits on.
    Agents {
        json: bool,
    },
    Create {
        name: String,
        from: PathBuf,
    },
    Rm {
        name: String,
    },
    Run {
        name: String,
        task: String,
        at: StartAt,
        brain: Option<String>,
        detach: bool,
    },
    Logs {
        name: String,
        follow: bool,
    },
    Stop {
        name: String,
    },
    Pending {
        json: bool,
    },
    Approve {
        id: String,
        always: bool,
    },
    Deny {
        id: String,
        message: Option<String>,
    },
}

fn client_error(e: impl std::fmt::Display) -> DaemonError {
    DaemonError::Client(e.to_string())
}

pub async fn run(command: AgentCommand, paths: &Paths, cwd: &Path) -> Result<i32, DaemonError> {
    let instances = Instances::in_home(&paths.home);
    match command {
        AgentCommand::List { json } => list(paths, &instances, cwd, json),
        AgentCommand::Agents { json } => agents(paths, &instances, json).await,
        AgentCommand::Create { name, from } => {
            let parsed = spec::load_file(&cwd.join(&from)).map_err(client_error)?;
            warn(&parsed);
            let instance = instances
                .create(&name, &parsed.spec)
                .map_err(client_error)?;
            println!(
                "made the agent instance {name} from {} in {}",
                from.display(),
                instance.dir.display()
            );
            Ok(0)
        }
        AgentCommand::Rm { name } => {
            if instances
                .get(&name)
                .is_ok_and(|i| i.state().state.is_active() && super::lock_holder(paths).is_some())
            {
                return Err(client_error(format!(
                    "the agent {name} is running; `ouro agent stop {name}` stops it first"
                )));
            }
            instances.remove(&name).map_err(client_error)?;
            println!("removed the agent instance {name}");
            Ok(0)
        }
        AgentCommand::Run {
            name,
            task,
            at,
            brain,
            detach,
        } => {
            let instance = ensure_instance(&instances, &name, cwd)?;
            let isolated = instance
                .config()
                .is_ok_and(|c| c.isolation.as_deref() == Some("worktree"));
            let tree = crate::agents::start::prepare(&instance, cwd, &at, isolated)
                .map_err(client_error)?;
            if let Some(made) = &tree.made {
                eprintln!("ouro: {made}");
            }
            start(paths, name, task, tree.dir, brain, detach).await
        }
        AgentCommand::Logs { name, follow } => logs(&instances, &name, follow).await,
        AgentCommand::Stop { name } => {
            let mut client = Client::connect(paths, false).await?;
            match client.request(Header::AgentStop { name }).await? {
                Header::Ok { message } => println!("{message}"),
                other => return Err(unexpected(&other)),
            }
            Ok(0)
        }
        AgentCommand::Pending { json } => pending(paths, json).await,
        AgentCommand::Approve { id, always } => answer(paths, id, true, always, None).await,
        AgentCommand::Deny { id, message } => answer(paths, id, false, false, message).await,
    }
}

fn warn(parsed: &Parsed) {
    for warning in &parsed.warnings {
        eprintln!("ouro: warning: {warning}");
    }
}

/// The instance named `name`, made from the definition of that name if there is none yet.
fn ensure_instance(instances: &Instances, name: &str, cwd: &Path) -> Result<Instance, DaemonError> {
    match instances.get(name) {
        Ok(instance) => return Ok(instance),
        Err(InstanceError::Missing(_)) => {}
        Err(e) => return Err(client_error(e)),
    }
    let found = crate::app::agent_definitions(cwd)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|p| p.spec.name == name)
        .last();
    let Some(parsed) = found else {
        return Err(client_error(format!(
            "there is no agent instance or definition named {name}; `ouro agent list` shows them, `ouro agent create {name} --from FILE` makes one"
        )));
    };
    warn(&parsed);
    let instance = instances.create(name, &parsed.spec).map_err(client_error)?;
    eprintln!(
        "ouro: made the agent instance {name} from {}",
        parsed.spec.source.display()
    );
    Ok(instance)
}

async fn start(
    paths: &Paths,
    name: String,
    task: String,
    dir: PathBuf,
    brain: Option<String>,
    detach: bool,
) -> Result<i32, DaemonError> {
    let mut client = Client::connect(paths, true).await?;
    let header = Header::AgentRun {
        name: name.clone(),
        task,
        dir,
        brain,
        detach,
    };
    let (run_id, dir) = match client.request(header).await? {
        Header::AgentStarted { run_id, dir, .. } => (run_id, dir),
        other => return Err(unexpected(&other)),
    };
    if detach {
        println!("{run_id}");
        eprintln!(
            "ouro: the agent {name} runs in {} (run {run_id}); `ouro agent logs {name} -f` follows it, `ouro agent pending` lists its questions",
            dir.display()
        );
        return Ok(0);
    }
    eprintln!(
        "ouro: the agent {name} runs in {} (run {run_id})",
        dir.display()
    );
    super::render::follow(&mut client, &name, true).await
}

/// The instances as `agent list --json` and `agents --json` print them.
fn instance_rows(paths: &Paths, instances: &Instances) -> Vec<serde_json::Value> {
    let daemon_runs = super::lock_holder(paths).is_some();
    instances
        .list()
        .into_iter()
        .map(|i| {
            let mut state = i.state();
            // A daemon that stopped mid-run left its last word on disk.
            if !daemon_runs && state.state.is_active() {
                state.state = crate::agents::instance::AgentState::Stopped;
            }
            let config = i.config().ok();
            json!({
                "name": i.name,
                "state": state.state.as_str(),
                "pid": state.pid.filter(|_| daemon_runs),
                "task": state.task,
                "runId": state.run_id,
                "costUsd": state.cost_usd,
                "version": config.as_ref().and_then(|c| c.version.clone()),
                "source": config.map(|c| c.source),
            })
        })
        .collect()
}

/// `ouro agents`: every background brain (agent instances, the daemon's clones) with its
/// state and the questions it waits on, as Claude Code's `claude agents` lists its own.
async fn agents(paths: &Paths, instances: &Instances, json: bool) -> Result<i32, DaemonError> {
    let clones = match ask_if_running(paths, Header::CloneList).await? {
        Some(Header::Clones { clones }) => clones,
        Some(other) => return Err(unexpected(&other)),
        None => Vec::new(),
    };
    let questions = waiting_questions(paths).await?;
    let waiting = |name: &str| -> Vec<String> {
        questions
            .iter()
            .filter(|q| q.agent == name)
            .map(|q| q.id.clone())
            .collect()
    };
    let mut rows = Vec::new();
    for mut row in instance_rows(paths, instances) {
        let name = row["name"].as_str().unwrap_or_default().to_string();
        row["kind"] = json!("agent");
        row["pending"] = json!(waiting(&name));
        rows.push(row);
    }
    for clone in &clones {
        rows.push(json!({
            "kind": "clone",
            "name": clone.name,
            "state": if clone.unreachable.is_some() { "unreachable" } else if clone.busy { "running" } else { "idle" },
            "pid": clone.pid,
            "brain": clone.brain,
            "zone": clone.zone,
            "pending": waiting(&clone.name),
        }));
    }
    if json {
        println!("{}", serde_json::Value::Array(rows));
        return Ok(0);
    }
    if rows.is_empty() {
        println!(
            "no background agents: `ouro agent run NAME \"TASK\"` starts one, `ouro clone new NAME` makes a clone"
        );
        return Ok(0);
    }
    let lines: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            let pending = r["pending"].as_array().map_or(0, Vec::len);
            [
                cell(&r["kind"]),
                cell(&r["name"]),
                cell(&r["state"]),
                cell(&r["pid"]),
                if pending == 0 {
                    "-".into()
                } else {
                    format!("{pending} waiting")
                },
            ]
        })
        .collect();
    print!(
        "{}",
        table(["KIND", "NAME", "STATE", "PID", "QUESTIONS"], &lines)
    );
    Ok(0)
}

/// One JSON value as a table cell: `-` for none, a long text cut short.
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "-".to_string(),
        serde_json::Value::String(s) => crate::text::truncate(s, 40),
        other => other.to_string(),
    }
}

fn list(paths: &Paths, instances: &Instances, cwd: &Path, json: bool) -> Result<i32, DaemonError> {
    let defs = crate::app::agent_definitions(cwd);
    let rows = instance_rows(paths, instances);
    if json {
        let definitions: Vec<serde_json::Value> = defs
            .iter()
            .map(|d| match d {
                Ok(p) => json!({"name": p.spec.name, "source": p.spec.source, "version": p.spec.version, "description": p.spec.description}),
                Err(e) => json!({"error": e.to_string()}),
            })
            .collect();
        println!("{}", json!({"definitions": definitions, "instances": rows}));
        return Ok(0);
    }
    let mut def_rows = Vec::new();
    for d in &defs {
        match d {
            Ok(p) => def_rows.push([
                p.spec.name.clone(),
                p.spec.version.clone().unwrap_or_else(|| "-".into()),
                p.spec.source.display().to_string(),
            ]),
            Err(e) => eprintln!("ouro: {e}"),
        }
    }
    if def_rows.is_empty() {
        println!(
            "definitions: none (agent files in .claude/agents/, .ouro/agents/, ~/.ouro/agents/ or *.agent.md)"
        );
    } else {
        println!("definitions:");
        print!("{}", table(["NAME", "VERSION", "SOURCE"], &def_rows));
    }
    let inst_rows: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                cell(&r["name"]),
                cell(&r["state"]),
                cell(&r["pid"]),
                cell(&r["task"]),
                format!("${:.4}", r["costUsd"].as_f64().unwrap_or(0.0)),
            ]
        })
        .collect();
    if inst_rows.is_empty() {
        println!("\ninstances: none (`ouro agent run NAME \"TASK\"` makes one from a definition)");
    } else {
        println!("\ninstances:");
        print!(
            "{}",
            table(["NAME", "STATE", "PID", "TASK", "COST"], &inst_rows)
        );
    }
    Ok(0)
}

/// The daemon's answer to `request` (one request per connection, as it serves them); `None`
/// while no daemon runs, which is not started for a question.
async fn ask_if_running(paths: &Paths, request: Header) -> Result<Option<Header>, DaemonError> {
    match Client::connect(paths, false).await {
        Ok(mut client) => client.request(request).await.map(Some),
        Err(DaemonError::NotRunning) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every question waiting here and in the daemon's zones (none while no daemon runs).
async fn waiting_questions(paths: &Paths) -> Result<Vec<PendingQuestion>, DaemonError> {
    match ask_if_running(paths, Header::AgentPending { here_only: false }).await? {
        Some(Header::Pending { questions }) => Ok(questions),
        Some(other) => Err(unexpected(&other)),
        None => Ok(Vec::new()),
    }
}

async fn pending(paths: &Paths, json: bool) -> Result<i32, DaemonError> {
    let questions = waiting_questions(paths).await?;
    if json {
        println!("{}", serde_json::to_string(&questions).unwrap_or_default());
        return Ok(0);
    }
    if questions.is_empty() {
        println!("no question waits");
    }
    for q in questions {
        let what = q
            .input
            .get("command")
            .or_else(|| q.input.get("file_path"))
            .and_then(|v| v.as_str())
            .map_or_else(|| q.input.to_string(), String::from);
        println!(
            "{}  {}  {}({})  expires {}",
            q.id,
            q.agent,
            q.tool,
            crate::text::truncate(&what, 80),
            q.expires_at
        );
    }
    Ok(0)
}

async fn answer(
    paths: &Paths,
    id: String,
    allow: bool,
    always: bool,
    message: Option<String>,
) -> Result<i32, DaemonError> {
    let mut client = Client::connect(paths, false).await.map_err(|e| match e {
        DaemonError::NotRunning => client_error(format!(
            "no daemon runs, so no question {id} waits; `ouro agent pending` lists those that do"
        )),
        e => e,
    })?;
    let header = Header::AgentAnswer {
        request_id: id,
        allow,
        always,
        message,
        here_only: false,
    };
    match client.request(header).await? {
        Header::Ok { message } => println!("{message}"),
        other => return Err(unexpected(&other)),
    }
    Ok(0)
}

/// `ouro agent logs NAME [-f]`: the instance's log as lines; with `-f`, then new ones as they
/// come (the file is read, so this works with or without a daemon).
async fn logs(instances: &Instances, name: &str, follow: bool) -> Result<i32, DaemonError> {
    use tokio::io::{AsyncBufReadExt, AsyncSeekExt};
    let instance = instances.get(name).map_err(client_error)?;
    let path = instance.log();
    let mut offset = 0;
    loop {
        if let Ok(mut file) = tokio::fs::File::open(&path).await {
            let _ = file.seek(std::io::SeekFrom::Start(offset)).await;
            let mut lines = tokio::io::BufReader::new(file);
            let mut line = String::new();
            while lines.read_line(&mut line).await.unwrap_or(0) > 0 {
                if !line.ends_with('\n') {
                    break;
                }
                offset += line.len() as u64;
                if let Some(text) = log_line(&line) {
                    println!("{text}");
                }
                line.clear();
            }
        }
        if !follow {
            return Ok(0);
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
            _ = tokio::signal::ctrl_c() => return Ok(0),
        }
    }
}

/// One log line as text: `time  type  what`.
fn log_line(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let at = v["at"].as_str().unwrap_or_default();
    let kind = v["type"].as_str().unwrap_or_default();
    let data = &v["data"];
    let what = match kind {
        "event" => {
            let event = data.get("type").and_then(|t| t.as_str()).unwrap_or("event");
            let detail = data
                .get("text")
                .or_else(|| data.get("name"))
                .or_else(|| data.get("error"))
                .and_then(|t| t.as_str())
                .unwrap_or_default();
            format!("{event} {}", crate::text::truncate(detail, 120))
        }
        "task:result" => format!(
            "{} — {}",
            data["status"].as_str().unwrap_or_default(),
            crate::text::truncate(data["summary"].as_str().unwrap_or_default(), 200)
        ),
        _ => crate::text::truncate(&data.to_string(), 160),
    };
    Some(format!("{at}  {kind}  {what}"))
}
