// The Live page: the outcome stream as it arrives, filtered by type and intent id, with
// counts per minute over the last hour.

import { h, agentKey, badge, intentLink } from "./dom.js";
import { live, subscribe, chartMinutes, serverNow } from "./events.js";

const SHOWN = 200; // rows drawn at most; the newest first

const NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  for (const c of children) el.append(c);
  return el;
}

export function livePage(main) {
  const type = h("select", { id: "f-type" },
    h("option", { value: "" }, "all types"),
    ["success", "failure", "expired"].map(t => h("option", { value: t }, t)));
  const intent = h("input", { type: "text", id: "f-intent", placeholder: "part of an intent id", autocomplete: "off", spellcheck: "false" });
  const counts = h("p", { class: "counts", "aria-live": "polite" });
  const chart = h("div", { class: "chart" });
  const note = h("span", { class: "muted", id: "chart-note" });
  const tbody = h("tbody", { id: "events" });
  const summary = h("p", { class: "muted" });

  main.append(
    h("h1", {}, "Live outcomes"),
    h("form", { class: "filters", role: "search", onsubmit: e => e.preventDefault() },
      h("label", { for: "f-type" }, "Type", type),
      h("label", { for: "f-intent" }, "Intent id", intent)),
    counts,
    h("section", { class: "card", "aria-labelledby": "chart-h" },
      h("h2", { id: "chart-h" }, "Outcomes per minute, last hour"),
      chart,
      h("p", { class: "legend" }, h("span", { class: "success" }, "success"), h("span", { class: "failure" }, "failure"), h("span", { class: "expired" }, "expired"),
        note)),
    h("section", { "aria-labelledby": "ev-h" },
      h("h2", { id: "ev-h" }, "Events, newest first"),
      summary,
      h("div", { class: "table-wrap" }, h("table", { class: "events" },
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "id"), h("th", { scope: "col" }, "outcome"), h("th", { scope: "col" }, "intent"),
          h("th", { scope: "col", class: "hide-narrow" }, "agent"),
          h("th", { scope: "col", class: "hide-narrow" }, "solution"), h("th", { scope: "col", class: "hide-narrow" }, "reason"))),
        tbody))));

  const matches = e => (!type.value || e.type === type.value) &&
    (!intent.value.trim() || (e.data.intent_id || "").includes(intent.value.trim().toLowerCase()));

  const row = e => h("tr", { "data-id": e.id, "data-type": e.type },
    h("td", { class: "id" }, e.id),
    h("td", {}, badge(e.type, e.type === "failure" && e.data.failure_kind ? `failure: ${e.data.failure_kind}` : e.type)),
    // The agent whose signed proposal the intent took, nothing for an unsigned proposal:
    // in its own column where there is room, under the intent where there is not.
    h("td", { class: "intent" }, intentLink(e.data.intent_id),
      e.data.agent ? h("span", { class: "show-narrow" }, "agent ", agentKey(e.data.agent)) : null),
    h("td", { class: "agent hide-narrow" }, e.data.agent ? agentKey(e.data.agent) : ""),
    h("td", { class: "hide-narrow mono" }, e.data.proposal ? e.data.proposal.solution : ""),
    h("td", { class: "hide-narrow" }, e.data.reason || ""));

  // drawRows keeps the rows already drawn in place and only adds the new ones above and
  // drops the old ones below: a row taken out of the page and put back loses the
  // keyboard's focus, and a person tabbing to an intent's link while outcomes arrive
  // would be thrown back to the top of the page at every event.
  const drawn = new Map(); // event id -> its row
  function drawRows() {
    const shown = live.events.filter(matches);
    const want = shown.slice(-SHOWN).reverse();
    const keep = new Set(want.map(e => e.id));
    for (const [id, tr] of drawn) {
      if (!keep.has(id)) { tr.remove(); drawn.delete(id); }
    }
    let next = tbody.firstElementChild;
    for (const e of want) {
      let tr = drawn.get(e.id);
      if (tr === next) { next = next.nextElementSibling; continue; }
      if (!tr) { tr = row(e); drawn.set(e.id, tr); }
      tbody.insertBefore(tr, next);
    }
    summary.textContent = shown.length
      ? `${shown.length} of the ${live.events.length} events this page holds` + (shown.length > SHOWN ? `; the newest ${SHOWN} shown` : "")
      : live.events.length ? "No event matches the filters." : "No event yet: outcomes appear here as intents are decided or expire.";
  }

  function drawCounts() {
    const c = live.counts;
    counts.replaceChildren(
      h("span", {}, badge("success"), " ", c.success),
      h("span", {}, badge("failure"), " ", c.failure),
      h("span", {}, badge("expired"), " ", c.expired),
      h("span", { class: "muted" }, `last id ${live.lastId}`));
  }

  // The chart is in the server's minutes: each replayed or resumed event is placed in
  // the minute the server stored it, not the one it reached this page in.
  function drawChart() {
    const now = Math.floor(serverNow() / 60000);
    const minutes = chartMinutes();
    const W = 600, H = 100, pad = 1, bw = (W - 2) / 60;
    let max = 1;
    for (let m = now - 59; m <= now; m++) {
      const v = minutes.get(m);
      if (v) max = Math.max(max, v.success + v.failure + v.expired);
    }
    const bars = [];
    let total = 0;
    for (let i = 0; i < 60; i++) {
      const minute = now - 59 + i;
      const v = minutes.get(minute);
      if (!v) continue;
      let y = H - pad;
      for (const t of ["success", "failure", "expired"]) {
        if (!v[t]) continue;
        total += v[t];
        const bh = v[t] / max * (H - pad - 4);
        y -= bh;
        bars.push(svg("rect", { class: t, x: 1 + i * bw, y, width: Math.max(bw - 1, 1), height: bh, "data-minute": minute, "data-count": v[t] },
          svg("title", {}, `${v[t]} ${t}, ${59 - i} min ago`)));
      }
    }
    const from = live.retainedFrom && live.retainedFrom.getTime() > (now - 59) * 60000
      ? `; the server no longer holds outcomes before ${live.retainedFrom.toLocaleTimeString()}` : "";
    note.textContent = {
      placed: "each in the minute the server stored it, by the server's clock" + from,
      waiting: "placing them in their minutes…",
      arrival: "counted when they reached this page: the server did not say when they happened",
    }[live.chart];
    chart.replaceChildren(h("div", { class: "axis", "aria-hidden": "true" }, h("span", {}, `max ${max}/min`)), svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img",
      "data-chart": live.chart, "data-minute": now,
      "aria-label": `${total} outcomes in the last hour, at most ${max === 1 && total === 0 ? 0 : max} in one minute` },
    svg("line", { x1: 0, x2: W, y1: H - pad, y2: H - pad, stroke: "#c4c8cc" }),
    ...bars), h("div", { class: "axis", "aria-hidden": "true" }, h("span", {}, "60 min ago"), h("span", {}, "now")));
  }

  const redraw = () => { drawRows(); drawCounts(); drawChart(); };
  type.addEventListener("change", drawRows);
  intent.addEventListener("input", drawRows);
  redraw();

  // Redraws are batched, one per 100 ms: a replay sends thousands of events at once.
  let pending = false;
  const off = subscribe(w => {
    if (!(w.event || "marks" in w) || pending) return;
    pending = true;
    setTimeout(() => { pending = false; redraw(); }, 100);
  });
  const tick = setInterval(drawChart, 15000);
  return () => { off(); clearInterval(tick); };
}
