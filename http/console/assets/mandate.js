// The mandate check of a proof bundle, as proof.Verify's checkMandate makes it
// (proof/mandate.go): a version 4 receipt is a purchase under a mandate, and binds the
// authored mandate by its digest, the mandate's totals before the purchase, its amount
// and the decision's time. The authored mandate must digest to the receipt's digest and
// its authorship verify; its id and policy must be the receipt's and its attrs the
// intent's; a success's amount is the policy's amount part on the evidence, a failure's
// 0. The policy is then run again in that context: the totals, and decision.time the
// Unix seconds of decided_at. The messages are Go's, word for word. The receipt's
// mandate member is read here too, as crypto's receipt decoder reads it.

import { amount, attrsJCS, decodeAttrs, goQuote } from "./policyvm.js";
import { base58Decode, base58Encode, digest, jcs, utf8 } from "./codec.js";
import { verifyAuthorship } from "./authorship.js";

export const RECEIPT_V4_FIELDS = ["mandate"];
const MANDATE_FIELDS = ["id", "authored_mandate_digest", "spent", "purchases", "period_spent", "period_purchases", "amount", "decided_at"];
const TOTALS = ["spent", "purchases", "period_spent", "period_purchases", "amount"];
const MAX_EXACT = 2 ** 53 - 1;
const isObject = x => x !== null && typeof x === "object" && !Array.isArray(x);

// RFC 3339 as Go's time.Parse reads it: a date that exists, a time of day before 24:00,
// and an offset of hours below 24.
const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)([.,]\d+)?(Z|([+-])(\d\d):(\d\d))$/;
// The form Go writes a time in UTC (RFC 3339 with nanoseconds, trailing zeros cut).
const CANONICAL_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z$/;

