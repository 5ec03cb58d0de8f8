// The Intent page: one intent's story. Its status and timeline, its attributes, the
// policy's canonical text with each failed constraint marked and its reason beside it,
// the evidence, the solution and the agent that proposed it, and the deadline counting
// down while it is open.

import { getJSON, getText, APIError } from "./api.js";
import { h, agentKey, badge, errorBox, time, duration, kvTable } from "./dom.js";
import { subscribe, serverNow } from "./events.js";
import { parsePolicy } from "./policytext.js";

export function intentPage(main, id) {
  main.append(h("h1", {}, "Intent"), lookupForm("intent", "Intent id", id));
  if (!id) {
    main.append(h("p", { class: "muted" }, "Give an intent id, or open one from the Live page."));
    return;
  }
  const body = h("div", { "aria-live": "polite", "aria-busy": "true" }, h("p", { class: "muted" }, "Loading…"));
  main.append(body);
  let timer = 0;
  let stopped = false;
  const load = async () => {
    try {
      const view = await render(id, t => { timer = t; });
      if (!stopped) body.replaceChildren(view);
    } catch (e) {
      if (!stopped) body.replaceChildren(errorBox(e));
    }
    body.setAttribute("aria-busy", "false");
  };
  load();
  // The outcome of this intent arriving on the stream redraws the page.
  const off = subscribe(w => {
    if (w.event && w.event.data.intent_id === id.toLowerCase()) { clearInterval(timer); load(); }
  });
  return () => { stopped = true; off(); clearInterval(timer); };
}

// lookupForm is the id field at the top of the Intent, Proof and Policy pages.
export function lookupForm(page, label, value) {
  const input = h("input", { type: "text", id: page + "-id", name: "id", value: value || "", autocomplete: "off", spellcheck: "false", required: true });
  return h("form", { class: "row", role: "search", onsubmit: e => {
    e.preventDefault();
    location.hash = `#/${page}/${encodeURIComponent(input.value.trim())}`;
  } }, h("label", { for: page + "-id" }, label, input), h("button", { type: "submit" }, "Open"));
}

