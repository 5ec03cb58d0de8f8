// Checking a proof bundle in the browser, check by check in the order and under the
// names of `intentctl verify` (docs/proofs.md, "Checking a bundle offline"), so that a
// failure here names the check the command line would name. Loading the bytecode and
// re-running the policy use policyvm.js, which follows the Go decoder and machine so
// that the failures and reasons compare byte for byte with the receipt's; authorships
// are checked in authorship.js, the agent of a version 3 or 4 receipt in agent.js, and
// the mandate of a version 4 receipt, the context the policy is run in, in mandate.js.

import { classify, decode, decodeAttrs, evaluate, goQuote, JSONNumber } from "./policyvm.js";
import { base58Decode, base58Encode, base64Decode, digest, ed25519Verify, jcs, parseStrict, sha256, utf8 } from "./codec.js";
import { checkAgent } from "./agent.js";
import { verifyAuthorship } from "./authorship.js";
import { checkMandate, checkReceiptMandateShape, RECEIPT_V4_FIELDS } from "./mandate.js";

export const CHECKS = [
  ["bundle", "Shape: the five parts, the receipt decoded strictly"],
  ["key", "Key: the receipt names the key checked against"],
  ["signature", "Signature: Ed25519 over the receipt's JCS bytes"],
  ["authored_intent_digest", "Digest of the authored intent"],
  ["proposal_digest", "Digest of the proposal"],
  ["evidence_digest", "Digest of the evidence"],
  ["policy", "Policy: the bytecode hashes to the policy id and loads"],
  ["intent", "Intent: its id and policy are the receipt's"],
  ["authorship", "Authorship: the intent's signature"],
  ["mandate", "Mandate: a purchase's mandate, signed, with the intent's policy and attrs, and its amount"],
  ["evaluation", "Re-evaluation: the policy run again on the evidence"],
  ["agent", "Agent: who signed the proposal, what it signed, and whether the intent delegates to it"],
];

class CheckError extends Error {
  constructor(check, message) { super(message); this.check = check; }
}
const fail = (check, message) => { throw new CheckError(check, message); };

const RECEIPT_FIELDS = ["version", "intent_id", "policy_id", "authored_intent_digest", "proposal_digest", "evidence_digest",
  "outcome", "constraint_failures", "issued_at", "key_id"];
const RECEIPT_V2_FIELDS = ["failure_kind", "evidence_missing"];
const RECEIPT_V3_FIELDS = ["agent"];

function exactKeys(obj, want, optional, what) {
  if (!obj || typeof obj !== "object" || Array.isArray(obj)) fail("bundle", `proof bundle: ${what} is not an object`);
  for (const k of Object.keys(obj)) {
    if (!want.includes(k) && !optional.includes(k)) fail("bundle", `proof bundle: ${what}: unknown field ${JSON.stringify(k)}`);
  }
  for (const k of want) if (!(k in obj)) fail("bundle", `proof bundle: ${what}: ${k} is missing`);
}

