// The Webhooks page: the endpoints the service pushes its outcomes to and the health of
// each (its status, the last event delivered, its last attempt, since when it fails, the
// member delivering it), with a button to disable or enable it. The routes are an
// admin's: with a token of another role the page says which role it needs.
//
// Nothing on the event stream says an endpoint's health changed (a delivery is not an
// outcome), so the page reads GET /webhooks again every few seconds while it is shown.

import { getJSON, call, APIError } from "./api.js";
import { h, badge, errorBox, time } from "./dom.js";

// REFRESH is how often the page reads the endpoints again, in milliseconds.
const REFRESH = 5000;

export function webhooksPage(main) {
  const note = h("p", { id: "webhooks-note", role: "status", "aria-live": "polite" });
  const body = h("div", { id: "webhooks", "aria-busy": "true" }, h("p", { class: "muted" }, "Loading…"));
  main.append(h("h1", {}, "Webhooks"),
    h("p", { class: "muted" }, "The endpoints outcomes are pushed to, each event a signed POST, and how their deliveries stand."),
    note, body);
  let stopped = false;
  // load reads the endpoints and redraws them; focus names the endpoint whose button
  // takes the keyboard's focus after (the one just used, which was disabled meanwhile).
  const load = async focus => {
    let view;
    try {
      view = render(await getJSON("/webhooks"), act);
    } catch (e) {
      view = explain(e);
    }
    if (stopped) return;
    // The redraw keeps the keyboard's place: the button that had the focus has it again.
    const had = document.activeElement && document.activeElement.closest && document.activeElement.closest("[data-webhook] button");
    const key = focus || (had ? had.closest("[data-webhook]").dataset.webhook : "");
    body.replaceChildren(view);
    body.setAttribute("aria-busy", "false");
    if (key) {
      const again = body.querySelector(`[data-webhook="${CSS.escape(key)}"] button`);
      if (again) again.focus({ preventScroll: true });
    }
  };
  // act enables or disables an endpoint, says what came of it, and redraws.
  const act = async (wh, action, button) => {
    button.disabled = true;
    try {
      const r = await call(`/webhooks/${encodeURIComponent(wh.id)}/${action}`, { method: "POST" });
      const now = await r.json();
      note.replaceChildren(`${action === "enable" ? "Enabled" : "Disabled"} ${wh.url}: it is ${now.status}.`);
    } catch (e) {
      note.replaceChildren(errorBox(e));
    }
    await load(wh.id);
  };
  load();
  const timer = setInterval(() => load(), REFRESH);
  return () => { stopped = true; clearInterval(timer); };
}

// explain says why the endpoints could not be read, with what to do where it can.
function explain(e) {
  if (e instanceof APIError && e.status === 403) {
    return errorBox(new Error(`Webhook endpoints are an admin's: this token has not the admin role (${e.message}).`));
  }
  return errorBox(e);
}

function render(list, act) {
  const hooks = list.webhooks || [];
  const out = [];
  if (!hooks.length) {
    out.push(h("p", { class: "muted", id: "webhooks-none" }, "No webhook endpoints. An admin registers one with ",
      h("code", {}, "intentctl webhook create URL"), " or POST /webhooks."));
  } else {
    out.push(h("div", { class: "grid" }, hooks.map(wh => endpoint(wh, act))));
  }
  if (list.public_key) {
    out.push(h("p", { class: "muted webhook-key" }, "v1a signatures verify with ", h("span", { class: "mono", id: "webhook-public-key" }, list.public_key)));
  }
  return h("div", {}, out);
}

const STATUS_WORDS = {
  active: "delivering",
  failing: "an event is being retried",
  disabled: "deliveries stopped",
};

// endpoint is one endpoint's card.
function endpoint(wh, act) {
  const last = (wh.recent_attempts || [])[0];
  const enable = wh.status === "disabled";
  const action = enable ? "enable" : "disable";
  const button = h("button", {
    type: "button", class: enable ? "" : "secondary", "data-action": action,
    "aria-label": `${enable ? "Enable" : "Disable"} the webhook to ${wh.url}`,
    onclick: e => act(wh, action, e.currentTarget),
  }, enable ? "Enable" : "Disable");
  const rows = [
    ["Id", h("span", { class: "mono" }, wh.id)],
    ["Delivered through", h("span", { "data-field": "delivered" }, wh.delivered_through ? `event ${wh.delivered_through}` : "no event yet")],
    ["Last attempt", h("span", { "data-field": "last" }, last ? attempt(last) : h("span", { class: "muted" }, "none yet"))],
  ];
  if (wh.failing_since) {
    rows.push(["Failing since", h("span", { "data-field": "failing" }, time(wh.failing_since),
      `, attempt ${wh.attempt || 1}`, wh.next_attempt ? [", next at ", time(wh.next_attempt)] : null)]);
  }
  if (wh.disabled_reason) rows.push(["Disabled", h("span", { "data-field": "disabled" }, wh.disabled_reason)]);
  if (wh.skipped) rows.push(["Skipped", `${wh.skipped} event(s) the event log no longer held`]);
  rows.push(["Deliverer", h("span", { "data-field": "deliverer", class: wh.deliverer ? "mono" : "muted" }, wh.deliverer || "none at the moment")]);
  rows.push(["Events", selection(wh)]);
  rows.push(["Signed", wh.asymmetric ? "v1 (HMAC) and v1a (Ed25519)" : "v1 (HMAC)"]);
  return h("section", { class: "card webhook", "data-webhook": wh.id, "data-status": wh.status, "aria-label": `Webhook to ${wh.url}` },
    h("h2", {}, badge(wh.status), " ", h("span", { class: "mono" }, wh.url)),
    h("p", { class: "muted" }, STATUS_WORDS[wh.status] || ""),
    h("dl", { class: "kv" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("p", { class: "row" }, button));
}

// attempt is one attempt in words: the event, when, the answer or why none came, and
// how long it took.
function attempt(a) {
  const ok = !a.error && a.status >= 200 && a.status < 300;
  const answer = a.status ? `answered ${a.status}` : "no answer";
  return [`event ${a.event_id}, `, time(a.at), ": ",
    h("span", { class: ok ? "ok" : "bad" }, ok ? "taken" : "not taken"), `, ${answer} in ${Number(a.latency_ms).toFixed(1)} ms`,
    a.error && a.status === 0 ? [h("br"), h("span", { class: "error-text" }, a.error)] : null];
}

function selection(wh) {
  const parts = [];
  if (wh.types && wh.types.length) parts.push("type " + wh.types.join(" or "));
  if (wh.policy_ids && wh.policy_ids.length) parts.push("policy " + wh.policy_ids.join(" or "));
  if (wh.mandate_ids && wh.mandate_ids.length) parts.push("mandate " + wh.mandate_ids.join(" or "));
  return parts.length ? parts.join("; ") : "all";
}
