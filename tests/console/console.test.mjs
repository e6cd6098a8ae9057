// End-to-end tests of the operator console in real headless Chromium,
// driven by role and accessible name as CONTRACT.md lists them.
//
// Run by scripts/console-e2e, which starts a server and passes:
//   CONSOLE_URL   base URL of the server (no trailing slash)
//   CONSOLE_TOKEN an operator token for it
//   CONSOLE_ADMIN_TOKEN an admin token of the same tenant
//   ARTIFACTS     folder for screenshots and measurements
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const BASE = process.env.CONSOLE_URL;
const TOKEN = process.env.CONSOLE_TOKEN;
const ADMIN_TOKEN = process.env.CONSOLE_ADMIN_TOKEN;
const ARTIFACTS = process.env.ARTIFACTS || "test-artifacts/console";
const TIMEOUT = 20_000;

let browser;
let context;
let page;

async function shot(name, p = page) {
  await p.screenshot({ path: path.join(ARTIFACTS, name + ".png"), fullPage: false });
}

const log = () => page.getByRole("log", { name: "Conversation" });
/** The assistant's messages that say exactly `text` (a paragraph of it). */
const reply = (text, p = page) =>
  p.getByRole("log", { name: "Conversation" }).getByRole("article", { name: "Assistant" }).getByText(text, { exact: true });

async function sendMessage(text) {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("button", { name: "Send" }).click();
}

function script(steps) {
  return "script:" + JSON.stringify(steps);
}

/** Wait until the turn in the open session is over (Stop disappears). */
async function turnIdle() {
  await page.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden", timeout: TIMEOUT });
}

/** The seq numbers of everything rendered in the log are unique. */
async function assertNoDuplicateEvents() {
  const seqs = await page.locator("#log [data-seq]").evaluateAll((els) => els.map((e) => e.dataset.seq));
  assert.equal(new Set(seqs).size, seqs.length, "an event was rendered twice: " + seqs.join(","));
}

before(async () => {
  assert.ok(BASE && TOKEN, "CONSOLE_URL and CONSOLE_TOKEN must be set (use scripts/console-e2e)");
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
  context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  // No network beyond the server under test: any other request fails the test.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(BASE + "/")) return route.continue();
    throw new Error("request outside the server: " + url);
  });
  page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
});

after(async () => {
  await browser?.close();
});

test("sign in, measured from navigation to interactive", async () => {
  await page.goto(BASE + "/console");
  await page.locator("body[data-ready]").waitFor();
  const ms = await page.evaluate(() => {
    const m = performance.getEntriesByName("console-interactive")[0];
    return m ? Math.round(m.startTime) : null;
  });
  assert.ok(ms !== null && ms >= 0, "the console marks when it is interactive");
  fs.writeFileSync(path.join(ARTIFACTS, "load-to-interactive-ms.txt"), String(ms) + "\n");
  await shot("01-sign-in");
  await page.getByRole("textbox", { name: "Token" }).fill("not-a-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "not accepted" }).waitFor();
  await page.getByRole("textbox", { name: "Token" }).fill(TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "New session" }).waitFor();
  const stored = await page.evaluate(() => Object.values(sessionStorage));
  assert.ok(stored.includes(TOKEN), "the token is kept in session storage");
  assert.ok(!page.url().includes(TOKEN), "the token is never in the URL");
});

test("create a session, send a message and see the fake reply", async () => {
  await page.getByRole("textbox", { name: "Session title" }).fill("E2E first");
  await page.getByRole("button", { name: "New session" }).click();
  await page.getByRole("link", { name: "E2E first", exact: true }).waitFor();
  await page.getByRole("heading", { name: "E2E first" }).waitFor();
  await sendMessage("hello <b>console</b> with `code`");
  await reply(/^\[fake\] hello <b>console<\/b> with/).waitFor();
  await turnIdle();
  // Markup from a message is shown as text, never parsed.
  assert.equal(await page.locator("#log b").count(), 0);
  assert.ok((await page.locator("#log .msg code").count()) >= 1, "inline code is rendered");
  await shot("02-fake-reply");
});

