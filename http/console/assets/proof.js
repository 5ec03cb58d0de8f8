// The Proof page: a decided intent's bundle, fetched and checked here against the key
// the server gives in /info; or a bundle file from elsewhere, dropped or chosen, checked
// against a key typed in.

import { call, info } from "./api.js";
import { h, agentKey, errorBox, intentLink } from "./dom.js";
import { lookupForm } from "./intent.js";
import { parseTime } from "./mandate.js";
import { CHECKS, verifyBundle } from "./verify.js";
import { alarms, cosignatures, witnessRows, witnesses } from "./witness.js";

export function proofPage(main, id) {
  main.append(h("h1", {}, "Proof"), lookupForm("proof", "Intent id", id));
  const out = h("div", { id: "proof-result", "aria-live": "polite" });
  main.append(out);
  if (id) fromServer(id, out);
  main.append(dropZone(out));
}

async function fromServer(id, out) {
  out.replaceChildren(h("p", { class: "muted" }, "Fetching the bundle…"));
  try {
    const [i, text, list] = await Promise.all([info(), call("/intents/" + encodeURIComponent(id) + "/proof").then(r => r.text()),
      witnesses().catch(() => null)]);
    if (!i.public_key) throw new Error("this server reports no signing key (GET /info has no public_key)");
    const v = await verifyBundle(text, i.public_key, "server");
    await addWitnesses(v, text, list);
    out.replaceChildren(h("p", { class: "muted" }, "The bundle of intent ", intentLink(id), ", checked against this server's key from GET /info, ",
      h("span", { class: "mono" }, i.public_key), "."), show(v, "server"), alarms(list) || "");
  } catch (e) {
    out.replaceChildren(errorBox(e));
  }
}

