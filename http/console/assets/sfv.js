// Reading RFC 8941 structured fields as the Go library the service reads them with
// (github.com/dunglas/httpsfv) does, step for step: an agent's recorded signature base
// names its parameters as an inner list and its body's digest as a dictionary, and a
// base the page reads otherwise than `intentctl verify` would pass here and fail there,
// or fail in other words. Errors carry the library's text and offset ("invalid inner
// list format: character 12"). The scanner reads UTF-16 units where Go reads bytes; a
// structured field is ASCII, and the first unit past ASCII ends either reading at the
// same offset, so the offsets agree.

const E = {
  eos: "unexpected end of string",
  char: "unrecognized character",
  list: "invalid list format",
  inner: "invalid inner list format",
  dict: "invalid dictionary format",
  key: "invalid key format",
  digit: "character is not a digit",
  range: "integer or decimal out of range",
  decimal: "invalid decimal format",
  string: "invalid string format",
  token: "invalid token format",
  binary: "invalid binary format",
  bool: "invalid boolean format",
  date: "invalid date format",
  display: "invalid display string type",
};

// UnmarshalError's text: the cause and the offset.
const at = (off, what) => new Error(`${what}: character ${off}`);

const isDigit = c => c >= 0x30 && c <= 0x39;
const isLower = c => c >= 0x61 && c <= 0x7a;
const isAlpha = c => isLower(c) || c >= 0x41 && c <= 0x5a;
const isKeyChar = c => isLower(c) || isDigit(c) || "_-.*".includes(String.fromCharCode(c));
const isTchar = c => isAlpha(c) || isDigit(c) || "!#$%&'*+-.^_`|~:/".includes(String.fromCharCode(c));
// Display strings refuse controls and everything from DEL up, as a byte past ASCII is.
const notVcharOrSp = c => c <= 0x1f || c >= 0x7f;

class Scanner {
  constructor(data) { this.data = data; this.off = 0; }
  eof() { return this.off === this.data.length; }
  code() { return this.data.charCodeAt(this.off); }
  skipSp() { while (!this.eof() && this.code() === 0x20) this.off++; }
  skipOWS() { while (!this.eof() && (this.code() === 0x20 || this.code() === 0x09)) this.off++; }
}

// A token and the rarer bare items are wrapped, so that a string is a string and
// nothing else is.
class Token { constructor(t) { this.token = t; } }

function parseKey(s) {
  if (s.eof() || !isLower(s.code()) && s.code() !== 0x2a) throw at(s.off, E.key);
  const start = s.off++;
  while (!s.eof() && isKeyChar(s.code())) s.off++;
  return s.data.slice(start, s.off);
}

function parseParams(s) {
  const p = new Map();
  while (!s.eof() && s.code() === 0x3b) {
    s.off++;
    s.skipSp();
    const k = parseKey(s);
    let v = true;
    if (!s.eof() && s.code() === 0x3d) { s.off++; v = parseBareItem(s); }
    p.set(k, v);
  }
  return p;
}

function parseBareItem(s) {
  if (s.eof()) throw at(s.off, E.eos);
  const c = s.code();
  switch (String.fromCharCode(c)) {
    case "\"": return parseString(s);
    case "?": return parseBoolean(s);
    case "*": return parseToken(s);
    case ":": return parseBinary(s);
    case "@": return parseDate(s);
    case "%": return parseDisplayString(s);
  }
  if (c === 0x2d || isDigit(c)) return parseNumber(s);
  if (isAlpha(c)) return parseToken(s);
  throw at(s.off, E.char);
}

function parseNumber(s) {
  if (s.eof()) throw at(s.off, E.eos);
  const neg = s.code() === 0x2d;
  if (neg) s.off++;
  if (neg && s.eof()) throw at(s.off, E.eos);
  if (!isDigit(s.code())) throw at(s.off, E.digit);
  const start = s.off++;
  let decimal = false, sep = 0;
  while (s.off < s.data.length) {
    const c = s.code();
    if (isDigit(c)) {
      s.off++;
      const size = s.off - start;
      if (!decimal && size > 15 || size > 16) throw at(s.off, E.range);
      continue;
    }
    if (!decimal && c === 0x2e) {
      if (s.off - start > 12) throw at(s.off, E.range);
      decimal = true;
      sep = s.off++;
      continue;
    }
    break;
  }
  const n = Number(s.data.slice(start, s.off)) * (neg ? -1 : 1);
  if (!decimal) return n; // at most 15 digits: within the library's range, and exact
  if (sep === s.off - 1) throw at(s.off, E.decimal);
  if (s.off - sep - 1 > 3) throw at(s.off, E.range);
  return { decimal: n };
}

function parseString(s) {
  if (s.eof() || s.code() !== 0x22) throw at(s.off, E.string);
  s.off++;
  let out = "";
  while (!s.eof()) {
    const c = s.code();
    s.off++;
    if (c === 0x5c) {
      if (s.eof()) throw at(s.off, E.string);
      const n = s.code();
      if (n !== 0x22 && n !== 0x5c) throw at(s.off, E.string);
      s.off++;
      out += String.fromCharCode(n);
      continue;
    }
    if (c === 0x22) return out;
    if (c <= 0x1f || c >= 0x7f) throw at(s.off, E.string);
    out += String.fromCharCode(c);
  }
  throw at(s.off, E.string);
}

function parseToken(s) {
  if (s.eof() || !isAlpha(s.code()) && s.code() !== 0x2a) throw at(s.off, E.token);
  const start = s.off++;
  while (!s.eof() && isTchar(s.code())) s.off++;
  return new Token(s.data.slice(start, s.off));
}