test("approve a write_file from the inline card and see the result", async () => {
  await sendMessage(
    script([{ tool_calls: [{ name: "write_file", arguments: { path: "a.txt", content: "from the console" } }] }, { content: "wrote a.txt" }]),
  );
  const card = page.getByRole("article", { name: "Tool write_file" }).last();
  const approval = card.getByRole("group", { name: "Approval for write_file" });
  await approval.getByRole("button", { name: "Allow once" }).waitFor();
  await approval.getByRole("button", { name: "Allow for session" }).waitFor();
  await approval.getByRole("button", { name: "Deny" }).waitFor();
  assert.match(await approval.innerText(), /risk \w+/);
  assert.match(await approval.innerText(), /expires in/);
  await shot("03-inline-approval");
  await approval.getByRole("button", { name: "Allow once" }).click();
  await card.locator(".status", { hasText: "succeeded" }).waitFor();
  await reply("wrote a.txt").waitFor();
  await turnIdle();
  await shot("04-approved");
});

test("decide an approval from the Approvals inbox", async () => {
  await sendMessage(
    script([{ tool_calls: [{ name: "write_file", arguments: { path: "b.txt", content: "inbox" } }] }, { content: "wrote b.txt" }]),
  );
  await page.getByRole("article", { name: "Tool write_file" }).last().getByRole("button", { name: "Allow once" }).waitFor();
  await page.getByRole("link", { name: /^Approvals/ }).click();
  const inbox = page.getByRole("region", { name: "Approvals" });
  const item = inbox.getByRole("group", { name: "Approval for write_file" }).first();
  await item.getByRole("button", { name: "Allow for session" }).waitFor();
  assert.match(await item.innerText(), /E2E first/);
  await shot("05-approvals-inbox");
  await item.getByRole("button", { name: "Allow for session" }).click();
  await item.getByText("Allowed for this session").waitFor();
  await page.getByRole("link", { name: "Session", exact: true }).click();
  await reply("wrote b.txt").waitFor();
  const card = page.getByRole("article", { name: "Tool write_file" }).last();
  await card.locator(".status", { hasText: "succeeded" }).waitFor();
  await turnIdle();
});

test("answer a clarify question inline", async () => {
  await sendMessage(
    script([{ tool_calls: [{ name: "clarify", arguments: { question: "Which colour?" } }] }, { content: "colour noted" }]),
  );
  const answer = page.getByRole("textbox", { name: "Answer" });
  await answer.fill("blue");
  await answer.press("Enter");
  await log().getByText("Answered: blue").waitFor();
  await reply("colour noted").waitFor();
  await turnIdle();
});

test("stop a running turn", async () => {
  await sendMessage(script([{ tool_calls: [{ name: "terminal", arguments: { command: "sleep 30" } }] }, { content: "slept" }]));
  const stop = page.getByRole("button", { name: "Stop" });
  await stop.waitFor();
  await page.getByRole("article", { name: "Tool terminal" }).last().waitFor();
  await shot("06-running");
  const started = Date.now();
  await stop.click();
  await log().getByText(/Turn cancelled/).waitFor();
  await stop.waitFor({ state: "hidden" });
  assert.ok(Date.now() - started < 15_000, "Stop ends the turn well before the command would");
  assert.equal(await reply("slept").count(), 0);
});