async function render(id, setTimer) {
  const path = "/intents/" + encodeURIComponent(id);
  const [authored, status, times] = await Promise.all([
    getJSON(path),
    getJSON(path + "/status"),
    getJSON(path + "/timeline").catch(() => null),
  ]);
  const intent = authored.intent;
  let policyText = null, policyError = null;
  try {
    policyText = await getText("/policies/" + encodeURIComponent(intent.policy_id));
  } catch (e) {
    if (!(e instanceof APIError)) throw e;
    policyError = e.code === "policy_not_found" ? "The policy has been deleted since; its proof still holds its bytecode." : e.message;
  }

  const st = status.status;
  const decided = st === "success" || st === "failure";
  const hasProof = st === "success" || st === "failure" && (status.failure_kind === "constraints" || status.failure_kind === "evidence");
  const view = h("div", {},
    h("p", {}, h("span", { class: "mono" }, intent.id), " ", badge(st, st === "failure" && status.failure_kind ? `failure: ${status.failure_kind}` : st),
      hasProof ? [" ", h("a", { href: "#/proof/" + intent.id }, "Check its proof")] : null));

  // The timeline, with a countdown while the intent waits for a proposal.
  const countdown = h("span", { class: "countdown", id: "countdown" });
  const tick = () => {
    // By the server's clock, as the deadline is, once the stream has learned it.
    const left = (new Date(times.expires_at) - serverNow()) / 1000;
    countdown.textContent = left > 0 ? duration(left) : "due now";
  };
  if (times && st === "open") { tick(); setTimer(setInterval(tick, 1000)); }
  const steps = [
    h("li", { class: "done" }, h("strong", {}, "Created"), " ", times ? time(times.created_at) : ""),
    h("li", { class: status.proposal ? "done" : "" }, h("strong", {}, "Proposed"), " ",
      times && times.proposed_at ? time(times.proposed_at) : status.proposal ? "" : h("span", { class: "muted" }, "not yet"),
      status.agent ? [" by agent ", agentKey(status.agent)] : null),
  ];
  if (st === "expired") {
    steps[1] = h("li", {}, h("strong", {}, "Proposed"), " ", h("span", { class: "muted" }, "never"));
    steps.push(h("li", { class: "exp" }, h("strong", {}, "Expired"), " ", times ? time(times.expires_at) : ""));
  } else if (decided) {
    steps.push(h("li", { class: st === "success" ? "done" : "bad" }, h("strong", {}, st === "success" ? "Decided: success" : "Decided: failure"), " ",
      times && times.finished_at ? time(times.finished_at) : ""));
  } else if (st === "processing") {
    steps.push(h("li", {}, h("strong", {}, "Deciding"), " ", h("span", { class: "muted" }, "extracting evidence and checking the policy")));
  } else {
    steps.push(h("li", {}, h("strong", {}, "Deadline"), " ", times ? [time(times.expires_at), " (in ", countdown, ")"] : h("span", { class: "muted" }, "unknown")));
  }
  view.append(h("section", { class: "card", "aria-labelledby": "tl-h" }, h("h2", { id: "tl-h" }, "Timeline"), h("ol", { class: "timeline" }, steps)));

  const facts = h("dl", { class: "kv" },
    h("dt", {}, "Policy"), h("dd", {}, h("a", { class: "mono", href: "#/policy/" + intent.policy_id }, intent.policy_id)),
    h("dt", {}, "Authorship"), h("dd", {}, describeAuthorship(authored.authorship)),
    h("dt", {}, "Solution"), h("dd", { class: "mono" }, status.proposal ? status.proposal.solution : h("span", { class: "muted" }, "none yet")));
  const delegatesTo = policyText !== null ? parsePolicy(policyText).agents : null;
  if (status.agent) facts.append(h("dt", {}, "Agent"), h("dd", { id: "agent" }, agentKey(status.agent, true), h("br"),
    h("span", { class: "muted" }, "signed the proposal (RFC 9421); ", agentWords(status.agent, intent.attrs, delegatesTo))));
  if (delegatesTo) facts.append(h("dt", {}, "Delegates to"), h("dd", { id: "delegates" }, delegated(intent.attrs, delegatesTo)));
  // A purchase under a mandate: the intent is the mandate's, its authority the mandate's
  // signature; its proof binds the mandate's totals it was decided against.
  if (status.mandate_id) facts.append(h("dt", {}, "Mandate"), h("dd", { id: "mandate", "data-mandate": status.mandate_id },
    h("span", { class: "mono" }, status.mandate_id), h("br"), h("span", { class: "muted" }, "a purchase under this mandate, with its policy and attrs; ",
      hasProof ? ["its ", h("a", { href: "#/proof/" + intent.id }, "proof"), " binds the mandate's totals, the amount and the decision's time"]
        : "its author's signature of the mandate authorizes it")));
  if (st === "failure") facts.append(h("dt", {}, "Reason"), h("dd", { id: "reason" }, status.reason));
  if (status.evidence_missing) facts.append(h("dt", {}, "Evidence missing"), h("dd", { class: "mono" }, status.evidence_missing.join(", ")));

  view.append(h("div", { class: "grid" },
    h("section", { class: "card", "aria-labelledby": "facts-h" }, h("h2", { id: "facts-h" }, "Summary"), facts),
    h("section", { class: "card", "aria-labelledby": "attrs-h" }, h("h2", { id: "attrs-h" }, "Attributes"), attrsTable(intent.attrs))));

  view.append(h("section", { class: "card", "aria-labelledby": "pol-h" }, h("h2", { id: "pol-h" }, "Policy"),
    policyText !== null ? policyListing(policyText, status.constraint_failures || []) : h("p", { class: "muted" }, policyError)));

  view.append(h("section", { class: "card", "aria-labelledby": "ev-h" }, h("h2", { id: "ev-h" }, "Evidence"),
    status.evidence ? kvTable("Evidence", status.evidence) : h("p", { class: "muted" }, decided ? "No evidence was extracted." : "Not extracted yet.")));
  return view;
}

