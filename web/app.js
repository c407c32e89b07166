// The ouro command center: one page on `ouro serve`'s harness API. It follows each session's
// event stream (GET …/events, which replays after Last-Event-ID), so a reload or a dropped
// connection shows every turn exactly once, and the Approvals inbox's stream across sessions.

import { diffOf, escape, markdown, summary } from "./render.js";
import { showMemory } from "./memory.js";

const $ = (id) => document.getElementById(id);
const API = "/api/harness";
const state = {
  project: "",
  sessions: [],
  current: null,
  lastId: 0,
  stream: null,
  running: false,
  bubble: null,
  bubbleText: "",
  tools: new Map(),
  questions: [],
};

// ---------- errors ----------
function banner(text) {
  $("banner-text").textContent = text;
  $("banner").hidden = false;
}
$("banner-close").onclick = () => { $("banner").hidden = true; };

class ApiError extends Error {}

async function api(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError("The server cannot be reached. Is `ouro serve` still running? Start it again, then reload this page.");
  }
  if (response.status === 401) {
    await askToken("The token was not accepted. Paste the token `ouro serve` printed.");
    return api(method, path, body);
  }
  if (!response.ok) {
    let message = `${method} ${path} failed (${response.status})`;
    try { message = (await response.json()).error.message; } catch (_) { /* not JSON */ }
    throw new ApiError(message);
  }
  return response;
}

async function json(method, path, body) {
  const response = await api(method, path, body);
  return response.status === 204 ? null : response.json();
}

// ---------- auth ----------
async function exchange(token) {
  const response = await fetch("/api/auth", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
  });
  return response.ok;
}

function askToken(message) {
  banner(message);
  return new Promise((resolve) => {
    const dialog = $("token-dialog");
    $("token-form").onsubmit = async (e) => {
      e.preventDefault();
      const token = $("token").value.trim();
      if (token && await exchange(token)) {
        dialog.close();
        $("banner").hidden = true;
        resolve();
      } else {
        banner("That token is wrong. Paste the token `ouro serve` printed (or read it from serve/token in ouro's home).");
      }
    };
    if (!dialog.open) dialog.showModal();
  });
}

async function authenticate() {
  const url = new URL(location.href);
  const token = url.searchParams.get("token");
  if (token) {
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
    if (!await exchange(token)) {
      await askToken("The token in the address is not this server's. Paste the token `ouro serve` printed.");
    }
  }
}

// ---------- rendering ----------
function addMessage(kind, text) {
  const div = document.createElement("div");
  div.className = `msg ${kind}`;
  if (kind === "assistant") div.innerHTML = markdown(text); else div.textContent = text;
  $("messages").append(div);
  div.scrollIntoView({ block: "end" });
  return div;
}

function setRunning(running) {
  state.running = running;
  const usable = !!state.current && !running;
  $("input").disabled = !usable;
  $("send").disabled = !usable;
  $("interrupt").hidden = !running;
  if (usable) $("input").focus();
}

function apply(event, replay = false) {
  const box = $("messages");
  const following = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  applyEvent(event, replay);
  if (following) box.scrollTop = box.scrollHeight;
}