function checkReceiptShape(r) {
  exactKeys(r, RECEIPT_FIELDS, [...RECEIPT_V2_FIELDS, ...RECEIPT_V3_FIELDS, ...RECEIPT_V4_FIELDS], "receipt");
  if (![1, 2, 3, 4].includes(r.version)) fail("bundle", `proof bundle: receipt: receipt.version: is ${JSON.stringify(r.version)}, want 4, 3, 2 or 1`);
  checkReceiptAgentShape(r);
  checkReceiptMandateShape(r, fail);
  for (const k of ["intent_id", "policy_id", "authored_intent_digest", "proposal_digest", "evidence_digest", "issued_at", "key_id"]) {
    if (typeof r[k] !== "string" || r[k] === "") fail("bundle", `proof bundle: receipt: ${k} is not a non-empty string`);
  }
  if (!Array.isArray(r.constraint_failures)) fail("bundle", "proof bundle: receipt: constraint_failures is not an array");
  if (r.outcome === "success" && r.constraint_failures.length) fail("bundle", "proof bundle: receipt: outcome success with constraint failures");
  if (r.outcome === "failure" && !r.constraint_failures.length) fail("bundle", "proof bundle: receipt: outcome failure without constraint failures");
  if (r.outcome !== "success" && r.outcome !== "failure") fail("bundle", `proof bundle: receipt: outcome ${JSON.stringify(r.outcome)}, want success or failure`);
  if (r.version === 1 && ("failure_kind" in r || "evidence_missing" in r)) fail("bundle", "proof bundle: receipt: a version 1 receipt has no failure_kind or evidence_missing");
  if (r.version >= 2) {
    if (r.outcome === "success" && "failure_kind" in r) fail("bundle", "proof bundle: receipt: failure_kind on a success");
    if (r.outcome === "failure" && r.failure_kind !== "constraints" && r.failure_kind !== "evidence") {
      fail("bundle", `proof bundle: receipt: failure_kind ${JSON.stringify(r.failure_kind)}, want constraints or evidence`);
    }
  }
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?Z$/.test(r.issued_at)) fail("bundle", `proof bundle: receipt: issued_at ${JSON.stringify(r.issued_at)} is not RFC 3339 in UTC`);
}

// checkReceiptAgentShape holds the agent member to the version, as the service's
// receipt decoder does: present in version 3, optional in version 4 (a purchase no agent
// signed), absent in the others; a 32-byte key, the Base58 of a 32-byte digest, a 64-byte
// signature, and a string tag when there is one.
function checkReceiptAgentShape(r) {
  if (r.version === 4 && !("agent" in r)) return;
  if (r.version !== 3 && r.version !== 4) {
    if ("agent" in r) fail("bundle", `proof bundle: receipt: receipt.agent: present, but a version ${r.version} receipt has none`);
    return;
  }
  if (!("agent" in r)) fail("bundle", "proof bundle: receipt: receipt.agent: missing, want the agent of a version 3 receipt");
  const a = r.agent;
  exactKeys(a, ["key", "signature_base_digest", "signature"], ["tag"], "receipt: agent");
  for (const [k, n] of [["key", 32], ["signature_base_digest", 32], ["signature", 64]]) {
    const b = typeof a[k] === "string" ? decodeKey(a[k], `receipt: agent.${k}`) : fail("bundle", `proof bundle: receipt: agent.${k} is not a string`);
    if (b.length !== n || base58Encode(b) !== a[k]) fail("bundle", `proof bundle: receipt: agent.${k}: want the Base58 of ${n} bytes`);
  }
  if ("tag" in a && typeof a.tag !== "string") fail("bundle", "proof bundle: receipt: agent.tag is not a string");
}

// agentPart reads the bundle's agent part as the service's bundle decoder does: absent
// or null is none; a missing member is empty, as Go leaves it.
function agentPart(x) {
  if (x === undefined || x === null) return null;
  exactKeys(x, [], ["signature_base", "body"], "agent");
  const base = x.signature_base ?? "";
  if (typeof base !== "string") fail("bundle", "proof bundle: agent.signature_base is not a string");
  let body = new Uint8Array();
  if (x.body !== undefined && x.body !== null) {
    try { body = base64Decode(x.body); } catch (e) { fail("bundle", `proof bundle: agent.body: ${e.message}`); }
  }
  return { base, body };
}

function decodeKey(s, what) {
  let k;
  try { k = base58Decode(s); } catch (e) { fail("bundle", `proof bundle: ${what}: ${e.message}`); }
  return k;
}

// sameFailures compares the re-evaluation's failures with the receipt's, field by field,
// in the words of `intentctl verify`.
function sameFailures(got, want) {
  if (got.length !== want.length) fail("evaluation", `re-evaluation gives ${got.length} constraint failures, the receipt lists ${want.length}`);
  got.forEach((g, i) => {
    const w = want[i] && typeof want[i] === "object" ? want[i] : {};
    if (g.index !== w.index) fail("evaluation", `constraint failure ${i}: re-evaluation gives index ${g.index}, the receipt says ${w.index}`);
    if (g.pretty_expr !== w.pretty_expr) fail("evaluation", `constraint failure ${i}: re-evaluation gives pretty_expr ${goQuote(g.pretty_expr)}, the receipt says ${goQuote(String(w.pretty_expr))}`);
    if (g.reason !== w.reason) fail("evaluation", `constraint failure ${i}: re-evaluation gives reason ${goQuote(g.reason)}, the receipt says ${goQuote(String(w.reason))}`);
  });
}