// listedKeys are the keys an intent's agents parameter lists.
function listedKeys(attrs, param) {
  const v = attrs && attrs.fields && attrs.fields[param];
  return v && v.Set && Array.isArray(v.Set.String) ? v.Set.String : [];
}

// agentWords says whether the author chose the agent: delegatesTo is the policy's agents
// parameter, "" when it has none, null when the policy could not be read.
function agentWords(agent, attrs, delegatesTo) {
  if (delegatesTo === null) return "the policy is not at hand to say whether the intent delegates to it";
  if (!delegatesTo) return "the intent delegates to no agent in particular";
  return listedKeys(attrs, delegatesTo).includes(agent.key)
    ? "delegated to by the author, who listed its key in the intent"
    : "its key is NOT among those the intent lists";
}

function delegated(attrs, param) {
  const keys = listedKeys(attrs, param);
  if (!keys.length) return h("span", { class: "muted" }, `no agent: parameters.${param} lists none`);
  return h("ul", { class: "keys" }, keys.map(k => h("li", {}, agentKey({ key: k }))));
}

function describeAuthorship(a) {
  if (a === "Unsigned") return "Unsigned: no author asserted";
  const s = a && a.Signed;
  if (!s) return "unknown";
  if (s.Ed25519) return h("span", {}, "Ed25519, key ", h("span", { class: "mono" }, s.Ed25519.pub_key));
  if (s.Passkey) return h("span", {}, "Passkey, key ", h("span", { class: "mono" }, s.Passkey.pub_key));
  if (s.Multisig) return `Multisig, ${s.Multisig.signatures.length} signature(s), threshold ${s.Multisig.pub_key.threshold}`;
  return "unknown";
}

// attrValue writes an attribute in the wire form of spec 2.3 ({"Int": 3}, {"Set":
// {"String": [...]}}) as a reader expects it.
function attrValue(v) {
  const [kind, x] = Object.entries(v)[0] || [];
  if (kind === "Set") {
    const [inner, items] = Object.entries(x)[0] || [];
    return { type: `set<${(inner || "").toLowerCase()}>`, text: "{" + (items || []).map(i => JSON.stringify(i)).join(", ") + "}" };
  }
  return { type: (kind || "").toLowerCase(), text: JSON.stringify(x) };
}

function attrsTable(attrs) {
  const fields = attrs && attrs.fields ? attrs.fields : {};
  const names = Object.keys(fields).sort();
  if (!names.length) return h("p", { class: "muted" }, "none");
  return h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "name"), h("th", { scope: "col" }, "type"), h("th", { scope: "col" }, "value"))),
    h("tbody", {}, names.map(n => {
      const v = attrValue(fields[n]);
      return h("tr", {}, h("th", { scope: "row", class: "mono" }, n), h("td", { class: "mono type" }, v.type), h("td", { class: "mono" }, v.text));
    }))));
}

// policyListing shows the canonical text line by line, each failed constraint marked,
// with its reason under it, and read out as such by screen readers.
export function policyListing(text, failures) {
  const p = parsePolicy(text);
  const byLine = new Map();
  for (const f of failures) {
    const c = p.constraints[f.index];
    if (c) byLine.set(c.line, f);
  }
  const list = h("ol", { class: "policy mono", "aria-label": "Policy text" }, p.lines.map((line, n) => {
    const f = byLine.get(n);
    if (!f) return h("li", {}, line || " ");
    return h("li", { class: "failed", "data-index": f.index },
      h("span", { class: "mark", "aria-label": `failed constraint ${f.index}:` }, "✗ "), line.replace(/^ {2}/, ""),
      h("span", { class: "why" }, `constraint ${f.index} failed: ${f.reason}`));
  }));
  const unplaced = failures.filter(f => !p.constraints[f.index]);
  return h("div", {}, list, unplaced.length ? h("ul", {}, unplaced.map(f => h("li", {}, `constraint ${f.index} (${f.pretty_expr}): ${f.reason}`))) : null);
}