function applyEvent(event, replay) {
  const d = event.data;
  switch (event.type) {
    case "session:init":
      $("session-title").textContent = `${sessionLabel(state.current)} · ${d.model}`;
      setRunning(true);
      break;
    case "chat:delta":
      if (!state.bubble) { state.bubble = addMessage("assistant", ""); state.bubbleText = ""; }
      state.bubbleText += d.text;
      state.bubble.textContent = state.bubbleText;
      setRunning(true);
      break;
    case "chat:complete":
      if (!state.bubble) state.bubble = addMessage("assistant", "");
      state.bubble.innerHTML = markdown(d.text);
      state.bubble = null;
      break;
    case "tool:start": {
      const li = document.createElement("li");
      li.innerHTML = `<span class="name"></span> <span class="summary"></span><div class="result"></div>`;
      li.querySelector(".name").textContent = d.name;
      li.querySelector(".summary").textContent = summary(d.name, d.input || {});
      li.dataset.tool = d.name;
      $("activity").append(li);
      state.tools.set(d.toolUseId, li);
      li.scrollIntoView({ block: "end" });
      break;
    }
    case "tool:result": {
      const li = state.tools.get(d.toolUseId);
      if (!li) break;
      if (d.isError) li.classList.add("error");
      const content = String(d.content || "");
      const pre = `<pre>${escape(content)}</pre>`;
      li.querySelector(".result").innerHTML = content.split("\n").length > 8 || content.length > 600
        ? `<details><summary>${escape(content.split("\n")[0].slice(0, 80))} … (${content.length} chars)</summary>${pre}</details>`
        : pre;
      // A replayed history refreshes the tree once, after it.
      if (!replay && ["Edit", "Write", "MultiEdit", "NotebookEdit", "Bash"].includes(li.dataset.tool)) loadFiles();
      break;
    }
    case "permission:request":
      // A replayed request counts only while it still waits for an answer.
      if (!replay || (state.current.pendingPermissions || []).includes(d.requestId)) askPermission(d);
      break;
    case "session:complete": {
      const last = [...$("messages").querySelectorAll(".msg.assistant")].pop();
      if (last) {
        const badge = document.createElement("div");
        badge.className = "badge";
        const u = d.usage || {};
        const tokens = (u.input_tokens || 0) + (u.cache_read_input_tokens || 0) + (u.cache_creation_input_tokens || 0);
        badge.textContent = `$${Number(d.costUsd || 0).toFixed(4)} · ${tokens} in · ${u.output_tokens || 0} out`;
        last.append(badge);
      }
      break;
    }
    case "session:error":
      addMessage("error", d.error);
      banner(`The turn reported an error: ${d.error}`);
      break;
    case "process:exit": {
      // Questions of a finished turn can no longer be answered.
      state.questions = [];
      const dialog = $("permission-dialog");
      if (dialog.open) { dialog.onclose = null; dialog.close(); }
      state.bubble = null;
      setRunning(false);
      loadSessions();
      break;
    }
  }
}

// Parallel calls may ask at once: one dialog at a time, the others wait their turn.
function askPermission(d) {
  if (state.questions.some((q) => q.requestId === d.requestId) || settledElsewhere(d)) return;
  state.questions.push(d);
  if (state.questions.length === 1) showQuestion();
}

function showQuestion() {
  const d = state.questions[0];
  if (!d) return;
  const dialog = $("permission-dialog");
  $("permission-what").textContent = `${d.toolName} wants to run:`;
  $("permission-input").innerHTML = diffOf(d.toolName, d.input || {});
  dialog.onclose = async () => {
    const choice = dialog.returnValue;
    const decision = choice === "deny" || choice === "" ? "deny" : "allow";
    try {
      await json("POST", `${API}/permission`, { sessionId: d.sessionId, requestId: d.requestId, decision, remember: choice === "always" });
    } catch (e) { banner(e.message); }
    // By id: the inbox may have dropped it from the queue while the answer was on its way.
    state.questions = state.questions.filter((q) => q.requestId !== d.requestId);
    showQuestion();
  };
  dialog.returnValue = "";
  dialog.showModal();
}

// ---------- approvals inbox ----------
// Every question parked in any session of any project, and by the daemon's agents, from
// GET …/approvals/events, which sends the whole list again on every change: answered here, in
// another tab, or by the session's dialog, it leaves every open page.
const inbox = { ids: new Set(), seen: new Set() };

// A question the inbox listed and lists no more was answered (or expired) somewhere else.
function settledElsewhere(d) {
  return inbox.seen.has(d.requestId) && !inbox.ids.has(d.requestId);
}

function followApprovals() {
  const source = new EventSource(`${API}/approvals/events`);
  source.addEventListener("approvals", (e) => showApprovals(JSON.parse(e.data)));
}