// quoteList is Go's %q of a list of strings: ["a" "b"].
const quoteList = xs => "[" + xs.map(goQuote).join(" ") + "]";

// readBundle reads a bundle's text as the service's bundle decoder does: the parts, each
// required but the log, the agent part and the authored mandate, and the receipt. It
// answers the parts: b, the bundle; exact, the same with each number as its JSON text,
// for what the policy reads (the evidence, the attrs); r, the receipt; the bytecode, the
// receipt's signature and key, and the agent part.
function readBundle(text) {
  if (!crypto.subtle) fail("bundle", "this page is not a secure context (https or localhost), so the browser offers no WebCrypto to check with");
  let b;
  try { b = parseStrict(text); } catch (e) { fail("bundle", `proof bundle is not valid JSON: ${e.message}`); }
  const exact = parseStrict(text, t => new JSONNumber(t));
  // "log", the transparency log inclusion, is checked by intentctl verify, not here; its
  // checkpoint's cosignatures, and "log_witnesses", the server's word on them, are shown
  // beside the checks (witness.js).
  exactKeys(b, ["receipt", "authored_intent", "proposal", "evidence", "policy_bytecode"], ["log", "log_witnesses", "agent", "authored_mandate"], "the bundle");
  exactKeys(b.receipt, ["receipt", "signature", "public_key"], [], "receipt");
  const r = b.receipt.receipt;
  checkReceiptShape(r);
  if (!b.evidence || typeof b.evidence !== "object" || Array.isArray(b.evidence)) fail("bundle", "proof bundle: evidence is not a JSON object");
  if (!b.proposal || typeof b.proposal.solution !== "string" || !b.proposal.solution || Object.keys(b.proposal).length !== 1) {
    fail("bundle", "proof bundle: proposal is not {\"solution\": non-empty string}");
  }
  let bytecode;
  try { bytecode = base64Decode(b.policy_bytecode); } catch (e) { fail("bundle", `proof bundle: policy_bytecode: ${e.message}`); }
  if (!bytecode.length) fail("bundle", "proof bundle: policy_bytecode is missing");
  const sig = decodeKey(b.receipt.signature, "receipt signature");
  const bundleKey = decodeKey(b.receipt.public_key, "receipt public_key");
  return { b, exact, r, bytecode, sig, bundleKey, part: agentPart(b.agent) };
}

// checkKey checks the receipt's key id and signature against trustedKey (Base58), or
// the bundle's own key when there is none.
async function checkKey({ r, sig, bundleKey }, trustedKey, source, run) {
  const report = run.report;
  let key = bundleKey;
  report.keyTrusted = !!trustedKey;
  if (trustedKey) {
    try { key = base58Decode(trustedKey.trim()); } catch (e) { fail("key", `trusted key: ${e.message}`); }
  } else {
    report.notes.push("no trusted key was given: the receipt was checked against the key in the bundle, which shows the bundle is consistent, not who made it; compare the key id with the service's (GET /info)");
  }
  if (key.length !== 32) fail("key", `trusted key is ${key.length} bytes, want a 32-byte Ed25519 public key`);
  const keyID = base58Encode(await sha256(key));
  if (r.key_id !== keyID) {
    fail("key", trustedKey ? `receipt is signed by key ${r.key_id}, not by the trusted key ${keyID}`
      : `receipt names key ${r.key_id}, but the bundle's public key is ${keyID}`);
  }
  run.pass("key", `key id ${keyID}` + (!trustedKey ? " (the bundle's own key: not trusted)"
    : source === "server" ? " (this server's own key, from GET /info)" : " (the key given)"));
  report.keyID = keyID;
  report.publicKey = base58Encode(key);

  run.at("signature");
  if (sig.length !== 64) fail("signature", `receipt signature is ${sig.length} bytes, want 64`);
  if (!await ed25519Verify(key, sig, utf8(jcs(r)))) fail("signature", `receipt signature does not verify under key ${keyID}`);
  run.pass("signature", "Ed25519 signature verified (WebCrypto)");
}

