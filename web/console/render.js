// DOM helpers and a small markdown renderer. Everything is built with
// text nodes, never innerHTML, so nothing the server or a model sends can
// become markup.

/** `h("div.cls", {attr: v, onclick: f}, child, "text", …)` */
export function h(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "text") el.textContent = v;
      else if (k === "dataset") Object.assign(el.dataset, v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Inline markdown: `code`, **bold**, line breaks. */
function inline(text) {
  const out = [];
  const parts = text.split(/(`[^`\n]+`|\*\*[^*\n]+\*\*)/g);
  for (const p of parts) {
    if (!p) continue;
    if (p.length > 2 && p.startsWith("`") && p.endsWith("`")) out.push(h("code", { text: p.slice(1, -1) }));
    else if (p.length > 4 && p.startsWith("**") && p.endsWith("**")) out.push(h("strong", { text: p.slice(2, -2) }));
    else {
      const lines = p.split("\n");
      lines.forEach((l, i) => {
        if (i) out.push(h("br"));
        if (l) out.push(l);
      });
    }
  }
  return out;
}

/** Markdown subset: fenced code blocks, lists, headings, paragraphs, inline code. */
export function markdown(src) {
  const root = document.createDocumentFragment();
  const text = String(src ?? "").replace(/\r\n/g, "\n");
  const chunks = text.split(/^```([^\n`]*)\n([\s\S]*?)^```[ \t]*$/m);
  // split with two capture groups: [text, lang, code, text, lang, code, …]
  for (let i = 0; i < chunks.length; i += 3) {
    blocks(root, chunks[i]);
    if (i + 2 < chunks.length) {
      const lang = chunks[i + 1].trim();
      const code = h("code", { text: chunks[i + 2].replace(/\n$/, "") });
      if (lang) code.dataset.lang = lang;
      root.append(h("pre.code", null, code));
    }
  }
  return root;
}

function blocks(root, text) {
  for (const para of text.split(/\n{2,}/)) {
    const p = para.replace(/^\n+|\n+$/g, "");
    if (!p.trim()) continue;
    const lines = p.split("\n");
    if (lines.every((l) => /^\s*[-*] /.test(l))) {
      root.append(h("ul", null, lines.map((l) => h("li", null, inline(l.replace(/^\s*[-*] /, ""))))));
    } else if (lines.every((l) => /^\s*\d+[.)] /.test(l))) {
      root.append(h("ol", null, lines.map((l) => h("li", null, inline(l.replace(/^\s*\d+[.)] /, ""))))));
    } else if (lines.length === 1 && /^#{1,4} /.test(p)) {
      root.append(h("p.md-heading", null, h("strong", null, inline(p.replace(/^#+ /, "")))));
    } else {
      root.append(h("p", null, inline(p)));
    }
  }
}

/** Pretty JSON for details panes. */
export function pretty(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** "in 4m 05s" / "expired" for an RFC 3339 deadline. */
export function countdown(iso, now = Date.now()) {
  const left = Math.round((Date.parse(iso) - now) / 1000);
  if (!Number.isFinite(left)) return "";
  if (left <= 0) return "expired";
  const m = Math.floor(left / 60);
  const s = String(left % 60).padStart(2, "0");
  return m ? `expires in ${m}m ${s}s` : `expires in ${left}s`;
}

export function time(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString();
}

const STATUS_CLASS = {
  succeeded: "ok",
  active: "ok",
  disabled: "bad",
  running: "run",
  pending: "run",
  denied: "bad",
  invalid: "bad",
  not_found: "bad",
  failed: "bad",
  timed_out: "bad",
  cancelled: "warn",
  indeterminate: "warn",
  lost: "bad",
};

export function badge(status) {
  return h("span.badge." + (STATUS_CLASS[status] || "neutral"), { text: status });
}

export function riskBadge(risk) {
  return h("span.badge.risk-" + String(risk || "unknown").replace(/[^a-z]/g, ""), { text: "risk " + (risk || "?") });
}