function parseBinary(s) {
  if (s.eof() || s.code() !== 0x3a) throw at(s.off, E.binary);
  const start = ++s.off;
  while (!s.eof()) {
    const c = s.code();
    if (c === 0x3a) {
      let bytes;
      try { bytes = goBase64(s.data.slice(start, s.off)); } catch (e) { throw at(s.off, e.message); }
      s.off++;
      return bytes;
    }
    if (!isAlpha(c) && !isDigit(c) && c !== 0x2b && c !== 0x2f && c !== 0x3d) throw at(s.off, E.binary);
    s.off++;
  }
  throw at(s.off, E.binary);
}

function parseBoolean(s) {
  if (s.eof() || s.code() !== 0x3f) throw at(s.off, E.bool);
  s.off++;
  if (s.eof()) throw at(s.off, E.bool);
  const c = s.code();
  if (c === 0x30 || c === 0x31) { s.off++; return c === 0x31; }
  throw at(s.off, E.bool);
}

function parseDate(s) {
  if (s.eof() || s.code() !== 0x40) throw at(s.off, E.date);
  s.off++;
  let n;
  try { n = parseNumber(s); } catch { throw at(s.off, E.date); }
  if (typeof n !== "number") throw at(s.off, E.date);
  return { date: n };
}

function parseDisplayString(s) {
  if (s.eof() || s.data.length - s.off < 2 || s.data.slice(s.off, s.off + 2) !== "%\"") throw at(s.off, E.display);
  s.off += 2;
  const bytes = [];
  const unhex = c => isDigit(c) ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x61 + 10 : -1;
  while (!s.eof()) {
    const c = s.code();
    s.off++;
    if (c === 0x25) {
      if (s.data.length - s.off < 2) throw at(s.off, E.display);
      const hi = unhex(s.code());
      if (hi < 0) throw at(s.off, E.display);
      const lo = unhex(s.data.charCodeAt(s.off + 1));
      if (lo < 0) throw at(s.off, E.display);
      bytes.push(hi << 4 | lo);
      s.off += 2;
    } else if (c === 0x22) {
      // The library returns this one bare, without an offset.
      try { return { display: new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes)) }; } catch { throw new Error(E.display); }
    } else if (notVcharOrSp(c)) {
      throw at(s.off, E.display);
    } else {
      bytes.push(c);
    }
  }
  throw at(s.off, E.display);
}

function parseItem(s) {
  const value = parseBareItem(s);
  return { value, params: parseParams(s) };
}

function parseInnerList(s) {
  if (s.eof() || s.code() !== 0x28) throw at(s.off, E.inner);
  s.off++;
  const items = [];
  while (!s.eof()) {
    s.skipSp();
    if (s.eof()) throw at(s.off, E.inner);
    if (s.code() === 0x29) {
      s.off++;
      return { items, params: parseParams(s) };
    }
    items.push(parseItem(s));
    if (s.eof() || s.code() !== 0x29 && s.code() !== 0x20) throw at(s.off, E.inner);
  }
  throw at(s.off, E.inner);
}

function parseItemOrInnerList(s) {
  if (s.eof()) throw at(s.off, E.inner);
  return s.code() === 0x28 ? parseInnerList(s) : parseItem(s);
}

// parseList reads an RFC 8941 list: its members, each an item ({value, params}) or an
// inner list ({items, params}).
export function parseList(text) {
  const s = new Scanner(text);
  s.skipSp();
  const list = [];
  while (!s.eof()) {
    list.push(parseItemOrInnerList(s));
    s.skipOWS();
    if (s.eof()) return list;
    if (s.code() !== 0x2c) throw at(s.off, E.list);
    s.off++;
    s.skipOWS();
    if (s.eof()) throw at(s.off, E.list);
  }
  return list;
}

// parseDictionary reads an RFC 8941 dictionary into a Map; a key given twice keeps its
// last value, as the library keeps it.
export function parseDictionary(text) {
  const s = new Scanner(text);
  s.skipSp();
  const dict = new Map();
  while (!s.eof()) {
    const k = parseKey(s);
    let m;
    if (!s.eof() && s.code() === 0x3d) {
      s.off++;
      m = parseItemOrInnerList(s);
    } else {
      m = { value: true, params: parseParams(s) };
    }
    dict.set(k, m);
    s.skipOWS();
    if (s.eof()) return dict;
    if (s.code() !== 0x2c) throw at(s.off, E.dict);
    s.off++;
    s.skipOWS();
    if (s.eof()) throw at(s.off, E.dict);
  }
  return dict;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// goBase64 decodes as Go's base64.StdEncoding.DecodeString does the characters a byte
// sequence may hold (the alphabet and "="): padding required, bits after the last byte
// ignored, and an error naming the byte Go names.
function goBase64(src) {
  const corrupt = i => new Error("illegal base64 data at input byte " + i);
  const out = [];
  let si = 0;
  while (si < src.length) {
    const q = [];
    let done = false;
    for (let j = 0; j < 4; j++) {
      if (si === src.length) throw corrupt(si - j);
      const ch = src[si++];
      if (ch !== "=") { q.push(B64.indexOf(ch)); continue; }
      if (j < 2) throw corrupt(si - 1);
      if (j === 2) {
        if (si === src.length) throw corrupt(src.length);
        if (src[si] !== "=") throw corrupt(si - 1);
        si++;
      }
      if (si < src.length) throw corrupt(si);
      done = true;
      break;
    }
    const v = (q[0] << 18 | q[1] << 12 | (q[2] || 0) << 6 | (q[3] || 0)) >>> 0;
    out.push(v >> 16 & 0xff);
    if (q.length > 2) out.push(v >> 8 & 0xff);
    if (q.length > 3) out.push(v & 0xff);
    if (done) break;
  }
  return Uint8Array.from(out);
}