test("reload mid-stream: output streams, nothing is lost or repeated", async () => {
  await sendMessage(
    script([
      { tool_calls: [{ name: "terminal", arguments: { command: "echo first-line; sleep 3; echo second-line" } }] },
      { content: "stream finished" },
    ]),
  );
  const card = page.getByRole("article", { name: "Tool terminal" }).last();
  await card.locator(".output", { hasText: "first-line" }).waitFor();
  await page.reload();
  await page.locator("body[data-ready]").waitFor();
  await reply("stream finished").waitFor();
  await turnIdle();
  await assertNoDuplicateEvents();
  assert.equal(await reply(/^\[fake\] hello <b>console<\/b> with/).count(), 1);
  assert.equal(await reply("wrote a.txt").count(), 1);
  assert.equal(await reply("stream finished").count(), 1);
  const out = await page.getByRole("article", { name: "Tool terminal" }).last().locator(".output").innerText();
  assert.equal(out.match(/first-line/g)?.length, 1, out);
  assert.equal(out.match(/second-line/g)?.length, 1, out);
  const gap = await log().evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
  assert.ok(gap < 40, "the replayed log is scrolled to its newest event (" + gap + "px above the end)");
  // The display level: `full` opens every tool card's details, `quiet` hides them.
  await page.getByRole("combobox", { name: "Tool details" }).selectOption("full");
  assert.equal(await page.locator("#log details.details:not([open])").count(), 0);
  await page.getByRole("combobox", { name: "Tool details" }).selectOption("quiet");
  assert.equal(await page.locator("#log .tool .details").first().isVisible(), false);
  await page.getByRole("combobox", { name: "Tool details" }).selectOption("summary");
  await shot("07-after-reload");
});

test("search the history and open the session from a result", async () => {
  await page.getByRole("searchbox", { name: "Search history" }).fill("hello");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  const results = page.getByRole("region", { name: "Search results" });
  const hit = results.getByRole("link").filter({ hasText: "hello" }).first();
  await hit.waitFor();
  await hit.click();
  await page.getByRole("heading", { name: "E2E first" }).waitFor();
});

test("a session created elsewhere shows up in the list", async () => {
  const status = await page.evaluate(async (token) => {
    const r = await fetch("/v1/sessions", {
      method: "POST",
      headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
      body: JSON.stringify({ title: "Made by the API" }),
    });
    return r.status;
  }, TOKEN);
  assert.equal(status, 201);
  await page.getByRole("navigation", { name: "Sessions" }).getByRole("link", { name: "Made by the API", exact: true }).waitFor();
});

test("Tools view lists the session's catalog", async () => {
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  const view = page.getByRole("region", { name: "Tools" });
  await view.getByRole("table").waitFor();
  for (const name of ["terminal", "write_file", "read_file"]) {
    await view.getByRole("rowheader", { name, exact: true }).waitFor();
  }
  await view.getByRole("columnheader", { name: "Capability" }).waitFor();
  await shot("08-tools");
});

test("cancel a background task from the Tasks view", async () => {
  await page.getByRole("link", { name: "Session", exact: true }).click();
  await sendMessage(
    script([{ tool_calls: [{ name: "terminal", arguments: { command: "sleep 60", background: true } }] }, { content: "started in background" }]),
  );
  await reply("started in background").waitFor();
  await turnIdle();
  await page.getByRole("link", { name: "Tasks", exact: true }).click();
  const view = page.getByRole("region", { name: "Tasks" });
  const cancel = view.getByRole("button", { name: "Cancel" }).first();
  await cancel.waitFor();
  await shot("09-tasks");
  await cancel.click();
  await view.locator(".badge", { hasText: "cancelled" }).first().waitFor();
  assert.equal(await view.getByRole("button", { name: "Cancel" }).count(), 0);
  // Operators read a task's full logs.
  await view.getByRole("button", { name: "Logs" }).first().click();
  await view.locator("pre.logs").first().waitFor();
});

test("load to interactive, signed in with a session open (median of 5 reloads)", async () => {
  await page.getByRole("link", { name: "Session", exact: true }).click();
  const times = [];
  for (let i = 0; i < 5; i++) {
    await page.reload();
    await page.locator("body[data-ready]").waitFor();
    times.push(
      await page.evaluate(() => Math.round(performance.getEntriesByName("console-interactive")[0].startTime)),
    );
  }
  times.sort((a, b) => a - b);
  fs.writeFileSync(path.join(ARTIFACTS, "load-to-interactive-signed-in-ms.txt"), times.join(" ") + "\n");
  await page.getByRole("button", { name: "New session" }).waitFor();
  await page.getByRole("textbox", { name: "Message" }).waitFor();
});

