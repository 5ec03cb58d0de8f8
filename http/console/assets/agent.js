// The agent check of a proof bundle, as proof.Verify's checkAgent makes it (proof/agent.go):
// a version 3 receipt, or a version 4 one of a purchase an agent signed, binds the RFC
// 9421 signature base its agent signed by its digest; the bundle carries the base and the
// request's body. The base must hash to that digest and carry the agent's Ed25519
// signature, cover a POST to this intent's proposal route (a purchase: its mandate's
// purchases route) whose content-digest is the body's, the body must be the proposal (a
// purchase: {"intent_id", "solution"} of this intent), and an intent whose policy
// delegates must list the agent's key. The messages are Go's, word for word.

import { goQuote } from "./policyvm.js";
import { base58Decode, base58Encode, bytesEqual, ed25519Verify, parseStrict, sha256, utf8 } from "./codec.js";
import { parseDictionary, parseList } from "./sfv.js";

// baseComponents reads a signature base back as httpsig.BaseComponents does: the value
// of each covered component by name, and the @signature-params value. A base whose lines
// do not match, name for name and in order, what its @signature-params lists is refused,
// so that it cannot claim to cover what it does not.
export function baseComponents(base) {
  const lines = base.split("\n");
  const sp = "\"@signature-params\": ";
  const last = lines.pop();
  if (!last.startsWith(sp)) throw new Error("httpsig: the base does not end with a \"@signature-params\" line");
  const params = last.slice(sp.length);
  let list;
  try { list = parseList(params); } catch (e) { throw new Error(`httpsig: the @signature-params value is not an RFC 8941 inner list: ${e.message}`); }
  if (list.length !== 1) throw new Error("httpsig: the @signature-params value is not one inner list");
  const il = list[0];
  if (!il.items) throw new Error("httpsig: the @signature-params value is not an inner list");
  if (il.items.length !== lines.length) {
    throw new Error(`httpsig: @signature-params lists ${il.items.length} components but the base has ${lines.length} lines before it`);
  }
  const components = new Map();
  lines.forEach((line, i) => {
    const { value: name, params: p } = il.items[i];
    if (typeof name !== "string" || p.size > 0 || /["\\]/.test(name)) throw new Error(`httpsig: component ${i + 1} of @signature-params is not a plain name`);
    const prefix = `"${name}": `;
    if (!line.startsWith(prefix)) throw new Error(`httpsig: line ${i + 1} of the base is not the ${goQuote(name)} component that @signature-params lists there`);
    if (components.has(name)) throw new Error(`httpsig: the base covers ${goQuote(name)} twice`);
    components.set(name, line.slice(prefix.length));
  });
  return { components, params };
}

// digestMatches is httpsig.DigestMatches: the Content-Digest value is a dictionary whose
// sha-256 member is a byte sequence equal to the body's SHA-256; other algorithms are
// ignored, as the service ignores them.
export async function digestMatches(value, body) {
  let dict;
  try { dict = parseDictionary(value); } catch { return false; }
  const m = dict.get("sha-256");
  if (!m || m.items || !(m.value instanceof Uint8Array)) return false;
  return bytesEqual(m.value, await sha256(body));
}

// goLowerASCII lowers a path as Go's strings.ToLower does, as far as a comparison with
// an ASCII path can tell: the two letters outside ASCII that Go lowers into it (KELVIN
// SIGN to k, İ to i) included; every other letter stays outside ASCII either way.
const goLowerASCII = s => s.replace(/[A-Z\u212a\u0130]/g, c => c === "\u212a" ? "k" : c === "\u0130" ? "i" : c.toLowerCase());

// equalFoldASCII is Go's strings.EqualFold of s and an ASCII string: the simple case
// folding joins KELVIN SIGN to k and LONG S to s, and nothing else outside ASCII to ASCII.
function equalFoldASCII(s, ascii) {
  const cps = [...s];
  if (cps.length !== ascii.length) return false;
  return cps.every((c, i) => {
    const w = ascii[i].toLowerCase();
    return c.toLowerCase() === w && c.charCodeAt(0) < 0x80 || c === "\u212a" && w === "k" || c === "\u017f" && w === "s";
  });
}

// coversPath is Go's test of the signed path against the route the receipt names: the
// route itself, or a path ending in it (a service behind a prefix).
const coversPath = (path, want) => equalFoldASCII(path, want) || goLowerASCII(path).endsWith(want.toLowerCase());

// readBody reads the body as Go's strict decoder reads an object of string members
// (valid UTF-8, no other member, no repeated name, names matched exactly; a member left
// out or null is ""), and answers those members, or null when Go would refuse it.
function readBody(body, names) {
  try {
    // ignoreBOM keeps a byte order mark in the text, where Go refuses it.
    const v = parseStrict(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body));
    if (!v || typeof v !== "object" || Array.isArray(v) || Object.keys(v).some(k => !names.includes(k))) return null;
    const out = {};
    for (const k of names) {
      const x = v[k] ?? "";
      if (typeof x !== "string" || !x.isWellFormed()) return null;
      out[k] = x;
    }
    return out;
  } catch {
    return null;
  }
}

const isUUID = s => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);