function showApprovals(rows) {
  inbox.ids = new Set(rows.map((r) => r.id));
  for (const r of rows) inbox.seen.add(r.id);
  $("approvals-count").textContent = String(rows.length);
  $("approvals-count").hidden = rows.length === 0;
  $("approvals-empty").hidden = rows.length > 0;
  const ul = $("approvals");
  ul.innerHTML = "";
  for (const r of rows) ul.append(approvalItem(r));
  dropSettledQuestions();
}

function approvalItem(r) {
  const li = document.createElement("li");
  li.dataset.id = r.id;
  li.innerHTML = `<div><span class="name"></span> <span class="summary"></span></div>
    <div class="where"><button class="open" type="button"></button> <span class="project"></span> · <span class="expires"></span></div>
    <details><summary>Input</summary><pre></pre></details>
    <div class="row"><button class="allow" type="button">Allow</button><button class="always" type="button">Allow always</button><button class="deny" type="button">Deny</button></div>`;
  li.querySelector(".name").textContent = r.tool;
  li.querySelector(".summary").textContent = summary(r.tool, r.input || {});
  const open = li.querySelector(".open");
  if (r.agent) {
    // An agent the daemon runs: it has no session here to open.
    open.textContent = `agent ${r.agent}`;
    open.title = `ouro agent logs ${r.agent} shows what it did`;
    open.disabled = true;
    li.querySelector(".project").textContent = r.source;
  } else {
    open.textContent = r.sessionTitle || "(session)";
    open.title = "Open this session";
    open.onclick = () => openFromInbox(r);
    li.querySelector(".project").textContent = String(r.projectRoot || "").split("/").pop();
  }
  li.querySelector(".expires").textContent = `denied at ${new Date(r.expiresAt).toLocaleTimeString()} unless answered`;
  li.querySelector("pre").innerHTML = diffOf(r.tool, r.input || {});
  if (r.reason) li.querySelector("summary").textContent = `Input · ${r.reason}`;
  if (r.rule) li.querySelector(".always").title = `Adds ${r.rule} to the session's rules`;
  const answer = async (decision, remember) => {
    for (const b of li.querySelectorAll(".row button")) b.disabled = true;
    try {
      await json("POST", `${API}/approvals/${encodeURIComponent(r.id)}`, { decision, remember });
    } catch (e) {
      banner(e.message);
      for (const b of li.querySelectorAll(".row button")) b.disabled = false;
    }
  };
  li.querySelector(".allow").onclick = () => answer("allow", false);
  li.querySelector(".always").onclick = () => answer("allow", true);
  li.querySelector(".deny").onclick = () => answer("deny", false);
  return li;
}

// The open session's dialog lets go of questions answered elsewhere.
function dropSettledQuestions() {
  const head = state.questions[0];
  state.questions = state.questions.filter((q) => !settledElsewhere(q));
  const dialog = $("permission-dialog");
  if (head && settledElsewhere(head) && dialog.open) {
    dialog.onclose = null;
    dialog.close();
    showQuestion();
  }
}

async function openFromInbox(r) {
  if (r.projectRoot && r.projectRoot !== state.project) {
    state.project = r.projectRoot;
    $("project").value = state.project;
    localStorage.setItem("ouro.project", state.project);
    await loadSessions();
  }
  openSession(r.sessionId);
}

$("approvals-button").onclick = () => {
  const panel = $("approvals-panel");
  panel.scrollIntoView({ block: "start" });
  const first = panel.querySelector("button.allow");
  (first || panel).focus();
};

// ---------- sessions ----------
function sessionLabel(s) {
  if (!s) return "";
  return `${s.persona || "no persona"} · ${s.mode} · ${s.brain}`;
}

async function loadProjects() {
  const projects = await json("GET", `${API}/projects`);
  $("projects").innerHTML = "";
  for (const p of projects) {
    const option = document.createElement("option");
    option.value = p.projectRoot;
    $("projects").append(option);
  }
  state.project = localStorage.getItem("ouro.project") || (projects[0] && projects[0].projectRoot) || "";
  $("project").value = state.project;
}