test("cores: a breaking edit is refused with the loader's error, a good one is a new version", async () => {
  await page.getByRole("link", { name: "Cores" }).click();
  await page.getByRole("heading", { name: "Cores", exact: true }).waitFor();
  await page.getByRole("navigation", { name: "Core list" }).getByRole("link", { name: "assistant" }).click();
  await page.getByRole("heading", { name: "Core assistant" }).waitFor();
  await page.getByRole("button", { name: "Open agent.yaml" }).click();
  const box = page.getByRole("textbox", { name: "Contents of agent.yaml" });
  await box.waitFor();
  const original = await box.inputValue();
  assert.match(original, /schema_version: 1/);
  const versionsBefore = await page.locator("#core-versions li").count();
  // Breaking: refused, nothing committed.
  await box.fill("schema_version: [\n");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("alert").filter({ hasText: "Not saved" }).waitFor();
  assert.equal(await page.locator("#core-versions li").count(), versionsBefore);
  // A harmless edit with a message: a new version by this principal.
  await box.fill(original + "# edited from the console\n");
  await page.getByRole("textbox", { name: "Commit message" }).fill("console edit");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("status").filter({ hasText: "Saved agent.yaml" }).waitFor();
  await page.locator("#core-versions li").filter({ hasText: "console edit" }).filter({ hasText: "console-e2e" }).waitFor();
  await page.getByRole("button", { name: "Show last change" }).click();
  await page.getByLabel("Last change").getByText("+# edited from the console").waitFor();
  await shot("12-cores");
  // The file reads back as saved.
  await page.getByRole("button", { name: "Open agent.yaml" }).click();
  assert.ok((await box.inputValue()).endsWith("# edited from the console\n"));
});

