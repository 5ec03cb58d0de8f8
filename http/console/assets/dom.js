// A small helper to build the DOM from code: every page is made of elements built here,
// never of HTML strings, so that no value from the server is ever read as markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function badge(state, text = state) {
  return h("span", { class: "badge " + state }, text);
}

export function errorBox(e) {
  return h("p", { class: "error", role: "alert" }, e.message || String(e));
}

export function intentLink(id) {
  return h("a", { href: "#/intent/" + encodeURIComponent(id), class: "mono" }, id);
}

// agentKey shows the agent of an outcome ({key, tag}, as a status or an event names it):
// its Base58 key cut to its ends, which tell keys apart at a glance, the whole key in the
// title and in data-key for whoever needs to compare it; then its tag, when it has one.
// full shows the whole key, where there is room for it.
export function agentKey(agent, full = false) {
  const k = agent.key;
  const short = !full && k.length > 14 ? k.slice(0, 6) + "…" + k.slice(-4) : k;
  return h("span", { class: "agent", "data-key": k },
    full ? h("span", { class: "mono" }, k) : h("abbr", { class: "mono", title: k }, short),
    agent.tag ? [" ", h("span", { class: "tag" }, agent.tag)] : null);
}

export function time(t) {
  if (!t) return "";
  const d = new Date(t);
  return h("time", { datetime: d.toISOString(), title: d.toISOString() }, d.toLocaleString());
}

// duration writes a number of seconds as 1d 02:03:04.
export function duration(s) {
  s = Math.max(0, Math.floor(s));
  const d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600), mm = Math.floor(s % 3600 / 60), ss = s % 60;
  const pad = n => String(n).padStart(2, "0");
  return (d ? d + "d " : "") + `${pad(hh)}:${pad(mm)}:${pad(ss)}`;
}

// kvTable is a two-column table of an object's members, values as JSON unless strings.
export function kvTable(caption, obj, names = ["field", "value"]) {
  const keys = Object.keys(obj || {}).sort();
  if (!keys.length) return h("p", { class: "muted" }, "none");
  return h("div", { class: "table-wrap" }, h("table", {},
    h("caption", { class: "skip" }, caption),
    h("thead", {}, h("tr", {}, names.map(n => h("th", { scope: "col" }, n)))),
    h("tbody", {}, keys.map(k => h("tr", {},
      h("th", { scope: "row", class: "mono" }, k),
      h("td", { class: "mono" }, typeof obj[k] === "string" ? JSON.stringify(obj[k]) : JSON.stringify(obj[k])))))));
}