async function loadSessions() {
  if (!state.project) return;
  try {
    state.sessions = await json("GET", `${API}/session/list?projectRoot=${encodeURIComponent(state.project)}`);
  } catch (e) { banner(e.message); return; }
  const ul = $("sessions");
  ul.innerHTML = "";
  for (const s of state.sessions) {
    const li = document.createElement("li");
    li.tabIndex = 0;
    li.dataset.id = s.id;
    if (state.current && s.id === state.current.id) li.classList.add("active");
    const title = document.createElement("span");
    title.textContent = s.lastMessage ? s.lastMessage.slice(0, 60) : "(no messages yet)";
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = `${sessionLabel(s)} · ${new Date(s.updatedAt).toLocaleString()} · $${Number(s.costUsd || 0).toFixed(4)}${s.running ? " · running" : ""}`;
    const del = document.createElement("button");
    del.className = "delete";
    del.textContent = "✕";
    del.setAttribute("aria-label", "Delete session");
    del.onclick = async (e) => {
      e.stopPropagation();
      if (!confirm("Delete this session and its history?")) return;
      try {
        await json("DELETE", `${API}/session/${s.id}`);
        if (state.current && state.current.id === s.id) closeSession();
        loadSessions();
      } catch (err) { banner(err.message); }
    };
    li.append(title, del, meta);
    li.onclick = () => openSession(s.id);
    li.onkeydown = (e) => { if (e.key === "Enter") openSession(s.id); };
    ul.append(li);
  }
}

function closeSession() {
  state.questions = [];
  if (state.stream) state.stream.close();
  state.stream = null;
  state.current = null;
  $("messages").innerHTML = "";
  $("activity").innerHTML = "";
  $("session-title").textContent = "";
  setRunning(false);
}

async function openSession(id) {
  closeSession();
  let history;
  try { history = await json("GET", `${API}/session/${id}/history`); } catch (e) { banner(e.message); return; }
  state.current = history.session;
  sessionStorage.setItem("ouro.session", id);
  $("session-title").textContent = sessionLabel(state.current);
  state.lastId = 0;
  state.tools = new Map();
  for (const turn of history.turns) {
    if (turn.message) addMessage("user", turn.message);
    for (const e of turn.events) {
      const { id: eventId, type, ...data } = e;
      state.lastId = Math.max(state.lastId, eventId);
      apply({ type, data }, true);
    }
  }
  setRunning(!!state.current.running);
  follow(id);
  loadSessions();
  loadFiles();
}

// EventSource sends the cookie, and Last-Event-ID on each reconnect; ids at or below the last
// one applied are dropped, so nothing shows twice.
function follow(id) {
  const source = new EventSource(`${API}/session/${id}/events?after=${state.lastId}`);
  state.stream = source;
  const names = ["session:init", "chat:delta", "chat:complete", "tool:start", "tool:result", "permission:request", "session:complete", "session:error", "process:exit"];
  for (const name of names) {
    source.addEventListener(name, (e) => {
      const eventId = Number(e.lastEventId);
      if (!state.current || state.current.id !== id || eventId <= state.lastId) return;
      state.lastId = eventId;
      apply({ type: name, data: JSON.parse(e.data) });
    });
  }
  const LOST = "The connection to ouro serve was lost";
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) banner(`${LOST}. Start \`ouro serve\` again, then reload this page; nothing is lost.`);
    else banner(`${LOST}; reconnecting. If the server stopped, start it again: the turn shows up where it left off.`);
  };
  source.onopen = () => { if ($("banner-text").textContent.startsWith(LOST)) $("banner").hidden = true; };
}

