// The console's link to the server: the token (session storage only), JSON
// requests with the bearer header, and a resumable event stream read with
// fetch (EventSource cannot send a header, and a token never goes in a URL).

const KEY = "demiurge.token";

export const auth = {
  get token() {
    return sessionStorage.getItem(KEY) || "";
  },
  set token(value) {
    if (value) sessionStorage.setItem(KEY, value);
    else sessionStorage.removeItem(KEY);
  },
};

/** Every call says it comes from the console (the audit log's `surface`). */
const CLIENT = { "X-Demiurge-Client": "console" };

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** One JSON request; throws ApiError with the server's envelope on 4xx/5xx. */
export async function api(method, path, body) {
  const headers = { ...CLIENT, Authorization: "Bearer " + auth.token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await r.json().catch(() => null);
  if (!r.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(r.status, e.code || "http_" + r.status, e.message || r.statusText);
  }
  return data;
}

/**
 * A text request (core files are raw text both ways); throws ApiError with
 * the server's envelope on 4xx/5xx. Returns the response text.
 */
export async function apiText(method, path, text) {
  const headers = { ...CLIENT, Authorization: "Bearer " + auth.token };
  if (text !== undefined) headers["Content-Type"] = "text/plain; charset=utf-8";
  const r = await fetch(path, { method, headers, body: text });
  if (!r.ok) {
    const data = await r.json().catch(() => null);
    const e = (data && data.error) || {};
    throw new ApiError(r.status, e.code || "http_" + r.status, e.message || r.statusText);
  }
  return r.text();
}

/**
 * Follow a session's events from `after` on, reconnecting with the last seen
 * seq; every event is delivered once, in order (duplicates dropped by seq).
 * Returns a function that stops following.
 */
export function follow(sessionId, after, onEvent, onState) {
  return followStream("/v1/sessions/" + encodeURIComponent(sessionId) + "/events", after, onEvent, onState);
}

/**
 * Follow the Server-Sent Events at `path` (events carrying a growing `seq`)
 * from `after` on, the same way: reconnecting, each event once, in order.
 */
export function followStream(path, after, onEvent, onState) {
  const ctrl = new AbortController();
  let last = after;
  let delay = 500;
  (async () => {
    while (!ctrl.signal.aborted) {
      try {
        const r = await fetch(path + "?after=" + last, {
          headers: { ...CLIENT, Authorization: "Bearer " + auth.token, Accept: "text/event-stream" },
          signal: ctrl.signal,
        });
        if (r.status === 401 || r.status === 403 || r.status === 404) {
          onState(r.status === 401 ? "unauthorized" : r.status === 403 ? "forbidden" : "gone");
          return;
        }
        if (!r.ok || !r.body) throw new Error("stream answered " + r.status);
        onState("live");
        delay = 500;
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true }).replace(/\r\n/g, "\n");
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const data = block
              .split("\n")
              .filter((l) => l.startsWith("data:"))
              .map((l) => l.slice(5).replace(/^ /, ""))
              .join("\n");
            if (!data) continue;
            let ev;
            try {
              ev = JSON.parse(data);
            } catch {
              continue;
            }
            if (typeof ev.seq !== "number" || ev.seq <= last) continue;
            last = ev.seq;
            onEvent(ev);
          }
        }
      } catch (e) {
        if (ctrl.signal.aborted) return;
      }
      if (ctrl.signal.aborted) return;
      onState("reconnecting");
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 5000);
    }
  })();
  return () => ctrl.abort();
}