// checkSignedBody is Go's: the body the agent signed is the proposal, {"solution"} sent
// to the intent, or the purchase {"intent_id", "solution"} of this intent sent to its
// mandate.
function checkSignedBody(raw, solution, r, fail) {
  if (!r.mandate) {
    const body = readBody(raw, ["solution"]);
    if (!body || body.solution !== solution) fail("agent", "agent: the signed body is not the proposal");
    return;
  }
  const body = readBody(raw, ["intent_id", "solution"]);
  if (!body || body.solution !== solution) fail("agent", "agent: the signed body is not the purchase of the proposal");
  const id = isUUID(body.intent_id) ? body.intent_id.toLowerCase() : "";
  if (id !== r.intent_id) fail("agent", `agent: the signed purchase is of intent ${goQuote(body.intent_id)}, not ${r.intent_id}`);
}

// checkAgent checks a receipt's agent against the bundle's agent part (part: {base,
// body}, null when the bundle has none), the policy and the intent's attrs, in the order
// and words of proof.Verify; fail(check, message) throws. It sets report.agent and
// answers what the check established.
export async function checkAgent(part, r, policy, attrs, solution, report, fail) {
  if (!r.agent) {
    if (part) fail("bundle", `proof bundle: agent is present, but the receipt (version ${r.version}) names no agent`);
    if (policy.agents) fail("agent", "the intent's policy delegates to agents, but the receipt names none");
    return "no agent signed the proposal, and the policy delegates to none";
  }
  if (!part) fail("bundle", "proof bundle: agent is missing: a version 3 receipt binds what its agent signed");
  const a = r.agent;
  const base = utf8(part.base);
  const got = base58Encode(await sha256(base));
  if (got !== a.signature_base_digest) fail("agent", `agent: the signature base's digest is ${got}, the receipt binds ${a.signature_base_digest}`);
  // A key that is no curve point may be refused on import: for Go it does not verify.
  const verified = await ed25519Verify(base58Decode(a.key), base58Decode(a.signature), base).catch(() => false);
  if (!verified) fail("agent", `agent: the agent's signature does not verify under its key ${a.key}`);

  let comps, params;
  try { ({ components: comps, params } = baseComponents(part.base)); } catch (e) { fail("agent", `agent: the signature base cannot be read: ${e.message}`); }
  const get = name => comps.get(name) ?? "";
  const [wantPath, what] = r.mandate ? ["/mandates/" + r.mandate.id + "/purchases", "this mandate's purchases"]
    : ["/intents/" + r.intent_id + "/proposal", "this intent's proposal"];
  if (get("@method") !== "POST") fail("agent", `agent: the signature covers method ${goQuote(get("@method"))}, want POST`);
  if (!coversPath(get("@path"), wantPath)) fail("agent", `agent: the signature covers path ${goQuote(get("@path"))}, not ${what} (${wantPath})`);
  if (get("content-digest") === "") fail("agent", "agent: the signature does not cover content-digest");
  if (!await digestMatches(get("content-digest"), part.body)) fail("agent", "agent: the signed content-digest is not the sha-256 of the bundle's body");
  checkSignedBody(part.body, solution, r, fail);

  const agent = { key: a.key, tag: a.tag || "", delegated: false, authority: get("@authority"), params };
  if (policy.agents) {
    // Go reads the parameter's strings; any other value, or none, lists no key.
    const v = attrs.get(policy.agents);
    if (!(v && v.set && v.set.strs.includes(a.key))) fail("agent", `agent: the intent's parameter ${policy.agents} does not list the agent ${a.key}`);
    agent.delegated = true;
  } else {
    report.notes.push(`agent ${a.key} signed the proposal; the intent delegates to no agent in particular`);
  }
  report.agent = agent;
  return `${a.key}${a.tag ? ` (${a.tag})` : ""} signed the proposal to ${agent.authority}; ` +
    (agent.delegated ? `the intent's parameter ${policy.agents} lists its key` : "the intent delegates to no agent in particular");
}