// checkParts checks the authored intent, the proposal and the evidence against the
// digests the receipt signs, then that the bytecode hashes to the policy id and loads,
// and answers the policy.
async function checkParts({ b, r, bytecode }, run) {
  for (const [check, what, value, want] of [
    ["authored_intent_digest", "authored intent", b.authored_intent, r.authored_intent_digest],
    ["proposal_digest", "proposal", b.proposal, r.proposal_digest],
    ["evidence_digest", "evidence", b.evidence, r.evidence_digest],
  ]) {
    run.at(check);
    const got = await digest(value);
    if (got !== want) fail(check, `${what} digest does not match: the bundle's ${what} digests to ${got}, the receipt says ${want}`);
    run.pass(check, got);
  }

  run.at("policy");
  const pid = base58Encode(await sha256(bytecode));
  if (pid !== r.policy_id) fail("policy", `policy bytecode hashes to ${pid}, the receipt names policy ${r.policy_id}`);
  const loaded = decode(bytecode);
  if (loaded.error) fail("policy", `policy bytecode does not load: ${loaded.error}`);
  const policy = loaded.policy;
  run.pass("policy", `bytecode hashes to ${pid} and loads: policy ${policy.name}, ${policy.cons.length} constraint(s)`);
  return policy;
}

// checkIntent checks the authored intent's id and policy against the receipt, reads its
// attrs, and checks its authorship; it answers the attrs.
async function checkIntent({ b, exact, r }, run) {
  const report = run.report;
  const a = b.authored_intent;
  if (!a || typeof a !== "object" || !a.intent || !("authorship" in a) || Object.keys(a).length !== 2) {
    fail("intent", "authored intent is not valid: want exactly {\"intent\", \"authorship\"}");
  }
  const in_ = a.intent;
  if (typeof in_.id !== "string" || in_.id.toLowerCase() !== r.intent_id) fail("intent", `the authored intent's id is ${in_.id}, the receipt's intent_id is ${r.intent_id}`);
  if (in_.policy_id !== r.policy_id) fail("intent", `the authored intent names policy ${in_.policy_id}, the receipt names ${r.policy_id}`);
  for (const k of Object.keys(in_)) if (k !== "id" && k !== "policy_id" && k !== "attrs") fail("intent", `authored intent: intent.${k}: unknown field`);
  let attrs = new Map();
  if ("attrs" in in_) {
    const rawAttrs = exact.authored_intent.intent.attrs;
    if (rawAttrs === null) fail("intent", "authored intent: intent.attrs: must be omitted, not null");
    const d = decodeAttrs(rawAttrs);
    if (d.error) fail("intent", `authored intent: intent.attrs.${d.error}`);
    attrs = d.attrs;
  }
  run.pass("intent", `intent ${r.intent_id}, policy ${r.policy_id}`);

  run.at("authorship");
  let author;
  try { author = await verifyAuthorship(a.authorship, utf8(jcs(in_))); } catch (e) { fail("authorship", `intent authorship does not verify: ${e.message}`); }
  report.authorship = author.form + (author.key ? " " + author.key : "");
  if (author.form === "Unsigned") report.notes.push("the intent is unsigned: nobody is shown to have authorized it");
  if (author.form === "Passkey" || author.form === "Multisig") report.notes.push("passkey signatures were checked over the intent; their origin and relying party were checked by the service at submission, not here");
  run.pass("authorship", report.authorship);
  return attrs;
}