test("channels: add a Slack account, see a pairing request arrive, refuse a wrong code, delete", async () => {
  await page.getByRole("link", { name: "Channels" }).click();
  await page.getByRole("heading", { name: "Channels", exact: true }).waitFor();
  await page.getByRole("combobox", { name: "Platform" }).selectOption("slack");
  await page.getByRole("textbox", { name: "Name", exact: true }).fill("e2e-slack");
  const signing = "e2e-signing-secret";
  await page.getByLabel("Bot token").fill("xoxb-e2e-not-real");
  await page.getByLabel("Signing secret").fill(signing);
  await page.getByRole("button", { name: "Add account" }).click();
  await page.getByRole("status").filter({ hasText: "e2e-slack added" }).waitFor();
  const row = page.getByRole("row").filter({ hasText: "e2e-slack" });
  const webhookPath = (await row.locator("code").textContent()).trim();
  assert.match(webhookPath, /^\/v1\/channels\/slack\//);
  // The credential fields are cleared; the secret is nowhere on the page.
  const values = await page.locator("#account-credentials input").evaluateAll((els) => els.map((e) => e.value));
  assert.ok(values.length > 0 && values.every((v) => v === ""), "the credential fields are cleared");
  assert.equal(await page.getByText(signing).count(), 0);
  // An unknown Slack user writes to the bot: a signed Events API request.
  const body = JSON.stringify({
    type: "event_callback",
    event_id: "Ev" + Date.now(),
    event: { type: "message", user: "U0E2E", text: "hello", channel: "D0E2E", channel_type: "im", ts: "1700000000.000100" },
  });
  const ts = String(Math.floor(Date.now() / 1000));
  const sig = "v0=" + crypto.createHmac("sha256", signing).update(`v0:${ts}:${body}`).digest("hex");
  const res = await fetch(BASE + webhookPath, {
    method: "POST",
    headers: { "content-type": "application/json", "x-slack-request-timestamp": ts, "x-slack-signature": sig },
    body,
  });
  assert.equal(res.status, 200);
  // The operator sees the request (never its code) and a wrong code is refused.
  await page.getByRole("button", { name: "Pairing requests of e2e-slack" }).click();
  const pairings = page.locator("#pairings-list");
  for (let i = 0; i < 50 && !(await pairings.getByText("U0E2E").count()); i++) {
    await new Promise((r) => setTimeout(r, 100));
    await page.getByRole("button", { name: "Pairing requests of e2e-slack" }).click();
  }
  await pairings.getByText("U0E2E").waitFor();
  await page.getByRole("textbox", { name: "Pairing code" }).fill("AAAAAAAA");
  await page.getByRole("button", { name: "Approve pairing" }).click();
  await page.locator("#pair-status.error").waitFor();
  await shot("13-channels");
  // Delete (confirmed): the row goes, the webhook stops answering.
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete account e2e-slack" }).click();
  await page.getByRole("status").filter({ hasText: "e2e-slack deleted" }).waitFor();
  assert.equal(await page.getByRole("row").filter({ hasText: "e2e-slack" }).count(), 0);
  const gone = await fetch(BASE + webhookPath, { method: "POST", headers: { "content-type": "application/json" }, body });
  assert.equal(gone.status, 401, "a deleted account verifies nothing");
});

test("admin: issue a token, revoke it, disable and enable a principal", async () => {
  assert.ok(ADMIN_TOKEN, "CONSOLE_ADMIN_TOKEN must be set (use scripts/console-e2e)");
  // The operator signed in so far has no Principals view.
  assert.equal(await page.getByRole("link", { name: "Principals" }).isVisible(), false);
  const actx = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  const a = await actx.newPage();
  a.setDefaultTimeout(TIMEOUT);
  await a.goto(BASE + "/console");
  await a.locator("body[data-ready]").waitFor();
  await a.getByRole("textbox", { name: "Token" }).fill(ADMIN_TOKEN);
  await a.getByRole("button", { name: "Sign in" }).click();
  await a.getByRole("link", { name: "Principals" }).click();
  await a.getByRole("heading", { name: "Principals", exact: true }).waitFor();
  // Issue a member token for a new principal; it is shown once and works.
  await a.getByRole("textbox", { name: "Principal", exact: true }).fill("e2e-bob");
  await a.getByRole("combobox", { name: "Role" }).selectOption("member");
  await a.getByRole("textbox", { name: "Lifetime" }).fill("30m");
  await a.getByRole("button", { name: "Issue token" }).click();
  const issued = a.getByRole("textbox", { name: "New token" });
  await issued.waitFor();
  const bob = await issued.inputValue();
  assert.match(bob, /^[\w-]+\.[\w-]+\.[\w-]+$/, "a JWT is shown");
  const status = async (token) =>
    (await fetch(BASE + "/v1/sessions", { headers: { Authorization: "Bearer " + token } })).status;
  assert.equal(await status(bob), 200);
  const row = a.getByRole("row").filter({ hasText: "e2e-bob" });
  await row.getByRole("cell", { name: "member" }).waitFor();
  await shot("11-principals", a);
  // Revoke: the token is refused within a couple of seconds.
  await a.getByRole("button", { name: "Revoke tokens e2e-bob" }).click();
  await a.getByRole("status").filter({ hasText: "revoked" }).waitFor();
  let code = 0;
  for (let i = 0; i < 30 && code !== 401; i++) {
    code = await status(bob);
    if (code !== 401) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(code, 401, "a revoked token is refused");
  // Disable, then enable again: the state shows in the row.
  await a.getByRole("button", { name: "Disable e2e-bob" }).click();
  await row.getByText("disabled", { exact: true }).waitFor();
  await a.getByRole("button", { name: "Enable e2e-bob" }).click();
  await row.getByText("active", { exact: true }).waitFor();
  // A bad principal name is refused with the server's message, nothing issued.
  await a.getByRole("textbox", { name: "Principal", exact: true }).fill("e2e-carol");
  await a.getByRole("textbox", { name: "Lifetime" }).fill("forever");
  await a.getByRole("button", { name: "Issue token" }).click();
  await a.locator("#issue-status.error").waitFor();
  assert.equal(await a.getByRole("row").filter({ hasText: "e2e-carol" }).count(), 0);
  await actx.close();
});

test("usage: today's tokens on the chart, a budget set from the form warns live, then removed", async () => {
  // The operator signed in so far has no Usage view.
  assert.equal(await page.getByRole("link", { name: "Usage" }).isVisible(), false);
  const uctx = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  const u = await uctx.newPage();
  u.setDefaultTimeout(TIMEOUT);
  await u.goto(BASE + "/console");
  await u.locator("body[data-ready]").waitFor();
  await u.getByRole("textbox", { name: "Token" }).fill(ADMIN_TOKEN);
  await u.getByRole("button", { name: "Sign in" }).click();
  await u.getByRole("link", { name: "Usage" }).click();
  await u.getByRole("heading", { name: "Usage", exact: true }).waitFor();
  // The turns the earlier tests ran are today's bar, and their principal
  // tops the table.
  const chart = u.getByRole("img", { name: /tokens per day/ });
  await chart.waitFor();
  await u.waitForFunction(() => Number(document.querySelector("#usage-chart rect.bar.today")?.dataset.value) > 0);
  assert.equal(await u.locator("#usage-chart rect.bar").count(), 14);
  await u.getByRole("table", { name: "Top principals" }).getByRole("row").filter({ hasText: "console-e2e" }).waitFor();
  await u.getByRole("table", { name: "Top cores" }).getByRole("row").nth(1).waitFor();
  await u.getByText("No budget is set: nothing is limited.").waitFor();
  // Another measure redraws the chart.
  await u.getByRole("combobox", { name: "Show" }).selectOption("tool_calls");
  await u.getByRole("img", { name: /tool calls per day/ }).waitFor();
  // One token a day: already spent today, so it shows spent and warns live.
  await u.getByRole("spinbutton", { name: "Tokens per day" }).fill("1");
  await u.getByRole("button", { name: "Save budget" }).click();
  await u.getByRole("status").filter({ hasText: "The tenant's budget is saved." }).waitFor();
  await u.getByRole("meter", { name: "Tokens per day: 100 % spent" }).waitFor();
  await u.getByText(/0 left \(0 %\)/).waitFor();
  const warning = u.getByRole("list").filter({ has: u.getByText("100 %", { exact: true }) }).getByRole("listitem");
  await warning.first().waitFor();
  assert.match(await warning.first().innerText(), /the tenant's Tokens per day/);
  await shot("12-usage", u);
  // Removed: nothing is limited again, and turns run.
  await u.getByRole("spinbutton", { name: "Tokens per day" }).fill("");
  await u.getByRole("button", { name: "Save budget" }).click();
  await u.getByRole("status").filter({ hasText: "The tenant's budget is removed." }).waitFor();
  await u.getByText("No budget is set: nothing is limited.").waitFor();
  const b = await (await fetch(BASE + "/v1/budgets", { headers: { Authorization: "Bearer " + ADMIN_TOKEN } })).json();
  assert.deepEqual(b.lines, []);
  // The audit log says those changes, and the approvals decided earlier, came from the console.
  const audit = await (await fetch(BASE + "/v1/audit?limit=1000", { headers: { Authorization: "Bearer " + ADMIN_TOKEN } })).json();
  const from = (action) => audit.records.filter((r) => r.action === action).map((r) => r.surface);
  assert.deepEqual(from("budget.set"), ["console"]);
  assert.deepEqual(from("budget.removed"), ["console"]);
  assert.ok(from("approval.decided").length >= 2 && from("approval.decided").every((s) => s === "console"), JSON.stringify(from("approval.decided")));
  await uctx.close();
});

test("audit: filter the log by action, see the console's own changes, export JSON lines", async () => {
  assert.equal(await page.getByRole("link", { name: "Audit" }).isVisible(), false);
  const actx = await browser.newContext({ viewport: { width: 1366, height: 768 }, acceptDownloads: true });
  const a = await actx.newPage();
  a.setDefaultTimeout(TIMEOUT);
  await a.goto(BASE + "/console");
  await a.locator("body[data-ready]").waitFor();
  await a.getByRole("textbox", { name: "Token" }).fill(ADMIN_TOKEN);
  await a.getByRole("button", { name: "Sign in" }).click();
  await a.getByRole("link", { name: "Audit" }).click();
  await a.getByRole("heading", { name: "Audit", exact: true }).waitFor();
  // Unfiltered: the tokens the test run issued are there.
  const rows = a.locator("#audit-list tr[data-seq]");
  await rows.first().waitFor();
  await a.getByRole("cell", { name: "token.issued" }).first().waitFor();
  // The budget the Usage test set and removed, both from the console.
  await a.getByRole("textbox", { name: "Action" }).fill("budget.");
  await a.getByRole("button", { name: "Filter" }).click();
  // The newest unfiltered row is budget.removed too: wait for the filtered list itself.
  await a.waitForFunction(() => {
    const trs = [...document.querySelectorAll("#audit-list tr[data-seq]")];
    return trs.length > 0 && trs.every((tr) => tr.cells[4].innerText.trim().startsWith("budget."));
  });
  const shown = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.innerText.trim())));
  assert.deepEqual(shown.map((c) => c[4]), ["budget.removed", "budget.set"]);
  assert.ok(shown.every((c) => c[3] === "console" && c[2].startsWith("console-admin")), JSON.stringify(shown));
  await shot("13-audit", a);
  // Export: the filtered records as JSON lines, oldest first.
  const [download] = await Promise.all([a.waitForEvent("download"), a.getByRole("button", { name: "Export JSON lines" }).click()]);
  const text = fs.readFileSync(await download.path(), "utf8");
  const lines = text.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((r) => r.action), ["budget.set", "budget.removed"]);
  assert.ok(lines[1].id > lines[0].id && lines[1].prev_hash.length === 64);
  await a.getByRole("status").filter({ hasText: "Exported 2 records" }).waitFor();
  await actx.close();
});

