// The outcome stream, one per tab, shared by the pages: the Live page draws it, an
// Intent page refreshes when its intent's outcome arrives. It resumes after a drop with
// the last id it saw, so nothing is missed and nothing is shown twice.

import { stream, getJSON, APIError } from "./api.js";

const KEEP = 1000; // newest events kept in the page; the server keeps the rest

export const live = {
  events: [],        // newest last
  lastId: 0,
  counts: { success: 0, failure: 0, expired: 0 },
  // The chart's counts: minute (since the epoch, by the server's clock) ->
  // {success, failure, expired}. Events carry no time, so each is placed in the minute
  // the server stored it by the marks of /ui/api/minutes; one newer than the marks is
  // held in `unplaced`, counted in the minute it reached the page, until the next marks.
  minutes: new Map(),
  unplaced: [],      // {id, type, at: server-clock ms when it reached the page}
  chart: "waiting",  // until the server's marks come; then "placed" by them, or "arrival" without
  retainedFrom: null, // Date of the oldest retained event when older ones were pruned
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
  place(ev.id, ev.type, serverNow());
  notify({ event: e });
}

// The chart. A first connection replays every retained event within moments, so the
// minute an event reached the page says nothing of when it happened; the server's
// marks do: marks.before[i] is the newest event id stored before minute
// marks.minute - 59 + i began, marks.last the newest id when they were read.
let marks = null;
let offset = 0; // server clock - this page's clock, in ms, from the marks' answer
let marksFailed = false;

export function serverNow() { return Date.now() + offset; }

// minuteOf is the minute event id was stored in, -1 if it is older than the marks'
// hour, or null when the marks do not reach it yet.
function minuteOf(id) {
  if (!marks || id > marks.last) return null;
  const b = marks.before;
  if (id <= b[0]) return -1;
  let lo = 0, hi = b.length - 1; // the last i with b[i] < id
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (b[mid] < id) lo = mid; else hi = mid - 1;
  }
  return marks.minute - (b.length - 1) + lo;
}

function bump(minute, type) {
  const m = live.minutes.get(minute) || { success: 0, failure: 0, expired: 0 };
  if (type in m) m[type]++;
  live.minutes.set(minute, m);
}

function place(id, type, at) {
  if (marksFailed) return bump(Math.floor(at / 60000), type);
  const minute = minuteOf(id);
  if (minute === null) live.unplaced.push({ id, type, at });
  else if (minute >= 0) bump(minute, type);
}

function forgetOld() {
  const oldest = Math.floor(serverNow() / 60000) - 60;
  for (const k of live.minutes.keys()) if (k < oldest) live.minutes.delete(k);
  let i = 0;
  while (i < live.unplaced.length && Math.floor(live.unplaced[i].at / 60000) < oldest) i++;
  if (i) live.unplaced.splice(0, i);
}

// chartMinutes answers the chart's counts: the placed events, and the unplaced ones in
// the minute they reached the page (a second or so after they were stored).
export function chartMinutes() {
  forgetOld();
  const out = new Map();
  for (const [k, v] of live.minutes) out.set(k, { ...v });
  for (const u of live.unplaced) {
    const k = Math.floor(u.at / 60000);
    const m = out.get(k) || { success: 0, failure: 0, expired: 0 };
    if (u.type in m) m[u.type]++;
    out.set(k, m);
  }
  return out;
}

let marking = null;
// refreshMarks asks the server for the marks of the last hour, then places what waited
// for them. It is asked at every connection, whose replay it places, and each minute
// while events wait, so that those counted by their arrival move to their own minute.
function refreshMarks() {
  if (marking || marksFailed) return marking;
  const sent = Date.now();
  marking = getJSON("/ui/api/minutes").then(a => {
    offset = Date.parse(a.now) - (sent + Date.now()) / 2;
    marks = { minute: a.minute, before: a.before, last: a.last_id };
    live.chart = "placed";
    live.retainedFrom = a.retained_from ? new Date(a.retained_from) : null;
    const waiting = live.unplaced;
    live.unplaced = [];
    for (const u of waiting) place(u.id, u.type, u.at);
    forgetOld();
    notify({ marks: true });
  }, e => {
    // A server without marks (404) keeps the count by arrival, and the page says so;
    // another failure is tried again at the next minute.
    if (e instanceof APIError && e.status === 404) {
      marksFailed = true;
      live.chart = "arrival";
      for (const u of live.unplaced) bump(Math.floor(u.at / 60000), u.type);
      live.unplaced = [];
      notify({ marks: false });
    }
  }).finally(() => { marking = null; });
  return marking;
}

setInterval(() => { if (live.unplaced.length && started) refreshMarks(); }, 60000);

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
        onOpen: () => {
          if (resuming && live.lastId > 0) setState("resumed", `connected, resumed from id ${live.lastId}`);
          else setState("connected", "connected");
          refreshMarks();
        },
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
