// sign.mjs is an agent that intentd did not write: it signs a POST with Ed25519 through
// the npm package http-message-signatures (RFC 9421), sends it, and prints the status of
// the response on the first line and its body after it. Tests use it to check that what
// another implementation signs, httpsig and intentd verify.
//
//   node sign.mjs URL SEED BODY [TAG]
//
// With SEND_BODY set in the environment, the request carries that body instead of the
// one signed, as a request changed on its way would: its Content-Digest no longer holds.
//
// SEED is the Ed25519 private key's 32-byte seed, as 64 hex digits or in Base58 (a
// 64-byte Base58 key, seed then public key, gives its seed). The signature covers
// @method @authority @path content-digest, with created, expires (300 s later), a random
// nonce, alg="ed25519", keyid=<Base58 public key> and, when given, tag. The script
// computes Content-Digest (sha-256, RFC 9530) itself.
//
// It must run from a folder where http-message-signatures is installed, since Node
// resolves an import from the script's own folder.
import { createHash, createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import messageSignatures from 'http-message-signatures';

const { httpbis, createSigner } = messageSignatures;

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

function base58Encode(bytes) {
  let n = BigInt('0x' + (Buffer.from(bytes).toString('hex') || '0'));
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = '1' + out;
  }
  return out;
}

function base58Decode(s) {
  let n = 0n;
  for (const c of s) {
    const d = ALPHABET.indexOf(c);
    if (d < 0) throw new Error(`not Base58: ${JSON.stringify(c)}`);
    n = n * 58n + BigInt(d);
  }
  let hex = n === 0n ? '' : n.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  const zeros = s.length - s.replace(/^1+/, '').length;
  return Buffer.concat([Buffer.alloc(zeros), Buffer.from(hex, 'hex')]);
}

function seedOf(arg) {
  const seed = /^[0-9a-fA-F]{64}$/.test(arg) ? Buffer.from(arg, 'hex') : base58Decode(arg);
  if (seed.length !== 32 && seed.length !== 64) {
    throw new Error(`the key is ${seed.length} bytes; give a 32-byte seed (or a 64-byte key)`);
  }
  return seed.subarray(0, 32);
}

const [url, seedArg, body, tag] = process.argv.slice(2);
if (body === undefined) {
  console.error('usage: node sign.mjs URL SEED BODY [TAG]');
  process.exit(2);
}

// A PKCS #8 Ed25519 private key is this fixed prefix and the seed (RFC 8410).
const privateKey = createPrivateKey({
  key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seedOf(seedArg)]),
  format: 'der',
  type: 'pkcs8',
});
const publicKey = Buffer.from(createPublicKey(privateKey).export({ format: 'jwk' }).x, 'base64url');
const keyid = base58Encode(publicKey);

const digest = 'sha-256=:' + createHash('sha256').update(body).digest('base64') + ':';
const created = new Date();
const paramValues = {
  created,
  expires: new Date(created.getTime() + 300_000),
  nonce: randomBytes(32).toString('base64url'),
};
const params = ['created', 'expires', 'nonce', 'alg', 'keyid'];
if (tag) {
  paramValues.tag = tag;
  params.push('tag');
}

const signed = await httpbis.signMessage({
  key: createSigner(privateKey, 'ed25519', keyid),
  name: 'sig1',
  fields: ['@method', '@authority', '@path', 'content-digest'],
  params,
  paramValues,
}, {
  method: 'POST',
  url,
  headers: { 'content-type': 'application/json', 'content-digest': digest },
});

const sent = process.env.SEND_BODY ?? body;
const res = await fetch(url, { method: 'POST', headers: signed.headers, body: sent });
console.log(res.status);
console.log(await res.text());