async function loadFiles() {
  if (!state.project) return;
  const session = state.current ? `&sessionId=${state.current.id}` : "";
  let listing;
  try { listing = await json("GET", `${API}/files?projectRoot=${encodeURIComponent(state.project)}${session}`); } catch (e) { return; }
  const ul = $("files");
  ul.innerHTML = "";
  const shown = new Set();
  for (const f of listing.files) {
    const parts = f.path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      if (shown.has(dir)) continue;
      shown.add(dir);
      const row = document.createElement("li");
      row.className = "dir";
      row.style.paddingLeft = `${(i - 1) * 0.8}rem`;
      row.textContent = `${parts[i - 1]}/`;
      ul.append(row);
    }
    const li = document.createElement("li");
    const depth = parts.length - 1;
    li.style.paddingLeft = `${depth * 0.8}rem`;
    li.textContent = f.path.split("/").pop();
    li.title = f.path;
    li.dataset.path = f.path;
    if (f.changed) li.classList.add("changed");
    ul.append(li);
  }
}

// ---------- actions ----------
async function send() {
  const text = $("input").value;
  if (!text.trim() || !state.current || state.running) return;
  const sessionId = state.current.id;
  setRunning(true);
  addMessage("user", text);
  $("input").value = "";
  try {
    const response = await api("POST", `${API}/turn`, { sessionId, message: text, turnId: crypto.randomUUID() });
    // The session's event stream shows the turn; this response's copy is not needed.
    response.body && response.body.cancel();
  } catch (e) {
    banner(e.message);
    $("input").value = text;
    setRunning(false);
  }
}

async function interrupt() {
  if (!state.current || !state.running) return;
  try { await json("POST", `${API}/interrupt`, { sessionId: state.current.id }); } catch (e) { banner(e.message); }
}

$("composer").onsubmit = (e) => { e.preventDefault(); send(); };
$("input").onkeydown = (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
};
$("interrupt").onclick = interrupt;
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && state.running && !document.querySelector("dialog[open]")) interrupt();
});

$("project").onchange = () => {
  state.project = $("project").value.trim();
  localStorage.setItem("ouro.project", state.project);
  closeSession();
  loadSessions();
  loadFiles();
  loadMemory();
};

// ---------- memory ----------
async function loadMemory(params = {}) {
  if (!state.project) return;
  const query = new URLSearchParams({ projectRoot: state.project, ...params });
  try {
    showMemory(await json("GET", `${API}/memory?${query}`), (id) => loadMemory({ id }));
  } catch (e) { banner(e.message); }
}
$("memory-form").onsubmit = (e) => {
  e.preventDefault();
  const q = $("memory-query").value.trim();
  loadMemory(q ? { q } : {});
};

$("new-session").onclick = async () => {
  if (!state.project) { banner("Type the project's absolute path in the Project box first."); return; }
  const select = $("persona");
  select.innerHTML = '<option value="">None</option>';
  const tools = new Map();
  try {
    for (const p of await json("GET", `${API}/personas?projectRoot=${encodeURIComponent(state.project)}`)) {
      if (p.error) { banner(p.error); continue; }
      const option = document.createElement("option");
      option.value = p.id;
      option.textContent = `${p.name} — ${p.description}`;
      select.append(option);
      tools.set(p.id, p.tools ? p.tools.join(", ") : "every tool");
    }
  } catch (e) { banner(e.message); return; }
  select.onchange = () => { $("persona-tools").textContent = select.value ? `Tools: ${tools.get(select.value)}` : ""; };
  select.onchange();
  $("new-dialog").showModal();
};

$("new-dialog").onclose = async () => {
  if ($("new-dialog").returnValue !== "create") return;
  const body = {
    projectRoot: state.project,
    persona: $("persona").value || null,
    mode: $("mode").value,
    brain: $("brain").value.trim() || undefined,
    permissionMode: $("permission-mode").value || undefined,
  };
  try {
    const created = await json("POST", `${API}/session/create`, body);
    await loadSessions();
    openSession(created.session.id);
  } catch (e) { banner(e.message); }
};

// ---------- start ----------
(async () => {
  try {
    await authenticate();
    followApprovals();
    await loadProjects();
    await loadSessions();
    loadFiles();
    loadMemory();
    const again = sessionStorage.getItem("ouro.session");
    if (again && state.sessions.some((s) => s.id === again)) openSession(again);
  } catch (e) { banner(e.message); }
})();
