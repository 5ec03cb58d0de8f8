// The Policy page: a policy's canonical text, whether it delegates to agents, its amount
// and period when it has them, its parameters and the evidence it reads.

import { getText } from "./api.js";
import { h, errorBox } from "./dom.js";
import { lookupForm } from "./intent.js";
import { parsePolicy, evidenceRead } from "./policytext.js";

export function policyPage(main, id) {
  main.append(h("h1", {}, "Policy"), lookupForm("policy", "Policy id", id));
  if (!id) {
    main.append(h("p", { class: "muted" }, "Give a policy id, or open one from an intent."));
    return;
  }
  const body = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  main.append(body);
  getText("/policies/" + encodeURIComponent(id)).then(text => {
    const p = parsePolicy(text);
    const ev = evidenceRead(p);
    body.replaceChildren(
      h("dl", { class: "kv card" },
        h("dt", {}, "Id"), h("dd", { class: "mono" }, id),
        h("dt", {}, "Name"), h("dd", { class: "mono" }, p.name),
        h("dt", {}, "Extractor"), h("dd", {}, p.extractor || h("span", { class: "muted" }, "chosen by the server's rules")),
        h("dt", {}, "Agents"), h("dd", { id: "policy-agents" }, p.agents
          ? ["delegated: only an agent whose key the intent lists in ", h("span", { class: "mono" }, "parameters." + p.agents), " may propose, its proposal signed (RFC 9421)"]
          : h("span", { class: "muted" }, "not delegated: any caller may propose; a signed proposal's agent is recorded")),
        mandateRows(p),
        h("dt", {}, "Constraints"), h("dd", {}, String(p.constraints.length))),
      h("div", { class: "grid" },
        h("section", { class: "card", "aria-labelledby": "par-h" }, h("h2", { id: "par-h" }, "Parameters (the intent's attrs)"),
          fields(p.parameters, "This policy takes no parameters.")),
        h("section", { class: "card", "aria-labelledby": "evi-h" }, h("h2", { id: "evi-h" }, "Evidence it reads"),
          ev.declared ? null : h("p", { class: "muted" }, "No evidence block: these are the fields its constraints name; the server infers their types."),
          fields(ev.fields, "It reads no evidence."))),
      h("section", { class: "card", "aria-labelledby": "txt-h" }, h("h2", { id: "txt-h" }, "Canonical text"),
        h("pre", { class: "block", id: "policy-text" }, text)));
  }, e => body.replaceChildren(errorBox(e)));
}

const PERIOD_WORDS = {
  day: "the period totals count in a day, from 00:00 UTC",
  week: "the period totals count in a week, from Monday 00:00 UTC (ISO 8601)",
  month: "the period totals count in a month, from the first at 00:00 UTC",
};

// mandateRows show a policy's amount and period parts, in the words of its canonical
// text (amount EXPR, period day|week|month), when it has them: what one purchase under a
// mandate costs, and the calendar period its period totals count in.
function mandateRows(p) {
  const rows = [];
  if (p.amount) rows.push(h("dt", {}, "Amount"), h("dd", { id: "policy-amount" }, h("span", { class: "mono" }, p.amount), h("br"),
    h("span", { class: "muted" }, "the amount of one purchase under a mandate: its totals are sums of these")));
  if (p.period) rows.push(h("dt", {}, "Period"), h("dd", { id: "policy-period" }, h("span", { class: "mono" }, p.period), h("br"),
    h("span", { class: "muted" }, PERIOD_WORDS[p.period])));
  return rows;
}

function fields(list, none) {
  if (!list.length) return h("p", { class: "muted" }, none);
  return h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "name"), h("th", { scope: "col" }, "type"), h("th", { scope: "col" }, "required"))),
    h("tbody", {}, list.map(f => h("tr", {}, h("th", { scope: "row", class: "mono" }, f.name), h("td", { class: "mono type" }, f.type),
      h("td", {}, f.optional ? "optional" : "yes"))))));
}