// parseTime reads an RFC 3339 time: {date, offset} (the Date to the millisecond, the
// offset in minutes), or null.
export function parseTime(s) {
  const m = typeof s === "string" ? RFC3339.exec(s) : null;
  if (!m) return null;
  const [y, mo, d, hh, mi, ss] = m.slice(1, 7).map(Number);
  // Not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  const t = new Date(0);
  t.setUTCFullYear(y, mo, 0);
  if (mo < 1 || mo > 12 || d < 1 || d > t.getUTCDate() || hh > 23 || mi > 59 || ss > 59) return null;
  let offset = 0;
  if (m[8] !== "Z") {
    const [oh, om] = [Number(m[10]), Number(m[11])];
    if (oh > 23 || om > 59) return null;
    offset = (m[9] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  t.setUTCFullYear(y, mo - 1, d);
  t.setUTCHours(hh, mi, ss, m[7] ? Math.floor(Number("0." + m[7].slice(1)) * 1000) : 0);
  return { date: new Date(t.getTime() - offset * 60000), offset };
}

// Go's zero time, 0001-01-01T00:00:00Z, which a receipt does not state.
const ZERO_TIME = -62135596800000;

// checkReceiptMandateShape holds the receipt's mandate member to the version, as the
// receipt decoder does (crypto/receiptmandate.go): present in version 4 only; its id, a
// digest, totals and an amount from 0 to 2^53-1, a decision time in UTC; each member
// written as the service writes it. fail(check, message) throws.
export function checkReceiptMandateShape(r, fail) {
  const bad = (field, reason) => fail("bundle", `proof bundle: receipt: receipt.${field}: ${reason}`);
  const spelled = () => fail("bundle", "proof bundle: receipt: receipt: not in the form the service writes (a value is spelled differently)");
  if (r.version !== 4) {
    if (!("mandate" in r)) return;
    if (r.mandate === null) spelled();
    bad("mandate", `present, but a version ${r.version} receipt has none`);
  }
  const m = r.mandate;
  if (m === undefined || m === null) bad("mandate", "missing, want the mandate of a version 4 receipt");
  if (!isObject(m)) fail("bundle", "proof bundle: receipt: receipt: mandate: want a JSON object");
  for (const k of Object.keys(m)) if (!MANDATE_FIELDS.includes(k)) fail("bundle", `proof bundle: receipt: receipt: mandate: unknown field ${JSON.stringify(k)}`);
  // A member left out or null reads as Go's zero value, and fails only where that
  // value does: then the receipt is not as the service writes it.
  const read = (k, type, zero) => {
    const v = m[k];
    if (v === undefined || v === null) return zero;
    if (type === "number" ? !Number.isInteger(v) : typeof v !== type) {
      fail("bundle", `proof bundle: receipt: receipt: mandate.${k}: want ${type === "number" ? "an integer" : "a string"}`);
    }
    return v;
  };
  if (read("id", "string", "") === "") bad("mandate.id", "empty");
  const d = read("authored_mandate_digest", "string", "");
  if (d === "") bad("mandate.authored_mandate_digest", "empty string");
  let raw;
  try { raw = base58Decode(d); } catch (e) { bad("mandate.authored_mandate_digest", `not valid Base58: ${e.message}`); }
  if (raw.length !== 32 || base58Encode(raw) !== d) bad("mandate.authored_mandate_digest", `${goQuote(d)} is not the Base58 of a 32-byte digest`);
  for (const k of TOTALS) {
    const n = read(k, "number", 0);
    if (n < 0 || n > MAX_EXACT) bad("mandate." + k, `${n} is outside 0 to 2^53-1`);
  }
  const at = read("decided_at", "string", "0001-01-01T00:00:00Z");
  const t = parseTime(at);
  if (!t) fail("bundle", `proof bundle: receipt: receipt: mandate.decided_at: ${goQuote(at)} is not an RFC 3339 time`);
  if (t.date.getTime() === ZERO_TIME && !/[.,]\d*[1-9]/.test(at)) bad("mandate.decided_at", "missing");
  if (t.offset !== 0) bad("mandate.decided_at", "not in UTC");
  if (MANDATE_FIELDS.some(k => m[k] === undefined || m[k] === null) || !CANONICAL_UTC.test(at)) spelled();
}

// decodeMandate reads a mandate as intentd.DecodeMandate does: exactly the members id (a
// UUID), policy_id (a Base58 SHA-256 digest), an optional attrs (never null) and
// expires_at (RFC 3339). exact is the same object with its numbers as JSONNumber. It
// answers {md, attrs} or {error}, worded as Go's error.
function decodeMandate(md, exact) {
  const err = msg => ({ error: `invalid_mandate: ${msg}` });
  if (!isObject(md)) return err("mandate: must be a JSON object");
  for (const k of Object.keys(md)) if (!["id", "policy_id", "attrs", "expires_at"].includes(k)) return err(`mandate.${k}: unknown field`);
  const str = k => !(k in md) ? `mandate.${k}: missing` : typeof md[k] !== "string" ? `mandate.${k}: must be a string` : "";
  let e;
  if ((e = str("id"))) return err(e);
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(md.id)) return err(`mandate.id: ${goQuote(md.id)} is not a UUID (want the 36-character hyphenated form)`);
  if ((e = str("policy_id"))) return err(e);
  if (!validPolicyID(md.policy_id)) return err(`mandate.policy_id: ${goQuote(md.policy_id)} is not a Base58 SHA-256 digest`);
  let attrs = new Map();
  if ("attrs" in md) {
    if (md.attrs === null) return err("mandate.attrs: must be omitted, not null");
    const d = decodeAttrs(exact.attrs);
    if (d.error) return err(`mandate.attrs.${d.error}`);
    attrs = d.attrs;
  }
  if ((e = str("expires_at"))) return err(e);
  if (!parseTime(md.expires_at)) return err(`mandate.expires_at: ${goQuote(md.expires_at)} is not an RFC 3339 time`);
  return { md, attrs };
}

function validPolicyID(id) {
  if (id === "" || id.length > 64) return false;
  try {
    const b = base58Decode(id);
    return b.length === 32 && base58Encode(b) === id;
  } catch {
    return false;
  }
}

// authoredAuthorship is the authored mandate's authorship as Go decodes it: left out,
// it is Go's zero value, Unsigned; null is refused.
function authoredAuthorship(a, fail) {
  if (!("authorship" in a)) return "Unsigned";
  const x = a.authorship;
  const want = "want \"Unsigned\" or {\"Signed\": ...}";
  if (x === null) fail("mandate", `authored mandate is not valid: cannot unmarshal JSON null into Go value of type crypto.Authorship: must not be null, ${want}`);
  if (typeof x === "string" && x !== "Unsigned") {
    fail("mandate", `authored mandate is not valid: cannot unmarshal JSON string into Go value of type crypto.Authorship: unknown authorship ${goQuote(x)}, ${want}`);
  }
  return x;
}

// checkAmount holds the receipt's amount to the outcome: a success's is the policy's
// amount part on the evidence, a failure's 0.
function checkAmount(r, policy, attrs, evidence, fail) {
  const m = r.mandate;
  if (r.outcome !== "success") {
    if (m.amount !== 0) fail("mandate", `a failure binds the amount ${m.amount}, want 0: it adds nothing`);
    return;
  }
  const a = amount(policy, attrs, evidence);
  const n = a.ok && !a.error ? a.amount : 0n;
  if (a.error || n !== BigInt(m.amount)) fail("mandate", `the purchase's amount on the evidence is ${n} (${a.error || "<nil>"}), the receipt binds ${m.amount}`);
}

// checkMandate checks a receipt's mandate against the bundle b (exact: the same bundle
// with its numbers as JSONNumber), the decoded policy and the intent's attrs, in the
// order and words of proof.Verify; fail(check, message) throws. It sets report.mandate
// and answers the context the policy decided in ({} for a receipt without a mandate, the
// zero context) and what the check established.
export async function checkMandate(b, exact, r, policy, attrs, report, fail) {
  const m = r.mandate;
  // As Go reads the part: absent is none, and null is a part (which digests to nothing
  // a receipt binds).
  const has = "authored_mandate" in b;
  if (!m) {
    if (has) fail("bundle", `proof bundle: authored_mandate is present, but the receipt (version ${r.version}) names no mandate`);
    return { context: {}, message: "the receipt names no mandate: the intent was decided on its own" };
  }
  if (!has) fail("bundle", "proof bundle: authored_mandate is missing: a version 4 receipt binds its mandate");
  const a = b.authored_mandate;
  const got = await digest(a);
  if (got !== m.authored_mandate_digest) fail("mandate", `the authored mandate digests to ${got}, the receipt binds ${m.authored_mandate_digest}`);
  if (!isObject(a)) fail("mandate", "authored mandate is not valid: want exactly {\"mandate\", \"authorship\"}");
  for (const k of Object.keys(a)) if (k !== "mandate" && k !== "authorship") fail("mandate", `authored mandate is not valid: unknown field ${JSON.stringify(k)}`);
  if (!("mandate" in a)) fail("mandate", "authored mandate is not valid: <nil>");
  const authorship = authoredAuthorship(a, fail);
  const dec = decodeMandate(a.mandate, exact.authored_mandate.mandate);
  if (dec.error) fail("mandate", `authored mandate: ${dec.error}`);
  const md = dec.md;
  let author;
  try { author = await verifyAuthorship(authorship, utf8(jcs(md))); } catch (e) { fail("mandate", `mandate authorship does not verify: ${e.message}`); }
  if (md.id.toLowerCase() !== m.id) fail("mandate", `the authored mandate's id is ${md.id}, the receipt's mandate is ${m.id}`);
  if (md.policy_id !== r.policy_id) fail("mandate", `the mandate names policy ${md.policy_id}, the receipt names ${r.policy_id}`);
  if (attrsJCS(dec.attrs) !== attrsJCS(attrs)) fail("mandate", "the intent's attrs are not the mandate's");
  checkAmount(r, policy, attrs, exact.evidence, fail);

  const decided = parseTime(m.decided_at).date;
  const context = { spent: BigInt(m.spent), purchases: BigInt(m.purchases), periodSpent: BigInt(m.period_spent),
    periodPurchases: BigInt(m.period_purchases), time: decided };
  const mr = { id: m.id, authorship: author.form, expires_at: md.expires_at };
  if (author.key) mr.author_key = author.key;
  for (const k of TOTALS) mr[k] = m[k];
  mr.decided_at = m.decided_at;
  if (author.form === "Unsigned") report.notes.push("the mandate is unsigned: nobody is shown to have authorized its purchases");
  if (report.authorship === "Unsigned") report.notes.push("the intent is a purchase under the mandate: its authority is the mandate's signature, not its own");
  report.mandate = mr;
  const by = author.form === "Unsigned" ? "unsigned" : `signed by ${author.form}${author.key ? " " + author.key : ""}`;
  return { context, message: `a purchase under mandate ${m.id}, ${by}: the intent has its policy and attrs; ` +
    `decided at ${m.decided_at} against ${m.spent} spent in ${m.purchases} purchase(s), ${m.period_spent} in ${m.period_purchases} in the period, ` +
    `for an amount of ${m.amount}` };
}
