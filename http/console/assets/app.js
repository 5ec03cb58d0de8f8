// The console's entry: it learns whether the API wants a token, asks for one if so
// before anything else is loaded, and then draws the page the URL's fragment names.
// Pages live in the fragment (#/intent/ID) so that the server serves one page for all.

import { config, token, setToken, clearToken, onUnauthorized } from "./api.js";
import { h } from "./dom.js";
import { live, subscribe, start } from "./events.js";
import { livePage } from "./live.js";
import { intentPage } from "./intent.js";
import { proofPage } from "./proof.js";
import { policyPage } from "./policy.js";
import { webhooksPage } from "./webhooks.js";

const main = document.getElementById("main");
const conn = document.getElementById("conn");

const pages = { live: livePage, intent: intentPage, proof: proofPage, policy: policyPage, webhooks: webhooksPage };

// leave is the cleanup of the page on screen (timers, listeners).
let leave = () => {};

function route() {
  if (config.authRequired && !token()) return askToken();
  const [, name = "live", ...rest] = location.hash.replace(/^#/, "").split("/");
  const page = pages[name] ? name : "live";
  const arg = decodeURIComponent(rest.join("/"));
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.page === page) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  leave();
  main.replaceChildren();
  start();
  leave = pages[page](main, arg) || (() => {});
  main.focus({ preventScroll: true });
}

function askToken(reason = "") {
  leave();
  leave = () => {};
  const input = h("input", { type: "password", id: "token", name: "token", autocomplete: "off", required: true });
  const form = h("form", {
    class: "card", id: "token-form",
    onsubmit: e => {
      e.preventDefault();
      if (!input.value.trim()) return;
      setToken(input.value.trim());
      route();
    },
  },
  h("h1", {}, "Token"),
  h("p", {}, "This server wants a bearer token with the read role. It is kept in this tab only and sent in the Authorization header."),
  reason && h("p", { class: "error", role: "alert" }, reason),
  h("div", { class: "row" }, h("label", { for: "token" }, "Bearer token", input), " ", h("button", { type: "submit" }, "Use token")));
  main.replaceChildren(form);
  input.focus();
}

function showConn() {
  conn.dataset.state = live.state;
  conn.textContent = live.stateText ? "Stream: " + live.stateText : "";
}

async function boot() {
  try {
    const r = await fetch("config.json", { cache: "no-store" });
    Object.assign(config, { authRequired: !!(await r.json()).auth_required });
  } catch {
    // Without it the API's answers tell: a 401 brings up the token form.
  }
  onUnauthorized(message => {
    clearToken();
    askToken(`The server refused the token: ${message}`);
  });
  subscribe(showConn);
  window.addEventListener("hashchange", route);
  route();
}

boot();
