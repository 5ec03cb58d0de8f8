// Encodings the proof checks need, written out because the browser has none of them:
// Base58 (Bitcoin alphabet), strict JSON reading and JCS (RFC 8785). SHA-256 and the
// signatures come from WebCrypto.

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const INDEX = new Map([...ALPHABET].map((c, i) => [c, i]));

export function base58Encode(bytes) {
  const digits = [0];
  for (const b of bytes) {
    let carry = b;
    for (let i = 0; i < digits.length; i++) {
      carry += digits[i] << 8;
      digits[i] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) { digits.push(carry % 58); carry = (carry / 58) | 0; }
  }
  let out = "";
  for (const b of bytes) { if (b !== 0) break; out += "1"; }
  if (bytes.length === 0 || digits.length === 1 && digits[0] === 0) return out;
  for (let i = digits.length - 1; i >= 0; i--) out += ALPHABET[digits[i]];
  return out;
}

export function base58Decode(s) {
  if (typeof s !== "string" || s === "") throw new Error("not Base58: empty");
  const bytes = [0];
  for (const c of s) {
    const v = INDEX.get(c);
    if (v === undefined) throw new Error(`not Base58: ${JSON.stringify(c)} is not in its alphabet`);
    let carry = v;
    for (let i = 0; i < bytes.length; i++) {
      carry += bytes[i] * 58;
      bytes[i] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) { bytes.push(carry & 0xff); carry >>= 8; }
  }
  let zeros = 0;
  while (zeros < s.length && s[zeros] === "1") zeros++;
  const body = bytes.length === 1 && bytes[0] === 0 ? [] : bytes.reverse();
  return Uint8Array.from([...new Array(zeros).fill(0), ...body]);
}

export function base64Decode(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) {
    throw new Error("not standard Base64 with padding");
  }
  return Uint8Array.from(atob(s), c => c.charCodeAt(0));
}

export function base64urlEncode(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function utf8(s) { return new TextEncoder().encode(s); }

export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

// ed25519Verify checks an Ed25519 signature with WebCrypto: the service's over a
// receipt, an author's over an intent, an agent's over its signature base.
export async function ed25519Verify(pub, sig, msg) {
  const key = await crypto.subtle.importKey("raw", pub, { name: "Ed25519" }, false, ["verify"]);
  return crypto.subtle.verify({ name: "Ed25519" }, key, sig, msg);
}

// digest is what a receipt binds a value with: Base58 of SHA-256 of its JCS bytes.
export async function digest(value) {
  return base58Encode(await sha256(utf8(jcs(value))));
}

// jcs writes a value in its RFC 8785 form. That form is defined by ECMAScript's own
// number and string serialization, so JSON.stringify of a scalar is already it; only
// the members' order (by UTF-16 code units, JavaScript's default sort) is added.
export function jcs(v) {
  if (v === null || typeof v !== "object") {
    if (typeof v === "number" && !Number.isFinite(v)) throw new Error("a number JCS cannot write");
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  const keys = Object.keys(v).sort();
  return "{" + keys.map(k => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
}

// parseStrict reads JSON as the server's verifier does: a name repeated in one object
// is refused (JSON.parse would keep the last one silently), and so is an integer beyond
// ±(2^53-1), which has no exact digest. number, when given, makes each number's value
// from its text (and so refuses none: the text is exact): the policy check reads
// evidence as Go does, where 2.0 is not the int 2.
// Sticky, so that each match starts where the reader is without copying the rest.
const NUMBER = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;

export function parseStrict(text, number) {
  let i = 0;
  const fail = what => { throw new Error(`${what} at offset ${i}`); };
  const ws = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
  const value = () => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj = {};
      const seen = new Set();
      ws();
      if (text[i] === "}") { i++; return obj; }
      for (;;) {
        ws();
        if (text[i] !== "\"") fail("expected a member name");
        const k = string();
        if (seen.has(k)) fail(`the name ${JSON.stringify(k)} is repeated`);
        seen.add(k);
        ws();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        obj[k] = value();
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") { i++; return obj; }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const arr = [];
      ws();
      if (text[i] === "]") { i++; return arr; }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "]") { i++; return arr; }
        fail("expected ',' or ']'");
      }
    }
    if (c === "\"") return string();
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m) {
      i += m[0].length;
      const n = Number(m[0]);
      if (number) return number(m[0]);
      if (!m[2] && !m[3] && !Number.isSafeInteger(n)) fail(`the integer ${m[0]} is beyond ±(2^53-1)`);
      return n;
    }
    for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(word, i)) { i += word.length; return v; }
    }
    fail("unexpected input");
  };
  const string = () => {
    STRING.lastIndex = i;
    const m = STRING.exec(text);
    if (!m) fail("bad string");
    i += m[0].length;
    return JSON.parse(m[0]);
  };
  const v = value();
  ws();
  if (i !== text.length) fail("trailing data");
  return v;
}

export function bytesEqual(a, b) {
  return a.length === b.length && a.every((x, k) => x === b[k]);
}
