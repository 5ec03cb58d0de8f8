// The outcome stream, one per tab, shared by the pages: the Live page draws it, an
// Intent page refreshes when its intent's outcome arrives. It resumes after a drop with
// the last id it saw, so nothing is missed and nothing is shown twice.

import { stream, APIError } from "./api.js";

const KEEP = 1000; // newest events kept in the page; the server keeps the rest

export const live = {
  events: [],        // newest last
  lastId: 0,
  counts: { success: 0, failure: 0, expired: 0 },
  minutes: new Map(), // minute (ms since epoch / 60000) -> {success, failure, expired}
  state: "idle",     // connecting, connected, reconnecting, resumed, stopped
  stateText: "",
};

const listeners = new Set();
export function subscribe(f) { listeners.add(f); return () => listeners.delete(f); }
function notify(what) { for (const f of listeners) f(what); }

function setState(state, text) {
  live.state = state;
  live.stateText = text;
  notify({ state });
}

function add(ev) {
  // An id at or below the last one was seen already: a resumed stream never sends one,
  // but a page that reconnects must not count an event twice even if it did.
  if (ev.id <= live.lastId) return;
  let data;
  try { data = JSON.parse(ev.data); } catch { return; }
  live.lastId = ev.id;
  const e = { id: ev.id, type: ev.type, data, at: Date.now() };
  live.events.push(e);
  if (live.events.length > KEEP) live.events.splice(0, live.events.length - KEEP);
  if (ev.type in live.counts) live.counts[ev.type]++;
  const minute = Math.floor(e.at / 60000);
  const m = live.minutes.get(minute) || { success: 0, failure: 0, expired: 0 };
  if (ev.type in m) m[ev.type]++;
  live.minutes.set(minute, m);
  for (const k of live.minutes.keys()) if (k < minute - 60) live.minutes.delete(k);
  notify({ event: e });
}

let started = false;
let retry = 3000;

// start opens the stream once; later calls do nothing.
export function start() {
  if (started) return;
  started = true;
  run();
}

async function run() {
  let drops = 0;
  for (;;) {
    const resuming = live.lastId > 0 || drops > 0;
    setState(drops ? "reconnecting" : "connecting", drops ? "reconnecting…" : "connecting…");
    try {
      await stream({
        lastId: live.lastId,
        onOpen: () => resuming && live.lastId > 0
          ? setState("resumed", `connected, resumed from id ${live.lastId}`)
          : setState("connected", "connected"),
        onEvent: add,
        onRetry: ms => { retry = Math.min(Math.max(ms, 500), 60000); },
      });
    } catch (e) {
      if (e instanceof APIError && e.status === 401) {
        // The app asks for a token again; the stream waits for it.
        setState("stopped", "waiting for a token");
        started = false;
        return;
      }
      if (e instanceof APIError && e.status === 400) {
        setState("stopped", "stream refused: " + e.message);
        started = false;
        return;
      }
    }
    drops++;
    const wait = retry;
    setState("reconnecting", `stream ended; reconnecting in ${Math.round(wait / 1000)} s from id ${live.lastId}`);
    await new Promise(r => setTimeout(r, wait));
  }
}
