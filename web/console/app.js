// The operator console: sign in, sessions, the live session view with tool
// cards, approvals and questions, the approvals inbox, tasks and tools.
import { api, apiText, auth, follow, followStream, ApiError } from "/console/api.js";
import { h, markdown, pretty, countdown, time, badge, riskBadge } from "/console/render.js";

const $ = (id) => document.getElementById(id);
const POLL_MS = 2000;

const state = {
  sessions: new Map(), // id -> session view
  cursor: null,
  current: null, // open session id
  view: "empty",
  stop: null, // stops the event stream
  live: null, // per-session render state
  poll: null,
  core: null, // open core id (Cores view)
  coreFile: null, // open core file path
};

// ---------------------------------------------------------------- helpers

function sessionName(s) {
  return (s && s.title) || "Untitled " + String(s && s.id).slice(0, 8);
}

function say(el, text, isError) {
  el.textContent = text || "";
  el.classList.toggle("error", !!isError);
}

function errorText(e) {
  return e instanceof ApiError ? `${e.message} (${e.code})` : String(e && e.message ? e.message : e);
}

function argSummary(tool, args) {
  if (!args || typeof args !== "object") return "";
  const key = ["command", "path", "url", "query", "question", "task_id", "name"].find((k) => typeof args[k] === "string");
  const v = key ? args[key] : "";
  return v.length > 120 ? v.slice(0, 117) + "…" : v;
}

// ---------------------------------------------------------------- sign in

async function signIn(token) {
  auth.token = token;
  try {
    await loadSessions(true);
  } catch (e) {
    auth.token = "";
    throw e;
  }
  $("signin").hidden = true;
  $("app").hidden = false;
  $("views").hidden = false;
  $("signout").hidden = false;
  $("nav-principals").hidden = claims().role !== "admin";
  $("nav-usage").hidden = claims().role !== "admin";
  $("nav-audit").hidden = claims().role !== "admin";
  $("nav-packages").hidden = claims().role !== "admin";
  $("nav-channels").hidden = claims().role === "member";
  refreshApprovalCount();
  route();
}

/** The token stopped working (expired or revoked): back to the sign-in form. */
function tokenRejected() {
  auth.token = "";
  if (state.stop) state.stop();
  state.stop = null;
  state.live = null;
  state.current = null;
  clearInterval(state.poll);
  $("app").hidden = true;
  $("views").hidden = true;
  $("signout").hidden = true;
  $("signin").hidden = false;
  say($("signin-error"), "Your token is no longer accepted; sign in again.", true);
  $("token").focus();
}

function signOut() {
  auth.token = "";
  if (state.stop) state.stop();
  location.hash = "";
  location.reload();
}

/**
 * The token's own claims, for what the console shows (the Principals view
 * for admins). Display only: the server decides every request by itself.
 */
function claims() {
  try {
    const part = auth.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part)) || {};
  } catch {
    return {};
  }
}

// ---------------------------------------------------------------- sessions

async function loadSessions(reset) {
  const q = new URLSearchParams({ limit: "20" });
  if (!reset && state.cursor) q.set("cursor", state.cursor);
  const page = await api("GET", "/v1/sessions?" + q);
  if (reset) {
    state.sessions.clear();
    $("sessions").textContent = "";
  }
  for (const s of page.items) {
    state.sessions.set(s.id, s);
    $("sessions").append(sessionItem(s));
  }
  state.cursor = page.next_cursor || null;
  $("more-sessions").hidden = !state.cursor;
  if (!state.sessions.size) $("sessions").append(h("li.muted", { text: "No sessions yet." }));
  markCurrent();
}

/** Pick up sessions created elsewhere (another tab, the API, a channel). */
async function refreshSessions() {
  if (!auth.token || $("app").hidden) return;
  let page;
  try {
    page = await api("GET", "/v1/sessions?limit=20");
  } catch {
    return;
  }
  const fresh = page.items.filter((s) => !state.sessions.has(s.id));
  if (!fresh.length) return;
  $("sessions").querySelector("li.muted")?.remove();
  for (const s of fresh.reverse()) {
    state.sessions.set(s.id, s);
    $("sessions").prepend(sessionItem(s));
  }
  markCurrent();
}

function sessionItem(s) {
  return h(
    "li",
    { dataset: { id: s.id } },
    h("a", { href: "#/s/" + s.id, text: sessionName(s) }),
    h("span.muted.small", { text: " " + time(s.updated_at || s.created_at) }),
  );
}