test("packages: install a package into a core, see it installed, remove it; store a credential", async () => {
  assert.equal(await page.getByRole("link", { name: "Packages" }).isVisible(), false);
  const actx = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  const a = await actx.newPage();
  a.setDefaultTimeout(TIMEOUT);
  await a.goto(BASE + "/console");
  await a.locator("body[data-ready]").waitFor();
  await a.getByRole("textbox", { name: "Token" }).fill(ADMIN_TOKEN);
  await a.getByRole("button", { name: "Sign in" }).click();
  await a.getByRole("link", { name: "Packages" }).click();
  await a.getByRole("heading", { name: "Packages", exact: true }).waitFor();
  const row = a.locator('#packages-list tr[data-package="local/search_notes"]');
  await row.getByRole("cell", { name: "Available" }).waitFor();
  await a.getByRole("button", { name: "Install search_notes" }).click();
  await a.getByRole("status").filter({ hasText: "Installed search_notes into assistant" }).waitFor();
  await row.getByRole("cell", { name: "Installed" }).waitFor();
  // The core has the skill, as a new version.
  const file = await fetch(BASE + "/v1/cores/assistant/files/agent/skills/search_notes/SKILL.md", { headers: { Authorization: "Bearer " + ADMIN_TOKEN } });
  assert.equal(file.status, 200);
  await shot("14-packages", a);
  await a.getByRole("button", { name: "Uninstall search_notes" }).click();
  await a.getByRole("status").filter({ hasText: "Removed search_notes from assistant" }).waitFor();
  await row.getByRole("cell", { name: "Available" }).waitFor();
  // A credential: saved, listed by name, never shown.
  await a.getByRole("textbox", { name: "Name" }).fill("web_search_brave.api_key");
  await a.getByLabel("Value").fill("BSA-console-secret-123");
  await a.getByRole("button", { name: "Save credential" }).click();
  await a.getByRole("list", { name: "Stored credentials" }).getByText("web_search_brave.api_key").waitFor();
  assert.equal(await a.getByText("BSA-console-secret-123").count(), 0);
  assert.equal(await a.getByLabel("Value").inputValue(), "");
  // The tenant's own repository, where the operator allows it: added, synced, used, removed.
  const repos = a.getByRole("list", { name: "Package repositories" });
  await repos.getByText("the operator's", { exact: false }).first().waitFor();
  await a.getByRole("textbox", { name: "Alias" }).fill("team");
  await a.getByRole("textbox", { name: "Git URL" }).fill(process.env.CONSOLE_TEAM_REPO);
  await a.getByRole("textbox", { name: "Commit" }).fill(process.env.CONSOLE_TEAM_COMMIT);
  await a.getByRole("button", { name: "Add repository" }).click();
  await a.getByRole("status").filter({ hasText: "Added repository team" }).waitFor();
  const team = repos.locator('li[data-repository="team"]');
  await team.getByText("not ready", { exact: false }).waitFor();
  await a.getByRole("button", { name: "Sync team" }).click();
  await a.getByRole("status").filter({ hasText: "Synced team at " + process.env.CONSOLE_TEAM_COMMIT.slice(0, 12) }).waitFor();
  await a.locator('#packages-list tr[data-package="team/search_notes"]').getByRole("cell", { name: "Available" }).waitFor();
  await a.getByRole("button", { name: "Remove team" }).click();
  await a.getByRole("status").filter({ hasText: "Removed repository team" }).waitFor();
  assert.equal(await a.locator('#packages-list tr[data-package="team/search_notes"]').count(), 0);
  await actx.close();
});