// checkEvaluation checks a purchase's mandate, then runs the policy again on the
// evidence with the intent's attrs, in the context the mandate binds, as proof.Verify's
// checkEvaluation does, and compares the outcome, the failures and (from version 2) the
// failure kind and the missing evidence with the receipt's.
async function checkEvaluation(parts, policy, attrs, run) {
  const { b, exact, r } = parts, report = run.report;
  run.at("mandate");
  const { context, message } = await checkMandate(b, exact, r, policy, attrs, report, fail);
  run.pass("mandate", message);

  run.at("evaluation");
  const failures = evaluate(policy, attrs, exact.evidence, context);
  const outcome = failures.length ? "failure" : "success";
  if (outcome !== r.outcome) fail("evaluation", `re-evaluation gives ${outcome}, the receipt says ${r.outcome}`);
  sameFailures(failures, r.constraint_failures);
  const { kind, missing } = classify(failures);
  if (r.version === 1) {
    if (outcome === "failure") report.notes.push(`a version 1 receipt does not state the failure's kind: ${kind} is the re-evaluation's, not signed`);
  } else {
    if (kind !== (r.failure_kind || "")) fail("evaluation", `re-evaluation gives failure kind ${goQuote(kind)}, the receipt says ${goQuote(r.failure_kind || "")}`);
    const said = Array.isArray(r.evidence_missing) ? r.evidence_missing : [];
    if (missing.length !== said.length || missing.some((m, i) => m !== said[i])) {
      fail("evaluation", `re-evaluation finds evidence missing ${quoteList(missing)}, the receipt says ${quoteList(said)}`);
    }
  }
  run.pass("evaluation", outcome === "success" ? "the policy holds on the evidence, as the receipt says"
    : `the policy fails on the evidence as the receipt says: ${failures.length} constraint failure(s), each with its reason`);
  Object.assign(report, { outcome, failures: failures.map(({ index, pretty_expr, reason }) => ({ index, pretty_expr, reason })),
    failureKind: kind, evidenceMissing: missing });
}

// verifyBundle checks a bundle's text against trustedKey (Base58, or "" to use the
// bundle's own key); source says where trustedKey came from, "given" (by the person) or
// "server" (the GET /info of the server whose proof it is), for the key check's words.
// It answers {results, report, error}: results has one entry per check ({check, status:
// "pass"|"fail"|"skipped", message}).
export async function verifyBundle(text, trustedKey, source = "given") {
  const results = [];
  const report = { notes: [] };
  // current is the check under way, which an unforeseen error is put down to.
  let current = "bundle";
  const run = { report, at: check => { current = check; }, pass: (check, message) => results.push({ check, status: "pass", message }) };
  try {
    const parts = readBundle(text);
    const r = parts.r;
    run.pass("bundle", "the five parts are there and the receipt decodes");
    run.at("key");
    await checkKey(parts, trustedKey, source, run);
    const policy = await checkParts(parts, run);
    run.at("intent");
    const attrs = await checkIntent(parts, run);
    await checkEvaluation(parts, policy, attrs, run);
    // After the evaluation, as proof.Verify orders it: a bundle wrong in both is named
    // by the same check here and there.
    run.at("agent");
    run.pass("agent", await checkAgent(parts.part, r, policy, attrs, parts.b.proposal.solution, report, fail));
    report.notes.push("the evidence is the extractor's account of the solution: the receipt shows the policy holds (or fails) on it, not that it is true");
    Object.assign(report, { intentID: r.intent_id, policyID: r.policy_id, issuedAt: r.issued_at, version: r.version });
    return { results, report, error: null };
  } catch (e) {
    const check = e instanceof CheckError ? e.check : current;
    // A check may fail after it passed: the bundle's authored mandate and agent part are
    // held to the receipt only once the intent is read, as proof.Verify does. The check
    // is listed once.
    const seen = results.findIndex(x => x.check === check);
    const failed = { check, status: "fail", message: e.message };
    if (seen >= 0) results[seen] = failed; else results.push(failed);
    const done = new Set(results.map(x => x.check));
    for (const [name] of CHECKS) if (!done.has(name)) results.push({ check: name, status: "skipped", message: "not reached" });
    return { results, report, error: { check, message: e.message } };
  }
}