function markCurrent() {
  for (const a of $("sessions").querySelectorAll("a")) {
    const on = a.parentElement.dataset.id === state.current;
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

async function createSession(title) {
  const s = await api("POST", "/v1/sessions", title ? { title } : {});
  state.sessions.set(s.id, s);
  const empty = $("sessions").querySelector("li.muted");
  if (empty) empty.remove();
  $("sessions").prepend(sessionItem(s));
  history.pushState(null, "", "#/s/" + s.id);
  route();
}

async function getSession(id) {
  if (state.sessions.has(id)) return state.sessions.get(id);
  const s = await api("GET", "/v1/sessions/" + encodeURIComponent(id));
  state.sessions.set(id, s);
  return s;
}

async function search(q) {
  const box = $("search-results");
  box.hidden = false;
  box.textContent = "";
  if (!q.trim()) {
    box.hidden = true;
    return;
  }
  try {
    const r = await api("GET", "/v1/search?" + new URLSearchParams({ q }));
    box.append(h("h3", { text: `Results for “${q}”` }));
    if (!r.results.length) box.append(h("p.muted", { text: "Nothing found." }));
    const ul = h("ul");
    for (const hit of r.results) {
      const snippet = hit.content.length > 100 ? hit.content.slice(0, 97) + "…" : hit.content;
      ul.append(h("li", null, h("a", { href: "#/s/" + hit.session_id, text: `${hit.role}: ${snippet}` })));
    }
    box.append(ul);
  } catch (e) {
    box.append(h("p.error", { text: errorText(e) }));
  }
}

// ---------------------------------------------------------------- routing

function route() {
  if (!auth.token) return;
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  let view = "empty";
  if (parts[0] === "s" && parts[1]) {
    openSession(parts[1]);
    view = parts[2] === "tasks" ? "tasks" : parts[2] === "tools" ? "tools" : "session";
  } else if (parts[0] === "approvals") view = "approvals";
  else if (parts[0] === "tasks") view = "tasks";
  else if (parts[0] === "tools") view = "tools";
  else if (parts[0] === "principals") view = "principals";
  else if (parts[0] === "channels") view = "channels";
  else if (parts[0] === "usage") view = "usage";
  else if (parts[0] === "audit") view = "audit";
  else if (parts[0] === "packages") view = "packages";
  else if (parts[0] === "cores") {
    view = "cores";
    state.core = parts[1] ? decodeURIComponent(parts[1]) : state.core || null;
  }
  else if (state.current) view = "session";
  show(view);
}

function show(view) {
  state.view = view;
  for (const v of ["empty", "session", "approvals", "tasks", "tools", "principals", "channels", "cores", "usage", "audit", "packages"]) $("view-" + v).hidden = v !== view;
  if (view === "session" && !state.current) $("view-empty").hidden = false;
  const base = state.current ? "#/s/" + state.current : "#/";
  $("nav-session").href = base;
  $("nav-tasks").href = state.current ? base + "/tasks" : "#/tasks";
  $("nav-tools").href = state.current ? base + "/tools" : "#/tools";
  const navFor = { session: "nav-session", empty: "nav-session", approvals: "nav-approvals", tasks: "nav-tasks", tools: "nav-tools", principals: "nav-principals", channels: "nav-channels", cores: "nav-cores", usage: "nav-usage", audit: "nav-audit", packages: "nav-packages" };
  for (const id of ["nav-session", "nav-approvals", "nav-tasks", "nav-tools", "nav-principals", "nav-channels", "nav-cores", "nav-usage", "nav-audit", "nav-packages"]) {
    if (navFor[view] === id) $(id).setAttribute("aria-current", "page");
    else $(id).removeAttribute("aria-current");
  }
  clearInterval(state.poll);
  state.poll = null;
  if (view !== "usage" && state.stopWarnings) {
    state.stopWarnings();
    state.stopWarnings = null;
  }
  if (view === "approvals") poll(loadApprovals);
  else if (view === "tasks") poll(loadTasks);
  else if (view === "tools") loadTools();
  else if (view === "principals") loadPrincipals();
  else if (view === "channels") loadChannels();
  else if (view === "cores") loadCores();
  else if (view === "usage") openUsage();
  else if (view === "audit") loadAudit(true);
  else if (view === "packages") loadPackages();
}

function poll(fn) {
  fn();
  state.poll = setInterval(fn, POLL_MS);
}

// ---------------------------------------------------------------- live session

function openSession(id) {
  if (state.current === id && state.live) return;
  if (state.stop) state.stop();
  state.current = id;
  markCurrent();
  const log = $("log");
  log.textContent = "";
  stick = true;
  state.live = {
    id,
    runningTurn: null,
    calls: new Map(), // call_id -> card
    openCalls: new Map(), // turn_id -> call_id awaiting a result
    approvals: new Map(), // approval_id -> element
    questions: new Map(), // clarification_id -> element
    messages: new Set(), // seq of rendered messages (guards against any duplicate)
    ended: new Set(), // turns whose terminal event has arrived
  };
  setRunning(null);
  $("session-title").textContent = "Loading…";
  $("session-meta").textContent = "";
  getSession(id)
    .then((s) => {
      if (state.current !== id) return;
      $("session-title").textContent = sessionName(s);
      $("session-meta").textContent = `core ${s.core} · provider ${s.provider} · workspace ${s.workspace} · ${s.id}`;
      document.title = sessionName(s) + " · demiurge";
    })
    .catch((e) => {
      $("session-title").textContent = "Session not found";
      $("session-meta").textContent = errorText(e);
    });
  const live = state.live;
  state.stop = follow(
    id,
    0,
    (ev) => {
      if (state.live === live) onEvent(ev);
    },
    (s) => {
      if (state.live !== live) return;
      if (s === "unauthorized") return tokenRejected();
      const text = { live: "● live", reconnecting: "○ reconnecting…", gone: "session not found" }[s] || s;
      say($("conn"), text, s !== "live");
    },
  );
}

function setRunning(turnId) {
  const live = state.live;
  if (live) live.runningTurn = turnId;
  $("stop").hidden = !turnId;
  $("turn-status").textContent = turnId ? "Turn running…" : "";
}

// The log follows new events while the reader is at its bottom; scrolling up
// to read stops that until they scroll back down.
let stick = true;

function addToLog(el) {
  $("log").append(el);
}

function followBottom() {
  const log = $("log");
  if (stick) log.scrollTop = log.scrollHeight;
}

function onEvent(ev) {
  handle(ev);
  followBottom();
}

function handle(ev) {
  const live = state.live;
  const d = ev.data || {};
  switch (ev.type) {
    case "turn.started":
      setRunning(ev.turn_id);
      addToLog(h("article.msg.user", { dataset: { seq: ev.seq }, "aria-label": "You" }, h("div.who", { text: "You" }), h("div.body", null, markdown(d.input))));
      break;
    case "message":
      if (live.messages.has(ev.seq)) return;
      live.messages.add(ev.seq);
      addToLog(
        h(
          "article.msg." + (d.role === "user" ? "user" : "assistant"),
          { dataset: { seq: ev.seq }, "aria-label": d.role === "user" ? "You" : "Assistant" },
          h("div.who", { text: d.role === "user" ? "You" : "Assistant" }),
          h("div.body", null, markdown(d.content)),
        ),
      );
      break;
    case "tool.call":
      toolCall(ev);
      break;
    case "tool.output": {
      const card = live.calls.get(d.call_id);
      if (!card) break;
      const out = card.querySelector(".output");
      out.hidden = false;
      const span = h("span", { text: d.text });
      if (d.stream === "stderr") span.className = "stderr";
      out.append(span);
      if (d.truncated) out.append(h("span.muted", { text: "\n[live output truncated; the full result follows]" }));
      out.scrollTop = out.scrollHeight;
      break;
    }
    case "tool.result":
      toolResult(ev);
      break;
    case "approval.requested":
      approvalRequested(ev);
      break;
    case "approval.resolved": {
      const el = live.approvals.get(d.approval_id);
      if (el) settleApproval(el, d.decision, d.reason);
      refreshApprovalCount();
      break;
    }
    case "clarify.requested":
      question(ev);
      break;
    case "clarify.answered": {
      const el = live.questions.get(d.clarification_id);
      if (el) settleQuestion(el, d.answer);
      break;
    }
    case "task.updated":
      addToLog(
        h("p.note", { dataset: { seq: ev.seq } }, "Task ", h("code", { text: String(d.task_id || "").slice(0, 12) }), " ", badge(d.status || "?"), " ", d.summary || ""),
      );
      if (state.view === "tasks") loadTasks();
      break;
    case "turn.completed":
      live.ended.add(ev.turn_id);
      if (live.runningTurn === ev.turn_id) setRunning(null);
      addToLog(h("p.note.done", { text: `Turn completed · ${d.steps ?? "?"} step(s)` }));
      break;
    case "turn.failed":
      live.ended.add(ev.turn_id);
      if (live.runningTurn === ev.turn_id) setRunning(null);
      addToLog(h("p.note.error", { role: "note", text: `Turn failed (${d.reason || "error"}): ${d.error || ""}` }));
      break;
    case "turn.cancelled":
      live.ended.add(ev.turn_id);
      if (live.runningTurn === ev.turn_id) setRunning(null);
      addToLog(h("p.note.warn", { text: `Turn cancelled (${d.reason || "cancelled"})` }));
      break;
    default:
      addToLog(h("p.note", { text: `${ev.type} ${pretty(d)}` }));
  }
}

function toolCall(ev) {
  const d = ev.data;
  const status = badge("running");
  status.classList.add("status");
  const summary = argSummary(d.tool, d.arguments);
  const details = h(
    "details.details",
    { open: $("display").value === "full" },
    h("summary", { text: "Details" }),
    h("h4", { text: "Arguments" }),
    h("pre", { text: pretty(d.arguments) }),
    h("div.result"),
  );
  const card = h(
    "article.tool",
    { dataset: { call: d.call_id, seq: ev.seq }, "aria-label": "Tool " + d.tool },
    h("div.tool-head", null, h("span.tool-name", { text: d.tool }), summary ? h("code.tool-arg", { text: summary }) : null, status),
    h("pre.output", { hidden: true, "aria-label": "Output of " + d.tool, tabindex: "0" }),
    h("div.slot"),
    details,
  );
  state.live.calls.set(d.call_id, card);
  if (ev.turn_id) state.live.openCalls.set(ev.turn_id, d.call_id);
  addToLog(card);
}

function toolResult(ev) {
  const d = ev.data;
  const card = state.live.calls.get(d.call_id);
  if (!card) return;
  if (ev.turn_id && state.live.openCalls.get(ev.turn_id) === d.call_id) state.live.openCalls.delete(ev.turn_id);
  const old = card.querySelector(".status");
  const b = badge(d.status);
  b.classList.add("status");
  old.replaceWith(b);
  card.dataset.status = d.status;
  const res = card.querySelector(".result");
  res.textContent = "";
  res.append(h("h4", { text: "Result" }));
  if (d.content !== null && d.content !== undefined && d.content !== "") res.append(h("pre", { text: pretty(d.content) }));
  if (d.data !== null && d.data !== undefined) res.append(h("pre", { text: pretty(d.data) }));
}

// ---------------------------------------------------------------- approvals

function approvalBlock(a, opts) {
  const choices = a.choices && a.choices.length ? a.choices : ["allow_once", "deny"];
  const status = h("p.decided", { role: "status" });
  const buttons = h("div.row.buttons");
  const labels = { allow_once: "Allow once", allow_session: "Allow for session", deny: "Deny" };
  for (const c of ["allow_once", "allow_session", "deny"]) {
    if (!choices.includes(c)) continue;
    buttons.append(
      h("button", {
        type: "button",
        class: c === "deny" ? "danger" : c === "allow_once" ? "primary" : "",
        text: labels[c],
        onclick: async (e) => {
          const all = buttons.querySelectorAll("button");
          all.forEach((b) => (b.disabled = true));
          try {
            await api("POST", "/v1/approvals/" + encodeURIComponent(a.id), { decision: c });
            settleApproval(el, c);
            if (opts && opts.onDecided) opts.onDecided();
          } catch (err) {
            all.forEach((b) => (b.disabled = false));
            say(status, errorText(err), true);
            e.target.focus();
          }
        },
      }),
    );
  }
  const expiry = h("span.expiry", { dataset: { expires: a.expires_at }, text: countdown(a.expires_at) });
  const el = h(
    "div.approval",
    { role: "group", "aria-label": "Approval for " + a.tool, dataset: { approval: a.id } },
    h(
      "p.approval-head",
      null,
      h("strong", { text: "Approval needed" }),
      " ",
      riskBadge(a.risk),
      " ",
      opts && opts.showTool ? h("span.tool-name", { text: a.tool }) : null,
      " rule ",
      h("code", { text: a.rule || "?" }),
      expiry,
    ),
    a.reason ? h("p.small", { text: a.reason }) : null,
    a.preview !== undefined && a.preview !== null ? h("pre.preview", { "aria-label": "Preview", tabindex: "0", text: pretty(a.preview) }) : null,
    opts && opts.session ? opts.session : null,
    buttons,
    status,
  );
  return el;
}

function settleApproval(el, decision, reason) {
  if (el.dataset.settled) return;
  el.dataset.settled = decision || "decided";
  el.classList.add("settled");
  const buttons = el.querySelector(".buttons");
  if (buttons) buttons.remove();
  const exp = el.querySelector(".expiry");
  if (exp) exp.remove();
  const words = { allow_once: "Allowed once", allow_session: "Allowed for this session", deny: "Denied" };
  say(el.querySelector(".decided"), (words[decision] || decision || "Decided") + (reason ? ` (${reason})` : ""));
}

function approvalRequested(ev) {
  const d = ev.data;
  const a = { ...d, id: d.approval_id };
  const el = approvalBlock(a, { showTool: false });
  state.live.approvals.set(d.approval_id, el);
  const callId = ev.turn_id && state.live.openCalls.get(ev.turn_id);
  const card = callId && state.live.calls.get(callId);
  if (card) card.querySelector(".slot").append(el);
  else {
    el.prepend(h("span.tool-name", { text: d.tool }));
    addToLog(el);
  }
  refreshApprovalCount();
}

async function loadApprovals() {
  const list = $("approvals-list");
  let r;
  try {
    r = await api("GET", "/v1/approvals?state=pending");
  } catch (e) {
    list.textContent = "";
    list.append(h("p.error", { text: errorText(e) }));
    return;
  }
  setApprovalCount(r.items.length);
  const seen = new Set();
  for (const a of r.items) {
    seen.add(a.id);
    if (list.querySelector(`[data-approval="${CSS.escape(a.id)}"]`)) continue;
    const s = state.sessions.get(a.session_id);
    const link = h("p.small", null, "Session ", h("a", { href: "#/s/" + a.session_id, text: s ? sessionName(s) : a.session_id.slice(0, 8) }), ` · requested ${time(a.created_at)} by ${a.principal}`);
    const el = approvalBlock(a, { showTool: true, session: link, onDecided: () => setTimeout(loadApprovals, 800) });
    el.classList.add("card");
    list.prepend(el);
  }
  for (const el of list.querySelectorAll("[data-approval]")) {
    if (!seen.has(el.dataset.approval) && !el.dataset.settled) el.remove();
    else if (!seen.has(el.dataset.approval) && el.dataset.settled && !el.dataset.fading) {
      el.dataset.fading = "1";
      setTimeout(() => el.remove(), 4000);
    }
  }
  const empty = list.querySelector(".empty-note");
  if (!list.querySelector("[data-approval]")) {
    if (!empty) list.append(h("p.muted.empty-note", { text: "Nothing is waiting for a decision." }));
  } else if (empty) empty.remove();
}

function setApprovalCount(n) {
  $("approvals-count").textContent = n ? String(n) : "";
  $("approvals-count").setAttribute("aria-label", n ? `${n} pending` : "");
}

async function refreshApprovalCount() {
  try {
    const r = await api("GET", "/v1/approvals?state=pending");
    setApprovalCount(r.items.length);
  } catch {
    /* the badge is a hint only */
  }
}

// ---------------------------------------------------------------- questions

function question(ev) {
  const d = ev.data;
  const id = d.clarification_id;
  const status = h("p.decided", { role: "status" });
  const inputId = "answer-" + id;
  const input = h("input", { id: inputId, type: "text", "aria-label": "Answer", autocomplete: "off" });
  const submit = async (answer) => {
    if (!answer.trim()) return;
    form.querySelectorAll("button,input").forEach((b) => (b.disabled = true));
    try {
      await api("POST", "/v1/clarifications/" + encodeURIComponent(id), { answer });
      settleQuestion(el, answer);
    } catch (err) {
      form.querySelectorAll("button,input").forEach((b) => (b.disabled = false));
      say(status, errorText(err), true);
    }
  };
  const form = h(
    "form.row",
    { onsubmit: (e) => (e.preventDefault(), submit(input.value)) },
    input,
    h("button", { type: "submit", class: "primary", text: "Submit answer" }),
  );
  const choices = (d.choices || []).map((c) => h("button", { type: "button", text: String(c), onclick: () => submit(String(c)) }));
  const el = h(
    "div.question",
    { role: "group", "aria-label": "Question", dataset: { question: id } },
    h("p", null, h("strong", { text: "Question: " }), d.question),
    choices.length ? h("div.row.choices", null, choices) : null,
    form,
    h("span.expiry.small", { dataset: { expires: d.expires_at }, text: countdown(d.expires_at) }),
    status,
  );
  state.live.questions.set(id, el);
  const callId = ev.turn_id && state.live.openCalls.get(ev.turn_id);
  const card = callId && state.live.calls.get(callId);
  if (card) card.querySelector(".slot").append(el);
  else addToLog(el);
}

function settleQuestion(el, answer) {
  if (el.dataset.settled) return;
  el.dataset.settled = "1";
  for (const x of el.querySelectorAll("form, .choices, .expiry")) x.remove();
  say(el.querySelector(".decided"), "Answered: " + answer);
}

// ---------------------------------------------------------------- tasks

async function loadTasks() {
  const list = $("tasks-list");
  const sid = state.current;
  $("tasks-scope").textContent = sid ? `Background tasks of “${sessionName(state.sessions.get(sid))}”.` : "Background tasks of all your sessions.";
  let r;
  try {
    r = await api("GET", "/v1/tasks" + (sid ? "?" + new URLSearchParams({ session: sid }) : ""));
  } catch (e) {
    list.textContent = "";
    list.append(h("p.error", { text: errorText(e) }));
    return;
  }
  if (!r.items.length) {
    list.textContent = "";
    list.append(h("p.muted", { text: "No tasks." }));
    return;
  }
  list.querySelector("p.muted")?.remove();
  for (const t of r.items) {
    let row = list.querySelector(`[data-task="${CSS.escape(t.id)}"]`);
    if (!row) {
      row = taskRow(t);
      list.append(row);
    }
    updateTaskRow(row, t);
  }
}

function taskRow(t) {
  const logs = h("pre.logs", { hidden: true, tabindex: "0", "aria-label": "Logs of task " + t.id.slice(0, 8) });
  const msg = h("span.small", { role: "status" });
  const cancel = h("button", {
    type: "button",
    class: "danger cancel",
    text: "Cancel",
    "aria-describedby": "task-sum-" + t.id,
    onclick: async () => {
      cancel.disabled = true;
      try {
        await api("POST", "/v1/tasks/" + encodeURIComponent(t.id) + "/cancel");
        say(msg, "Cancel requested");
        setTimeout(loadTasks, 500);
      } catch (e) {
        cancel.disabled = false;
        say(msg, errorText(e), true);
      }
    },
  });
  const logsBtn = h("button", {
    type: "button",
    text: "Logs",
    "aria-expanded": "false",
    onclick: async () => {
      if (!logs.hidden) {
        logs.hidden = true;
        logsBtn.setAttribute("aria-expanded", "false");
        return;
      }
      try {
        const r = await api("GET", "/v1/tasks/" + encodeURIComponent(t.id) + "/logs");
        logs.textContent = "";
        for (const c of r.items) logs.append(h("span", { class: c.stream === "stderr" ? "stderr" : "", text: c.text }));
        if (!r.items.length) logs.textContent = "(no output yet)";
      } catch (e) {
        logs.textContent = e instanceof ApiError && e.status === 403 ? "Logs are for tenant operators." : errorText(e);
      }
      logs.hidden = false;
      logsBtn.setAttribute("aria-expanded", "true");
    },
  });
  return h(
    "article.card.task",
    { dataset: { task: t.id }, "aria-label": "Task " + t.id.slice(0, 8) },
    h("div.row", null, h("span.tool-name", { text: t.kind }), h("span.status"), h("code.small", { text: t.id.slice(0, 12) }), h("span.muted.small.when")),
    h("p.summary", { id: "task-sum-" + t.id }),
    h("div.row", null, cancel, logsBtn, msg),
    logs,
  );
}

function updateTaskRow(row, t) {
  const st = row.querySelector(".status");
  st.replaceChildren(badge(t.status));
  row.querySelector(".summary").textContent = t.summary || "";
  row.querySelector(".when").textContent = "started " + time(t.created_at) + (t.completed_at ? " · ended " + time(t.completed_at) : "");
  row.querySelector(".cancel").hidden = !t.running;
}

// ---------------------------------------------------------------- principals

async function loadPrincipals() {
  const body = $("principals-list");
  let r;
  try {
    r = await api("GET", "/v1/principals");
  } catch (e) {
    body.textContent = "";
    say($("principals-status"), e instanceof ApiError && e.status === 403 ? "Managing principals needs the admin role." : errorText(e), true);
    return;
  }
  // Keep the last action's message; clear only a previous load error.
  if ($("principals-status").classList.contains("error")) say($("principals-status"), "");
  const me = claims().sub;
  body.replaceChildren(...r.principals.map((p) => principalRow(p, p.principal === me)));
  if (!r.principals.length) body.append(h("tr", null, h("td.muted", { colspan: "5", text: "No principals yet." })));
}

function principalRow(p, isMe) {
  const act = (label, path, body, done) =>
    h("button", {
      type: "button",
      text: label,
      class: label === "Enable" ? "" : "danger",
      "aria-label": `${label} ${p.principal}`,
      onclick: async (e) => {
        e.currentTarget.disabled = true;
        try {
          await api("POST", path, body);
          say($("principals-status"), done);
        } catch (err) {
          say($("principals-status"), errorText(err), true);
        }
        loadPrincipals();
      },
    });
  const id = encodeURIComponent(p.principal);
  const toggle = p.disabled
    ? act("Enable", `/v1/principals/${id}/enable`, undefined, `${p.principal} enabled.`)
    : act("Disable", `/v1/principals/${id}/disable`, undefined, `${p.principal} disabled: every token refused.`);
  const revoke = act("Revoke tokens", "/v1/tokens/revoke", { principal: p.principal }, `Tokens of ${p.principal} issued until now are revoked.`);
  return h(
    "tr",
    { dataset: { principal: p.principal } },
    h("th", { scope: "row" }, h("code", { text: p.principal }), isMe ? h("span.muted.small", { text: " (you)" }) : null),
    h("td", { text: p.role }),
    h("td", null, badge(p.disabled ? "disabled" : "active")),
    h("td.muted.small", { text: time(p.created_at) }),
    h("td.actions", null, isMe ? null : toggle, isMe ? null : revoke),
  );
}

async function issueToken() {
  const principal = $("issue-principal").value.trim();
  const body = { principal, role: $("issue-role").value };
  const ttl = $("issue-ttl").value.trim();
  if (ttl) body.ttl = ttl;
  say($("issue-status"), "");
  try {
    const t = await api("POST", "/v1/tokens", body);
    $("issued").hidden = false;
    $("issued-token").value = t.token;
    $("issued-meta").textContent = `${t.principal} · ${t.role} · expires ${time(t.expires_at)} · shown once`;
    say($("issue-status"), `Token issued for ${t.principal}.`);
    $("issued-token").focus();
    $("issued-token").select();
    loadPrincipals();
  } catch (e) {
    $("issued").hidden = true;
    say($("issue-status"), errorText(e), true);
  }
}

// ---------------------------------------------------------------- usage

const USAGE_DAYS = 14;
const LIMITS = ["tokens_per_day", "tokens_per_month", "cost_per_day", "cost_per_month", "cpu_seconds_per_day", "tool_calls_per_day"];
const LIMIT_NAMES = {
  tokens_per_day: "Tokens per day",
  tokens_per_month: "Tokens per month",
  cost_per_day: "Cost per day",
  cost_per_month: "Cost per month",
  cpu_seconds_per_day: "CPU seconds per day",
  tool_calls_per_day: "Tool calls per day",
};
const METRICS = {
  tokens: { label: "tokens", of: (r) => r.input_tokens + r.output_tokens },
  cost: { label: "cost", of: (r) => r.cost || 0 },
  tool_calls: { label: "tool calls", of: (r) => r.tool_calls },
  cpu_seconds: { label: "CPU seconds", of: (r) => r.cpu_seconds },
};

function num(v, digits = 0) {
  return Number(v || 0).toLocaleString("en-US", { maximumFractionDigits: digits });
}

/** An SVG element (h() makes HTML ones). */
function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") el.textContent = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

function dayKey(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

function openUsage() {
  loadUsage();
  if (state.stopWarnings) return;
  $("budget-warnings").textContent = "";
  state.warningsSeen = new Set();
  state.stopWarnings = followStream("/v1/tenant/events", 0, (ev) => {
    if (ev.type === "budget.warning") addWarning(ev);
  }, (s) => {
    if (s === "forbidden") say($("usage-status"), "Usage and budgets need the admin role.", true);
  });
}

async function loadUsage() {
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const from = new Date(today - (USAGE_DAYS - 1) * 86400000).toISOString();
  const q = (group) => `/v1/usage?bucket=day&from=${encodeURIComponent(from)}` + (group ? "&group=" + group : "");
  let days, principals, cores, budgets;
  try {
    [days, principals, cores, budgets] = await Promise.all([api("GET", q("")), api("GET", q("principal")), api("GET", q("core")), api("GET", "/v1/budgets")]);
  } catch (e) {
    say($("usage-status"), e instanceof ApiError && e.status === 403 ? "Usage and budgets need the admin role." : errorText(e), true);
    return;
  }
  if ($("usage-status").classList.contains("error")) say($("usage-status"), "");
  state.usage = { days, today, currency: days.currency };
  drawChart();
  topTable($("usage-principals"), principals.rows, "principal", days.currency);
  topTable($("usage-cores"), cores.rows, "core", days.currency);
  showBudgets(budgets);
}

function drawChart() {
  const u = state.usage;
  if (!u) return;
  const metric = METRICS[$("usage-metric").value] || METRICS.tokens;
  const per = new Map();
  for (const r of u.days.rows) {
    const k = r.start.slice(0, 10);
    per.set(k, (per.get(k) || 0) + metric.of(r));
  }
  const days = [];
  for (let i = USAGE_DAYS - 1; i >= 0; i--) {
    const k = dayKey(u.today - i * 86400000);
    days.push([k, per.get(k) || 0]);
  }
  const max = Math.max(...days.map((d) => d[1]), 0);
  const chart = $("usage-chart");
  const [W, H, top, bottom] = [700, 180, 14, 22];
  const slot = W / days.length;
  const unit = metric === METRICS.cost ? " " + u.currency : " " + metric.label;
  const digits = metric === METRICS.cost || metric === METRICS.cpu_seconds ? 2 : 0;
  const title = svg("title", { id: "usage-chart-title", text: `${metric.label} per day, last ${USAGE_DAYS} days` });
  const nodes = [title, svg("line", { class: "axis", x1: 0, x2: W, y1: H - bottom, y2: H - bottom })];
  days.forEach(([k, v], i) => {
    const height = max > 0 ? Math.max(v > 0 ? 1 : 0, ((H - top - bottom) * v) / max) : 0;
    const x = i * slot + slot * 0.15;
    nodes.push(
      svg(
        "rect",
        { class: "bar" + (i === days.length - 1 ? " today" : ""), x, y: H - bottom - height, width: slot * 0.7, height, "data-day": k, "data-value": v },
        svg("title", { text: `${k}: ${num(v, digits)}${unit}` }),
      ),
      svg("text", { x: x + slot * 0.35, y: H - 6, "text-anchor": "middle", text: k.slice(8) }),
    );
  });
  if (max > 0) nodes.push(svg("text", { x: 2, y: 11, text: `${num(max, digits)}${unit}` }));
  chart.replaceChildren(...nodes);
  const total = days.reduce((a, d) => a + d[1], 0);
  say($("usage-total"), `${num(total, digits)}${unit} in ${USAGE_DAYS} days`);
  $("usage-caption").textContent = `${metric.label[0].toUpperCase() + metric.label.slice(1)} per UTC day, ${days[0][0]} to ${days[days.length - 1][0]}; today is the last bar.`;
}

function topTable(table, rows, key, currency) {
  const sums = new Map();
  for (const r of rows) {
    const id = r[key] ?? "";
    const s = sums.get(id) || { tokens: 0, cost: null, tool_calls: 0, cpu: 0 };
    s.tokens += r.input_tokens + r.output_tokens;
    // Null: no token of it has a price (not free).
    if (r.cost !== null && r.cost !== undefined) s.cost = (s.cost || 0) + r.cost;
    s.tool_calls += r.tool_calls;
    s.cpu += r.cpu_seconds;
    sums.set(id, s);
  }
  const top = [...sums.entries()].sort((a, b) => b[1].tokens - a[1].tokens || b[1].tool_calls - a[1].tool_calls).slice(0, 5);
  const body = table.querySelector("tbody");
  body.replaceChildren(
    ...top.map(([id, s]) =>
      h(
        "tr",
        { dataset: { key: id } },
        h("th", { scope: "row" }, h("code", { text: id || "—" })),
        h("td", { text: num(s.tokens) }),
        h("td", { text: s.cost === null ? "—" : num(s.cost, 2) + " " + currency }),
        h("td", { text: num(s.tool_calls) }),
        h("td", { text: num(s.cpu, 2) }),
      ),
    ),
  );
  if (!top.length) body.append(h("tr", null, h("td.muted", { colspan: "5", text: "Nothing used yet." })));
}

function budgetLine(l, currency) {
  const share = l.limit > 0 ? Math.min(l.used / l.limit, 1) : 1;
  const left = l.limit > 0 ? Math.max(0, 1 - l.used / l.limit) : 0;
  const money = l.name.startsWith("cost") ? " " + currency : "";
  const digits = l.name.startsWith("cost") || l.name.startsWith("cpu") ? 2 : 0;
  return h(
    "div.budget-line",
    { dataset: { limit: l.name } },
    h("span", { text: LIMIT_NAMES[l.name] || l.name }),
    h("meter", { min: 0, max: 1, low: 0.8, high: 0.99, optimum: 0, value: share, "aria-label": `${LIMIT_NAMES[l.name] || l.name}: ${Math.round(share * 100)} % spent` }),
    h("span.small", { text: `${num(l.used, digits)} of ${num(l.limit, digits)}${money} · ${num(l.remaining, digits)}${money} left (${Math.round(left * 100)} %)` }),
  );
}

function showBudgets(b) {
  const box = $("budget-lines");
  const parts = [];
  if (b.lines.length) {
    parts.push(h("h4", { text: "Whole tenant" + (b.warning ? ` · ${b.warning} % warning` : "") }), ...b.lines.map((l) => budgetLine(l, b.currency)));
  }
  for (const p of b.principals) {
    parts.push(h("h4", null, "Principal ", h("code", { text: p.principal }), p.warning ? ` · ${p.warning} % warning` : ""), ...p.lines.map((l) => budgetLine(l, b.currency)));
  }
  if (!parts.length) parts.push(h("p.muted", { text: "No budget is set: nothing is limited." }));
  box.replaceChildren(...parts);
  // The form starts from the tenant-wide budget as set, unless being edited.
  if (!state.budgetEdited && !$("budget-principal").value.trim()) {
    for (const k of LIMITS) $("budget-" + k).value = b.budget[k] ?? "";
  }
}

async function saveBudget() {
  const principal = $("budget-principal").value.trim();
  const limits = {};
  for (const k of LIMITS) {
    const v = $("budget-" + k).value.trim();
    if (v !== "") limits[k] = Number(v);
  }
  const body = { limits };
  if (principal) body.principal = principal;
  say($("budget-status"), "");
  try {
    await api("PUT", "/v1/budgets", body);
    const whose = principal ? `${principal}'s budget` : "The tenant's budget";
    say($("budget-status"), Object.keys(limits).length ? `${whose} is saved.` : `${whose} is removed.`);
    state.budgetEdited = false;
    loadUsage();
  } catch (e) {
    say($("budget-status"), errorText(e), true);
  }
}

function addWarning(ev) {
  if (state.warningsSeen.has(ev.seq)) return;
  state.warningsSeen.add(ev.seq);
  const d = ev.data;
  const whose = d.principal ? `principal ${d.principal}'s` : "the tenant's";
  const li = h("li", { class: "level-" + d.level, dataset: { seq: ev.seq } },
    h("strong", { text: `${d.level} %` }),
    ` of ${whose} ${LIMIT_NAMES[d.name] || d.name} (${num(d.used, 2)} of ${num(d.limit, 2)}) · ${time(ev.at)}`,
  );
  $("budget-warnings").prepend(li);
  // A warning means spend moved: show it.
  if (state.view === "usage") loadUsage();
}

// ---------------------------------------------------------------- packages

/** The trusted repositories' packages, with what the chosen core has installed. */
async function loadPackages() {
  const core = $("packages-core-id").value.trim() || "assistant";
  const body = $("packages-list");
  let r;
  try {
    r = await api("GET", "/v1/packages?core=" + encodeURIComponent(core));
  } catch (e) {
    body.textContent = "";
    say($("packages-status"), errorText(e), true);
    return;
  }
  const installed = new Map(r.installed.map((i) => [i.repository_alias + "/" + i.package_id, i]));
  body.textContent = "";
  for (const repo of r.repositories.filter((x) => !x.ready)) {
    body.append(h("tr", null, h("td", null, h("code", { text: repo.alias })), h("td.muted", { colspan: "4", text: "Not ready: " + (repo.error || "unknown") })));
  }
  for (const p of r.packages) {
    const key = p.repository + "/" + p.id;
    const here = installed.get(key);
    let stateText = "Available";
    if (here) stateText = "Installed";
    else if (!p.valid) stateText = "Invalid: " + p.error;
    else if (p.unsupported) stateText = "Unsupported: " + p.unsupported;
    const action = here
      ? h("button", { type: "button", text: "Uninstall " + p.id, onclick: () => packageChange("DELETE", core, p) })
      : p.valid && !p.unsupported
        ? h("button.primary", { type: "button", text: "Install " + p.id, onclick: () => packageChange("POST", core, p) })
        : "";
    body.append(
      h(
        "tr",
        { dataset: { package: key } },
        h("td", null, h("code", { text: p.repository })),
        h("td", null, h("code", { text: p.id })),
        h("td", { text: p.summary }),
        h("td", { text: stateText }),
        h("td", null, action),
      ),
    );
  }
  if (!r.packages.length) body.append(h("tr", null, h("td.muted", { colspan: "5", text: "No package repository is configured on this server." })));
  renderRepositories(r.repositories);
  loadCredentials();
}

/** Each repository: whose, ready or why not; Sync for git ones, Remove for the tenant's own. */
function renderRepositories(repos) {
  const list = $("repo-list");
  list.textContent = "";
  for (const repo of repos) {
    const state = repo.ready ? "ready" + (repo.commit ? " at " + repo.commit.slice(0, 12) : "") : "not ready: " + (repo.error || "unknown");
    const actions = [];
    if (repo.kind === "git") actions.push(h("button", { type: "button", text: "Sync " + repo.alias, onclick: () => repositoryChange("sync", repo.alias) }));
    if (repo.owner === "tenant") actions.push(h("button", { type: "button", text: "Remove " + repo.alias, onclick: () => repositoryChange("remove", repo.alias) }));
    list.append(
      h(
        "li",
        { dataset: { repository: repo.alias } },
        h("code", { text: repo.alias }),
        h("span.muted.small", { text: " " + (repo.owner === "tenant" ? "your tenant's" : "the operator's") + ", " + state + " " }),
        ...actions,
      ),
    );
  }
}

async function repositoryChange(action, alias) {
  const status = $("packages-status");
  try {
    if (action === "sync") {
      say(status, "Syncing " + alias + "…");
      const view = await api("POST", "/v1/packages/repositories/" + encodeURIComponent(alias) + "/sync", {});
      say(status, "Synced " + alias + (view.commit ? " at " + view.commit.slice(0, 12) : "") + ".");
    } else {
      await api("DELETE", "/v1/packages/repositories/" + encodeURIComponent(alias));
      say(status, "Removed repository " + alias + ".");
    }
  } catch (e) {
    say(status, errorText(e), true);
  }
  await loadPackages();
}

async function addRepository() {
  const alias = $("repo-alias").value.trim();
  try {
    await api("POST", "/v1/packages/repositories", { alias, url: $("repo-url").value.trim(), commit: $("repo-commit").value.trim() });
    for (const id of ["repo-alias", "repo-url", "repo-commit"]) $(id).value = "";
    say($("packages-status"), "Added repository " + alias + "; sync it to use it.");
  } catch (e) {
    say($("packages-status"), errorText(e), true);
  }
  await loadPackages();
}

async function packageChange(method, core, p) {
  const status = $("packages-status");
  say(status, method === "POST" ? "Installing " + p.id + "…" : "Removing " + p.id + "…");
  try {
    const done =
      method === "POST"
        ? await api("POST", "/v1/cores/" + encodeURIComponent(core) + "/packages", { repository: p.repository, package: p.id })
        : await api("DELETE", "/v1/cores/" + encodeURIComponent(core) + "/packages/" + encodeURIComponent(p.id));
    const verb = method === "POST" ? "Installed " + p.id + " into " : "Removed " + p.id + " from ";
    say(status, verb + core + " (version " + done.revision.slice(0, 7) + ")" + (done.warnings.length ? ". " + done.warnings.join(" ") : ""));
  } catch (e) {
    say(status, errorText(e), true);
  }
  await loadPackages();
}

async function loadCredentials() {
  const list = $("credential-list");
  try {
    const r = await api("GET", "/v1/tenant/credentials");
    list.textContent = "";
    list.append(...r.credentials.map((c) => h("li", null, h("code", { text: c.name }), h("span.muted.small", { text: " set " + time(c.updated_at) + " by " + c.updated_by }))));
  } catch (e) {
    list.textContent = "";
  }
}

async function saveCredential() {
  const name = $("credential-name").value.trim();
  const value = $("credential-value").value;
  try {
    await api("PUT", "/v1/tenant/credentials/" + encodeURIComponent(name), { value });
    $("credential-value").value = "";
    say($("packages-status"), "Saved credential " + name + ".");
  } catch (e) {
    say($("packages-status"), errorText(e), true);
  }
  await loadCredentials();
}

// ---------------------------------------------------------------- audit

/** The filter as query parameters (empty fields left out). */
function auditQuery() {
  const q = new URLSearchParams();
  for (const k of ["action", "actor", "target"]) {
    const v = $("audit-" + k).value.trim();
    if (v) q.set(k, v);
  }
  const from = $("audit-from").value;
  if (from) q.set("from", from + "T00:00:00Z");
  return q;
}

async function loadAudit(reset) {
  const body = $("audit-list");
  const q = auditQuery();
  q.set("limit", "100");
  if (!reset && state.auditCursor) q.set("cursor", state.auditCursor);
  let r;
  try {
    r = await api("GET", "/v1/audit?" + q.toString());
  } catch (e) {
    if (reset) body.textContent = "";
    say($("audit-status"), e instanceof ApiError && e.status === 403 ? "The audit log needs the admin role." : errorText(e), true);
    return;
  }
  say($("audit-status"), "");
  if (reset) body.textContent = "";
  body.append(...r.records.map(auditRow));
  if (reset && !r.records.length) body.append(h("tr", null, h("td.muted", { colspan: "7", text: "No records match." })));
  state.auditCursor = r.next_cursor || null;
  $("audit-more").hidden = !state.auditCursor;
}

function auditRow(r) {
  const detail = { ...r.detail };
  delete detail.reason;
  const text = Object.keys(detail).length ? JSON.stringify(detail) : "";
  return h(
    "tr",
    { dataset: { seq: r.id } },
    h("td.muted.small", { text: String(r.id) }),
    h("td.small", { text: time(r.at) }),
    h("td", null, h("code", { text: r.principal }), h("span.muted.small", { text: " " + r.role })),
    h("td", { text: r.surface }),
    h("td", null, h("code", { text: r.action })),
    h("td", null, r.target ? h("code", { text: r.target }) : ""),
    h("td.detail", null, r.reason ? h("div", null, h("strong", { text: "Reason: " }), r.reason) : null, text),
  );
}

/** Download the filtered log as JSON lines, every page of it. */
async function exportAudit() {
  const lines = [];
  let cursor = null;
  try {
    do {
      const q = auditQuery();
      q.set("limit", "1000");
      if (cursor) q.set("cursor", cursor);
      const r = await api("GET", "/v1/audit?" + q.toString());
      for (const rec of r.records) lines.push(JSON.stringify(rec));
      cursor = r.next_cursor || null;
    } while (cursor);
  } catch (e) {
    say($("audit-status"), errorText(e), true);
    return;
  }
  const url = URL.createObjectURL(new Blob([lines.reverse().join("\n") + "\n"], { type: "application/x-ndjson" }));
  const a = h("a", { href: url, download: "audit.jsonl" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  say($("audit-status"), `Exported ${lines.length} records, oldest first.`);
}

// ---------------------------------------------------------------- channels

/** The credential fields each platform takes (CONTRACT.md, channel accounts). */
const CREDENTIALS = {
  telegram: [["bot_token", "Bot token"], ["secret_token", "Webhook secret token"]],
  slack: [["bot_token", "Bot token"], ["signing_secret", "Signing secret"]],
  discord: [["application_id", "Application id"], ["public_key", "Public key"], ["bot_token", "Bot token"]],
  webhook: [["secret", "Signing secret"], ["callback_url", "Callback URL"]],
};

function credentialFields() {
  const platform = $("account-platform").value;
  const fs = $("account-credentials");
  const rows = [h("legend", { text: "Credentials" })];
  for (const [key, label] of CREDENTIALS[platform]) {
    const id = "cred-" + key;
    rows.push(h("label", { for: id, text: label }));
    rows.push(h("input", { id, type: key === "callback_url" ? "url" : "password", required: "", autocomplete: "off", spellcheck: "false", dataset: { key } }));
  }
  fs.replaceChildren(...rows);
  $("account-base").disabled = platform === "webhook";
}

async function loadChannels() {
  if (!$("account-credentials").querySelector("input")) credentialFields();
  const body = $("accounts-list");
  let r;
  try {
    r = await api("GET", "/v1/channels/accounts");
  } catch (e) {
    body.textContent = "";
    say($("channels-status"), e instanceof ApiError && e.status === 403 ? "Managing chat accounts needs the operator or admin role." : errorText(e), true);
    return;
  }
  if ($("channels-status").classList.contains("error")) say($("channels-status"), "");
  body.replaceChildren(...r.items.map(accountRow));
  if (!r.items.length) body.append(h("tr", null, h("td.muted", { colspan: "5", text: "No chat accounts yet." })));
  if (state.pairingAccount && !r.items.some((a) => a.id === state.pairingAccount.id)) {
    state.pairingAccount = null;
    $("pairings").hidden = true;
  }
}

function accountRow(a) {
  const st = a.status || {};
  const delivery = [];
  if (st.last_inbound_at) delivery.push("in " + time(st.last_inbound_at));
  if (st.last_delivery_at) delivery.push("out " + time(st.last_delivery_at));
  if (st.pending_outbox) delivery.push(`${st.pending_outbox} waiting`);
  const health = st.last_error ? badge("failed") : badge(st.last_inbound_at ? "active" : "idle");
  return h(
    "tr",
    { dataset: { account: a.id } },
    h("th", { scope: "row" }, a.name, h("div.muted.small", { text: `core ${a.core} · ${a.allowed_users.length} allowed` })),
    h("td", { text: a.platform }),
    h("td", null, h("code.small", { text: a.webhook_path })),
    h("td.small", null, health, " ", delivery.join(" · ") || "nothing yet", st.last_error ? h("div.error.small", { text: st.last_error }) : null),
    h(
      "td.actions",
      null,
      h("button", { type: "button", text: "Pairings", "aria-label": `Pairing requests of ${a.name}`, onclick: () => openPairings(a) }),
      h("button", {
        type: "button",
        text: "Delete",
        class: "danger",
        "aria-label": `Delete account ${a.name}`,
        onclick: async (e) => {
          if (!confirm(`Delete the chat account ${a.name}? Its webhook stops answering.`)) return;
          e.currentTarget.disabled = true;
          let outcome;
          try {
            await api("DELETE", "/v1/channels/accounts/" + encodeURIComponent(a.id));
            outcome = [`${a.name} deleted.`, false];
          } catch (err) {
            outcome = [errorText(err), true];
          }
          // Say it once the list shows it: the row is gone (or still there)
          // when the message appears, and a reload does not wipe an error.
          await loadChannels();
          say($("channels-status"), ...outcome);
        },
      }),
    ),
  );
}

async function addAccount() {
  const platform = $("account-platform").value;
  const credentials = {};
  for (const input of $("account-credentials").querySelectorAll("input")) credentials[input.dataset.key] = input.value;
  const body = { platform, name: $("account-name").value.trim(), credentials };
  const core = $("account-core").value.trim();
  if (core) body.core = core;
  const users = $("account-users").value.split(",").map((u) => u.trim()).filter(Boolean);
  if (users.length) body.allowed_users = users;
  const base = $("account-base").value.trim();
  if (base && platform !== "webhook") body.api_base_url = base;
  say($("account-status"), "");
  try {
    const a = await api("POST", "/v1/channels/accounts", body);
    say($("account-status"), `${a.name} added: register ${a.webhook_path} with ${a.platform}.`);
    $("account-form").reset();
    credentialFields();
    loadChannels();
  } catch (e) {
    say($("account-status"), errorText(e), true);
  }
}

async function openPairings(a) {
  state.pairingAccount = a;
  $("pairings").hidden = false;
  $("pairings-h").textContent = `Pairing requests of ${a.name}`;
  say($("pair-status"), "");
  const list = $("pairings-list");
  try {
    const r = await api("GET", `/v1/channels/accounts/${encodeURIComponent(a.id)}/pairings`);
    list.replaceChildren(
      ...r.items.map((p) =>
        h("li", null, h("code", { text: p.platform_user }), " ", badge(p.state), h("span.muted.small", { text: ` asked ${time(p.created_at)} · expires ${time(p.expires_at)}` })),
      ),
    );
    if (!r.items.length) list.append(h("li.muted", { text: "No pending requests." }));
  } catch (e) {
    list.replaceChildren(h("li.error", { text: errorText(e) }));
  }
  $("pair-code").focus();
}

async function approvePairing() {
  const a = state.pairingAccount;
  if (!a) return;
  try {
    const r = await api("POST", `/v1/channels/accounts/${encodeURIComponent(a.id)}/pairings`, { code: $("pair-code").value.trim() });
    $("pair-code").value = "";
    await openPairings(a);
    say($("pair-status"), `${r.platform_user} paired as ${r.principal}.`);
  } catch (e) {
    say($("pair-status"), errorText(e), true);
  }
}

// ---------------------------------------------------------------- cores

const enc = (p) => p.split("/").map(encodeURIComponent).join("/");

async function loadCores() {
  const list = $("cores-list");
  let r;
  try {
    r = await api("GET", "/v1/cores");
  } catch (e) {
    list.replaceChildren(h("li.error", { text: errorText(e) }));
    return;
  }
  list.replaceChildren(
    ...r.cores.map((c) =>
      h(
        "li",
        { dataset: { core: c.id } },
        h("a", { href: "#/cores/" + encodeURIComponent(c.id), text: c.id, "aria-current": c.id === state.core ? "page" : null }),
        " ",
        badge(c.loads ? "loads" : "broken"),
      ),
    ),
  );
  if (!r.cores.length) list.append(h("li.muted", { text: "No cores." }));
  if (state.core) openCore(state.core);
  else $("core-detail").hidden = true;
}

async function openCore(id) {
  let c;
  try {
    c = await api("GET", "/v1/cores/" + encodeURIComponent(id));
  } catch (e) {
    $("core-detail").hidden = false;
    $("core-h").textContent = id;
    say($("core-meta"), errorText(e), true);
    return;
  }
  $("core-detail").hidden = false;
  $("core-h").textContent = "Core " + c.id;
  const rev = c.revision ? "revision " + c.revision.slice(0, 12) : "no revision";
  say($("core-meta"), c.loads ? `${rev} · ${c.tools.length} tools${c.summary ? " · " + c.summary : ""}` : `${rev} · does not load: ${c.error}`, !c.loads);
  $("core-files").replaceChildren(
    ...c.files.map((f) =>
      h(
        "li",
        null,
        h("button", {
          type: "button",
          class: "link" + (f.path === state.coreFile ? " current" : ""),
          text: f.path,
          "aria-label": "Open " + f.path,
          onclick: () => openCoreFile(c.id, f.path),
        }),
        h("span.muted.small", { text: " " + f.bytes + " B" }),
      ),
    ),
  );
  $("core-diff-btn").disabled = !c.previous;
  $("core-diff").hidden = true;
  loadVersions(c.id);
}

async function loadVersions(id) {
  try {
    const r = await api("GET", "/v1/cores/" + encodeURIComponent(id) + "/versions?limit=20");
    $("core-versions").replaceChildren(
      ...r.versions.map((v) =>
        h(
          "li",
          null,
          h("code", { text: v.revision.slice(0, 12) }),
          " ",
          h("span", { text: v.message }),
          h("span.muted.small", { text: ` · ${v.author} · ${time(v.at)}` }),
        ),
      ),
    );
  } catch (e) {
    $("core-versions").replaceChildren(h("li.error", { text: errorText(e) }));
  }
}

async function openCoreFile(id, path) {
  state.coreFile = path;
  say($("core-error"), "");
  say($("core-status"), "");
  try {
    const text = await apiText("GET", `/v1/cores/${encodeURIComponent(id)}/files/${enc(path)}`);
    $("core-editor").hidden = false;
    $("core-file-label").textContent = "Contents of " + path;
    $("core-file-text").value = text;
    $("core-editor").dataset.core = id;
    $("core-editor").dataset.path = path;
    $("core-file-text").focus();
  } catch (e) {
    say($("core-error"), errorText(e), true);
  }
}

async function saveCoreFile() {
  const { core, path } = $("core-editor").dataset;
  if (!core || !path) return;
  say($("core-error"), "");
  say($("core-status"), "Saving…");
  $("core-save").disabled = true;
  const msg = $("core-message").value.trim();
  try {
    const q = msg ? "?" + new URLSearchParams({ message: msg }) : "";
    await apiText("PUT", `/v1/cores/${encodeURIComponent(core)}/files/${enc(path)}${q}`, $("core-file-text").value);
    say($("core-status"), `Saved ${path} as a new revision.`);
    $("core-message").value = "";
    openCore(core);
  } catch (e) {
    say($("core-status"), "");
    say($("core-error"), e instanceof ApiError && e.status === 422 ? "Not saved: the core would no longer load. " + e.message : errorText(e), true);
  } finally {
    $("core-save").disabled = false;
  }
}

async function showCoreDiff() {
  const core = state.core;
  if (!core) return;
  try {
    const d = await api("GET", `/v1/cores/${encodeURIComponent(core)}/diff?` + new URLSearchParams({ from: "previous", to: "live" }));
    const pre = $("core-diff");
    pre.replaceChildren(
      ...d.diff.split("\n").map((l) =>
        h("span", { class: l.startsWith("+") && !l.startsWith("+++") ? "add" : l.startsWith("-") && !l.startsWith("---") ? "del" : "", text: l + "\n" }),
      ),
    );
    if (!d.diff) pre.textContent = "(no change in this core)";
    pre.hidden = false;
  } catch (e) {
    say($("core-error"), errorText(e), true);
  }
}

// ---------------------------------------------------------------- tools

async function loadTools() {
  const box = $("tools-list");
  box.textContent = "";
  const sid = state.current;
  if (!sid) {
    $("tools-scope").textContent = "Open a session to see the tools its core resolves.";
    return;
  }
  $("tools-scope").textContent = `The resolved catalog of “${sessionName(state.sessions.get(sid))}”.`;
  let r;
  try {
    r = await api("GET", "/v1/sessions/" + encodeURIComponent(sid) + "/tools");
  } catch (e) {
    box.append(h("p.error", { text: errorText(e) }));
    return;
  }
  const table = h(
    "table.tools",
    null,
    h("caption", { text: `Core ${r.core_id}: ${r.tools.length} tools` }),
    h("thead", null, h("tr", null, ["Name", "Source", "Risk", "Capability", "Policy", "Description"].map((c) => h("th", { scope: "col", text: c })))),
    h(
      "tbody",
      null,
      r.tools.map((t) =>
        h(
          "tr",
          null,
          h("th", { scope: "row" }, h("code", { text: t.name })),
          h("td", { text: t.source }),
          h("td", null, riskBadge(t.risk)),
          h("td", { text: t.capability }),
          h("td", { text: t.approval_policy }),
          h("td.small", { text: t.description }),
        ),
      ),
    ),
  );
  box.append(table);
  const unavailable = r.unavailable || [];
  box.append(h("h3", { text: "Unavailable" }));
  if (!unavailable.length) box.append(h("p.muted", { text: "Every tool of the core is available." }));
  else {
    const reasons = r.unavailable_reasons || {};
    box.append(
      h(
        "ul",
        null,
        unavailable.map((n) => {
          const name = typeof n === "string" ? n : n.name || pretty(n);
          const why = typeof n === "object" && n.reason ? n.reason : reasons[name];
          return h("li", null, h("code", { text: name }), why ? " — " + (typeof why === "string" ? why : pretty(why)) : "");
        }),
      ),
    );
  }
}

// ---------------------------------------------------------------- wiring

async function send() {
  const text = $("message").value;
  if (!text.trim() || !state.current) return;
  const sid = state.current;
  $("send").disabled = true;
  try {
    const r = await api("POST", "/v1/sessions/" + encodeURIComponent(sid) + "/turns", { input: text });
    $("message").value = "";
    // The turn may already have ended on the stream before this answer came back.
    if (state.current === sid && !state.live.ended.has(r.turn_id)) setRunning(r.turn_id);
  } catch (e) {
    say($("turn-status"), errorText(e), true);
  } finally {
    $("send").disabled = false;
  }
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll(".expiry[data-expires]")) {
    const t = countdown(el.dataset.expires, now);
    if (el.textContent !== t) el.textContent = t;
    if (t === "expired") {
      const group = el.closest(".approval, .question");
      group?.querySelectorAll("button, input").forEach((b) => (b.disabled = true));
    }
  }
}

function init() {
  $("signin-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const token = $("token").value.trim();
    say($("signin-error"), "");
    try {
      await signIn(token);
      $("token").value = "";
      $("main").focus();
    } catch (err) {
      say($("signin-error"), err instanceof ApiError && err.status === 401 ? "That token was not accepted." : errorText(err), true);
      $("token").focus();
    }
  });
  $("signout").addEventListener("click", signOut);
  $("core-editor").addEventListener("submit", (e) => {
    e.preventDefault();
    saveCoreFile();
  });
  $("core-diff-btn").addEventListener("click", showCoreDiff);
  $("usage-metric").addEventListener("change", drawChart);
  $("audit-filter").addEventListener("submit", (e) => {
    e.preventDefault();
    loadAudit(true);
  });
  $("audit-more").addEventListener("click", () => loadAudit(false));
  $("audit-export").addEventListener("click", exportAudit);
  $("packages-core").addEventListener("submit", (e) => {
    e.preventDefault();
    loadPackages();
  });
  $("credential-form").addEventListener("submit", (e) => {
    e.preventDefault();
    saveCredential();
  });
  $("repo-form").addEventListener("submit", (e) => {
    e.preventDefault();
    addRepository();
  });
  $("budget-form").addEventListener("input", () => {
    state.budgetEdited = true;
  });
  $("budget-form").addEventListener("submit", (e) => {
    e.preventDefault();
    saveBudget();
  });
  $("issue-form").addEventListener("submit", (e) => {
    e.preventDefault();
    issueToken();
  });
  $("account-platform").addEventListener("change", credentialFields);
  $("account-form").addEventListener("submit", (e) => {
    e.preventDefault();
    addAccount();
  });
  $("pair-form").addEventListener("submit", (e) => {
    e.preventDefault();
    approvePairing();
  });
  $("new-session").addEventListener("submit", async (e) => {
    e.preventDefault();
    const title = $("new-title").value.trim() || "Session " + new Date().toLocaleString();
    try {
      await createSession(title);
      $("new-title").value = "";
      $("message").focus();
    } catch (err) {
      alert(errorText(err));
    }
  });
  $("search").addEventListener("submit", (e) => {
    e.preventDefault();
    search($("q").value);
  });
  $("more-sessions").addEventListener("click", () => loadSessions(false).catch((e) => alert(errorText(e))));
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  $("message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  $("stop").addEventListener("click", async () => {
    const live = state.live;
    if (!live || !live.runningTurn) return;
    $("stop").disabled = true;
    try {
      await api("POST", `/v1/sessions/${encodeURIComponent(live.id)}/turns/${encodeURIComponent(live.runningTurn)}/cancel`);
      say($("turn-status"), "Stopping…");
    } catch (e) {
      say($("turn-status"), errorText(e), true);
    } finally {
      $("stop").disabled = false;
    }
  });
  $("display").addEventListener("change", () => {
    const level = $("display").value;
    $("log").className = "log display-" + level;
    for (const d of $("log").querySelectorAll("details.details")) d.open = level === "full";
  });
  $("log").addEventListener("scroll", () => {
    const log = $("log");
    stick = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  });
  window.addEventListener("hashchange", route);
  setInterval(tick, 1000);
  setInterval(refreshSessions, 10_000);
  window.addEventListener("focus", refreshSessions);

  const ready = () => {
    document.body.dataset.ready = "1";
    performance.mark("console-interactive");
  };
  if (auth.token) {
    signIn(auth.token)
      .catch(() => {
        say($("signin-error"), "Your session token is no longer accepted; sign in again.", true);
      })
      .finally(ready);
  } else ready();
}

init();