function dropZone(out) {
  const file = h("input", { type: "file", id: "bundle-file", accept: "application/json,.json" });
  const key = h("input", { type: "text", id: "trusted-key", autocomplete: "off", spellcheck: "false", placeholder: "Base58 Ed25519 public key" });
  const status = h("p", { class: "muted", id: "drop-status" }, "No file chosen.");
  let text = null, name = "";
  // The key the field holds was put there by "Use this server's key", not typed in.
  let serverKey = "";
  const check = async () => {
    if (text === null) { status.textContent = "Choose or drop a bundle file first."; return; }
    out.replaceChildren(h("p", { class: "muted" }, `Checking ${name}…`));
    const k = key.value.trim();
    const source = k && k === serverKey ? "server" : "given";
    const v = await verifyBundle(text, k, source);
    await addWitnesses(v, text, await witnesses().catch(() => null));
    out.replaceChildren(h("p", { class: "muted" }, `The file ${name}, checked against `, k
      ? h("span", { class: "mono" }, k) : "the key inside it (no key typed in: not trusted)", "."), show(v, source));
    out.scrollIntoView({ block: "start" });
  };
  const load = async f => {
    if (!f) return;
    if (f.size > 16 << 20) { status.textContent = `${f.name} is ${f.size} bytes: not a proof bundle.`; return; }
    text = await f.text();
    name = f.name;
    status.textContent = `${f.name}, ${f.size} bytes.`;
    check();
  };
  file.addEventListener("change", () => load(file.files[0]));
  const zone = h("div", { class: "drop", id: "drop" },
    h("p", {}, "Drop a bundle file here, or ", h("label", { for: "bundle-file", class: "inline" }, "choose one: ", file)), status);
  zone.addEventListener("dragover", e => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", e => { e.preventDefault(); zone.classList.remove("over"); load(e.dataTransfer.files[0]); });
  const useServer = h("button", { type: "button", class: "secondary", onclick: async () => {
    try { key.value = serverKey = (await info()).public_key || ""; } catch (e) { status.textContent = e.message; }
  } }, "Use this server's key");
  return h("section", { class: "card", "aria-labelledby": "drop-h" },
    h("h2", { id: "drop-h" }, "Check a bundle file"),
    h("form", { class: "row", onsubmit: e => { e.preventDefault(); check(); } },
      h("label", { for: "trusted-key" }, "Key to trust (Base58; empty: the bundle's own, which proves less)", key),
      useServer, h("button", { type: "submit" }, "Check")),
    zone);
}

// keyWords says how far the key a bundle was checked against is to be trusted: one the
// person gave is theirs to vouch for; one this page fetched from the server whose proof
// it checks shows only that the server signed consistently, as `intentctl verify` says of
// a key taken from GET /info.
const keyWords = {
  given: " trusted (given)",
  server: " this server's own key (GET /info): it shows this server signed the receipt, not that the server is the one you trust; compare the key with one you got another way",
};

// mandateRows are what a purchase's receipt binds of its mandate: which mandate, signed
// by whom; its totals before the purchase, which the policy was run again with; the
// purchase's amount; and the decision's time, which is the policy's decision.time.
function mandateRows(m) {
  const unix = Math.floor(parseTime(m.decided_at).date.getTime() / 1000);
  return [
    h("dt", {}, "mandate"), h("dd", { id: "proof-mandate" }, h("span", { class: "mono" }, m.id), ", ",
      m.authorship === "Unsigned" ? "unsigned" : ["signed by ", m.authorship, m.author_key ? [" ", h("span", { class: "mono" }, m.author_key)] : null],
      h("br"), h("span", { class: "muted" }, "the intent is a purchase under it, with its policy and attrs")),
    h("dt", {}, "totals before"), h("dd", { id: "proof-totals" }, `${m.spent} spent in ${m.purchases} purchase(s); `,
      `in the period: ${m.period_spent} in ${m.period_purchases}`),
    h("dt", {}, "amount"), h("dd", { id: "proof-amount" }, String(m.amount)),
    h("dt", {}, "decided"), h("dd", { id: "proof-decided" }, h("span", { class: "mono" }, m.decided_at), ` (decision.time ${unix})`),
  ];
}

// addWitnesses puts in a verified bundle's report the cosignatures of its log
// checkpoint, checked under the witness keys of list (GET /log/witnesses), and the
// server's word on the quorum; a bundle without a log has none.
async function addWitnesses(v, text, list) {
  if (v.error) return;
  let b;
  try { b = JSON.parse(text); } catch { return; }
  if (!b.log || typeof b.log.checkpoint !== "string") return;
  v.report.witnesses = { cosigs: await cosignatures(b.log.checkpoint, list), word: b.log_witnesses || null };
}

// show draws the verdict as `intentctl verify` words it, then each check; source is where
// the key came from: "given" (typed in) or "server" (this server's GET /info).
function show({ results, report, error }, source = "given") {
  const verdict = error
    ? h("p", { class: "verdict bad", id: "verdict", role: "alert" }, `verification FAILED: check ${error.check}: ${error.message}`)
    : h("p", { class: "verdict ok", id: "verdict" }, `verified: the proof of intent ${report.intentID} holds`,
      report.keyTrusted ? (source === "server" ? " (against this server's own key)" : "") : " (against the bundle's own key: not trusted)",
      h("span", { class: "sub" }, "Every check passed, the policy run again on the evidence among them."));
  const names = new Map(CHECKS);
  const list = h("ol", { class: "checks", "aria-label": "Checks" }, results.map(r => h("li", { class: r.status === "fail" ? "fail" : "", "data-check": r.check, "data-status": r.status },
    h("span", { class: "badge " + { pass: "success", fail: "failure", skipped: "skipped" }[r.status] }, r.status),
    h("span", { class: "name" }, h("strong", { class: "mono" }, r.check), " ", names.get(r.check) || ""),
    h("span", { class: "msg" }, r.message))));
  const parts = [verdict];
  if (!error) {
    const kv = h("dl", { class: "kv" },
      h("dt", {}, "outcome"), h("dd", {}, report.outcome + (report.failures.length ? ` (${report.failures.length} constraint failure(s))` : "")));
    if (report.failureKind) kv.append(h("dt", {}, "kind"), h("dd", {}, report.failureKind));
    if (report.evidenceMissing.length) kv.append(h("dt", {}, "missing"), h("dd", { class: "mono" }, report.evidenceMissing.join(", ")));
    for (const f of report.failures) kv.append(h("dt", {}, `constraint ${f.index}`), h("dd", {}, h("span", { class: "mono" }, f.pretty_expr), h("br"), f.reason));
    kv.append(h("dt", {}, "intent"), h("dd", {}, intentLink(report.intentID)),
      h("dt", {}, "policy"), h("dd", {}, h("a", { class: "mono", href: "#/policy/" + report.policyID }, report.policyID)),
      h("dt", {}, "author"), h("dd", { class: "mono" }, report.authorship));
    // As intentctl verify words it: who proposed, to which host, and whether the person
    // chose that agent.
    if (report.agent) {
      const a = report.agent;
      kv.append(h("dt", {}, "agent"), h("dd", { id: "proof-agent", "data-delegated": String(a.delegated) }, agentKey(a, true),
        `, signed the proposal to ${a.authority}; `,
        a.delegated ? "delegated to by the author, who listed its key in the intent" : "the intent delegates to no agent in particular"));
    }
    if (report.mandate) kv.append(...mandateRows(report.mandate));
    if (report.witnesses && (report.witnesses.cosigs.length || report.witnesses.word)) kv.append(...witnessRows(report.witnesses.cosigs, report.witnesses.word));
    kv.append(
      h("dt", {}, "key"), h("dd", {}, h("span", { class: "mono" }, report.publicKey), report.keyTrusted ? keyWords[source] : " NOT trusted: the key inside the bundle"),
      h("dt", {}, "issued"), h("dd", { class: "mono" }, report.issuedAt));
    parts.push(h("section", { class: "card" }, kv));
  }
  parts.push(h("section", { class: "card", "aria-labelledby": "checks-h" }, h("h2", { id: "checks-h" }, "Checks"), list));
  if (report.notes && report.notes.length) parts.push(h("ul", { class: "muted" }, report.notes.map(n => h("li", {}, n))));
  return h("div", {}, parts);
}
