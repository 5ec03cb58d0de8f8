// An authorship's signatures checked in the browser, as crypto.Verify checks them: an
// intent's, and a mandate's, each over the JCS bytes of the object it authorizes.
// Ed25519 and passkey (ECDSA P-256) signatures with WebCrypto; a multisig's signatures,
// its signers listed once, their weights against the threshold. A failure is worded as
// crypto.Verify's error, "authorship invalid: ...".

import { base58Decode, base64urlEncode, ed25519Verify, sha256, utf8 } from "./codec.js";

// derToRaw turns an ASN.1 DER ECDSA signature into the r||s WebCrypto verifies.
function derToRaw(der) {
  if (der.length === 64) return der;
  const fix = (b) => { while (b.length > 32 && b[0] === 0) b = b.slice(1); if (b.length > 32) throw new Error("integer too long"); const o = new Uint8Array(32); o.set(b, 32 - b.length); return o; };
  let i = 0;
  if (der[i++] !== 0x30) throw new Error("not a DER sequence");
  if (der[i] & 0x80) i += 1 + (der[i] & 0x7f); else i++;
  if (der[i++] !== 0x02) throw new Error("no r");
  const rl = der[i++]; const r = der.slice(i, i + rl); i += rl;
  if (der[i++] !== 0x02) throw new Error("no s");
  const sl = der[i++]; const s = der.slice(i, i + sl);
  const out = new Uint8Array(64); out.set(fix(r), 0); out.set(fix(s), 32);
  return out;
}

async function verifyOne(sig, canon) {
  if (sig.Ed25519) {
    const pub = base58Decode(sig.Ed25519.pub_key), s = base58Decode(sig.Ed25519.signature);
    if (pub.length !== 32) throw new Error(`ed25519: pub_key is ${pub.length} bytes, want 32`);
    if (s.length !== 64) throw new Error(`ed25519: signature is ${s.length} bytes, want 64`);
    // A key that is no curve point may be refused on import: for Go it does not verify.
    if (!await ed25519Verify(pub, s, canon).catch(() => false)) throw new Error("ed25519: signature does not verify");
    return { form: "Ed25519", key: sig.Ed25519.pub_key };
  }
  if (sig.Passkey) {
    const p = sig.Passkey;
    const cd = JSON.parse(p.client_data);
    const want = base64urlEncode(await sha256(canon));
    if (cd.type !== "webauthn.get") throw new Error(`passkey: client_data type is ${JSON.stringify(cd.type)}, want "webauthn.get"`);
    if (cd.challenge !== want) throw new Error("passkey: challenge does not match the intent");
    const auth = base58Decode(p.authenticator_data);
    const msg = new Uint8Array([...auth, ...await sha256(utf8(p.client_data))]);
    const key = await crypto.subtle.importKey("raw", base58Decode(p.pub_key), { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
    if (!await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, derToRaw(base58Decode(p.signature)), msg)) {
      throw new Error("passkey: signature does not verify");
    }
    return { form: "Passkey", key: p.pub_key };
  }
  throw new Error("signature has none of Ed25519, Passkey");
}

async function verifySigned(sig, canon) {
  if (!sig.Multisig) return verifyOne(sig, canon);
  const m = sig.Multisig;
  if (!(m.pub_key.threshold >= 1)) throw new Error("multisig: threshold must be at least 1");
  const weights = new Map(Object.entries(m.pub_key.signers));
  let total = 0;
  const seen = new Set();
  for (const [i, s] of m.signatures.entries()) {
    if (s.Multisig) throw new Error(`multisig: signatures[${i}]: nested multisig refused`);
    const { key } = await verifyOne(s, canon);
    if (!weights.has(key)) throw new Error(`multisig: signatures[${i}]: ${key} is not a signer`);
    if (seen.has(key)) throw new Error(`multisig: signer ${key} signed twice`);
    seen.add(key);
    total += weights.get(key);
  }
  if (total < m.pub_key.threshold) throw new Error(`multisig: the signers' weights add up to ${total}, below the threshold ${m.pub_key.threshold}`);
  return { form: "Multisig", key: "" };
}

// verifyAuthorship checks an authorship ("Unsigned", or {"Signed": ...}) over canon, the
// JCS bytes of what it authorizes, and answers its form and its key ("" for Unsigned and
// Multisig); it throws with crypto.Verify's words when a signature fails.
export async function verifyAuthorship(authorship, canon) {
  if (authorship === "Unsigned") return { form: "Unsigned", key: "" };
  const sig = authorship && authorship.Signed;
  if (!sig) throw new Error("authorship is neither \"Unsigned\" nor {\"Signed\": ...}");
  try {
    return await verifySigned(sig, canon);
  } catch (e) {
    throw new Error(`authorship invalid: ${e.message}`);
  }
}