test("keyboard only: sign in, create a session, send, approve", async () => {
  const kctx = await browser.newContext({ viewport: { width: 1366, height: 768 }, colorScheme: "dark" });
  const k = await kctx.newPage();
  k.setDefaultTimeout(TIMEOUT);
  const focusedName = () =>
    k.evaluate(() => {
      const a = document.activeElement;
      if (!a) return "";
      if (a.labels && a.labels[0]) return a.labels[0].textContent.trim();
      return (a.getAttribute("aria-label") || a.textContent || "").trim();
    });
  async function tabTo(name) {
    for (let i = 0; i < 80; i++) {
      if ((await focusedName()) === name) return;
      await k.keyboard.press("Tab");
    }
    assert.fail("Tab never reached " + name);
  }
  await k.goto(BASE + "/console");
  await k.locator("body[data-ready]").waitFor();
  await tabTo("Token");
  await k.keyboard.type(TOKEN);
  await k.keyboard.press("Enter");
  await k.getByRole("button", { name: "New session" }).waitFor();
  await tabTo("Session title");
  await k.keyboard.type("Keyboard session");
  await k.keyboard.press("Enter");
  await k.getByRole("link", { name: "Keyboard session", exact: true }).waitFor();
  assert.equal(await focusedName(), "Message", "focus moves to the message box");
  await k.keyboard.type("typed without a mouse");
  await k.keyboard.press("Enter");
  await k.getByRole("log", { name: "Conversation" }).getByText("[fake] typed without a mouse").waitFor();
  await k.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden" });
  // An approval decided from the keyboard alone.
  await k.keyboard.type(
    script([{ tool_calls: [{ name: "write_file", arguments: { path: "k.txt", content: "keys" } }] }, { content: "wrote k.txt" }]),
  );
  await k.keyboard.press("Enter");
  await k.getByRole("button", { name: "Allow once" }).waitFor();
  await tabTo("Allow once");
  await k.keyboard.press("Enter");
  await reply("wrote k.txt", k).waitFor();
  await k.getByRole("article", { name: "Tool write_file" }).locator(".status", { hasText: "succeeded" }).waitFor();
  // The focus ring is visible on the focused control.
  await tabTo("Send");
  const outline = await k.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, "none");
  await shot("10-keyboard-dark", k);
  await kctx.close();
});
