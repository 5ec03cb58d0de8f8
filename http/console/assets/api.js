// Calls to the API, with the bearer token when the server wants one. The token lives in
// this tab's sessionStorage only: it goes when the tab closes, other tabs and sites
// never see it, and it travels in the Authorization header, never in a URL, so that it
// stays out of server logs, history and Referer headers.

const TOKEN_KEY = "intentd.token";

export const config = { authRequired: false };

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(t) { sessionStorage.setItem(TOKEN_KEY, t); }
export function clearToken() { sessionStorage.removeItem(TOKEN_KEY); }

// unauthorized is called when the server refuses the token; the app asks again.
let unauthorized = () => {};
export function onUnauthorized(f) { unauthorized = f; }

export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  const h = { ...extra };
  if (config.authRequired && token()) h.Authorization = "Bearer " + token();
  return h;
}

// call fetches an API path and answers the Response, or throws an APIError carrying the
// server's message and code.
export async function call(path, opts = {}) {
  let r;
  try {
    r = await fetch(path, { ...opts, headers: headers(opts.headers), cache: "no-store" });
  } catch (e) {
    throw new APIError(0, "network", `the server did not answer (${e.message})`);
  }
  if (r.ok) return r;
  let code = "", message = `${r.status} ${r.statusText}`;
  try {
    const body = await r.json();
    code = body.code || "";
    message = body.message || message;
  } catch { /* an answer without the error body */ }
  if (r.status === 401) unauthorized(message);
  throw new APIError(r.status, code, message);
}

export async function getJSON(path) { return (await call(path)).json(); }
export async function getText(path) { return (await call(path)).text(); }

let infoPromise;
// info is GET /info, asked once: the server's key and settings do not change while it
// runs, and a new key would come with a restart the stream notices.
export function info() {
  infoPromise ??= getJSON("/info").catch(e => { infoPromise = undefined; throw e; });
  return infoPromise;
}

// stream reads GET /events with fetch rather than EventSource, which cannot send the
// Authorization header. It calls onEvent for each event and resolves when the stream
// ends; the caller reconnects. lastId is sent as Last-Event-ID, so the server resumes
// after it with no gap and no duplicate.
export async function stream({ lastId, signal, onOpen, onEvent, onRetry }) {
  const h = { Accept: "text/event-stream" };
  if (lastId > 0) h["Last-Event-ID"] = String(lastId);
  const r = await call("/events", { headers: h, signal });
  onOpen();
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "", id = "", type = "", data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    // Lines end in CRLF, LF or CR (the event stream format allows all three); a CR
    // at the very end may be half of a CRLF, so it waits for the next chunk.
    let m;
    const re = /\r\n|\n|\r(?!$)/g;
    let start = 0;
    while ((m = re.exec(buf)) !== null) {
      const line = buf.slice(start, m.index);
      start = m.index + m[0].length;
      if (line === "") {
        if (data.length) onEvent({ id: Number(id), type: type || "message", data: data.join("\n") });
        type = ""; data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "id") id = val;
      else if (field === "event") type = val;
      else if (field === "data") data.push(val);
      else if (field === "retry" && /^\d+$/.test(val)) onRetry(Number(val));
    }
    buf = buf.slice(start);
  }
}
