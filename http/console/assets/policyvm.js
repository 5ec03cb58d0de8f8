// The policy machine, for checking a proof in the browser: reading bytecode (the format
// of docs/bytecode.md) with the Go decoder's checks, and running it on an intent's attrs
// and the evidence to the same failures, indexes and reasons as the Go machine.
//
// It follows package policy step by step rather than re-deriving the language, because
// the proof check compares its output with the receipt byte for byte: a reason worded a
// little differently would be a false alarm. Where JavaScript and Go differ underneath,
// the Go behaviour is rebuilt:
//   - ints are int64: BigInt, with overflow checked as Go checks it;
//   - strings compare by their UTF-8 bytes (code point order), not UTF-16 units;
//   - lengths and cuts that Go counts in bytes are counted in UTF-8 bytes;
//   - lower and upper map each code point on its own, as Go's simple case mapping does;
//   - evidence numbers keep their JSON text (JSONNumber), since Go reads them with
//     UseNumber and "2.0" is not an int there, though JSON.parse makes it 2.
// Nothing here throws on bad input: decode answers an Error with Go's message, and the
// caller shows it as the failure of a check.

// Types, numbered as in bytecode.
const T_INT = 1, T_STRING = 2, T_BOOL = 3, T_STRSET = 4, T_INTSET = 5, T_ANY = 6;
const T_UNKNOWN = 0, T_ABSENT = 7, T_BAD = 8;

const TYPE_NAMES = { [T_INT]: "int", [T_STRING]: "string", [T_BOOL]: "bool", [T_STRSET]: "set<string>", [T_INTSET]: "set<int>", [T_ANY]: "any" };
const typeString = t => TYPE_NAMES[t] || `Type(${t})`;
const isSetType = t => t === T_STRSET || t === T_INTSET;
const isValueType = t => t >= T_INT && t <= T_INTSET;
const elemOf = t => t === T_STRSET ? T_STRING : t === T_INTSET ? T_INT : T_UNKNOWN;
const setOf = t => t === T_STRING ? T_STRSET : t === T_INT ? T_INTSET : T_UNKNOWN;

// Limits of the language (policy/types.go).
const MAX_SOURCE_BYTES = 64 << 10, MAX_CONSTRAINTS = 256, MAX_PARAMETERS = 128, MAX_EVIDENCE = 256, MAX_DEPTH = 64;
const MAX_ATTR_FIELDS = 8 * MAX_PARAMETERS;
const MAX_STRING_BYTES = 4 << 10, MAX_SET_ELEMENTS = 1024, MAX_EXTRACTOR_NAME = 64, MAX_ERRORS = 10;

const MIN_INT64 = -(1n << 63n), MAX_INT64 = (1n << 63n) - 1n;

// Bits of the flags byte: an evidence block; an agents part, whose parameter slot
// follows the parameters; an amount part, whose code follows the evidence table; a
// period part, whose byte follows the amount; and constraints that read the decision's
// context (the CTX instruction), which has no bytes of its own.
const FLAG_EVIDENCE = 1, FLAG_AGENTS = 2, FLAG_AMOUNT = 4, FLAG_PERIOD = 8, FLAG_CONTEXT = 16;
const KNOWN_FLAGS = FLAG_EVIDENCE | FLAG_AGENTS | FLAG_AMOUNT | FLAG_PERIOD | FLAG_CONTEXT;

// Values of the decision's context, numbered as the operand of CTX (policy/mandate.go).
const CTX = { SPENT: 0, PURCHASES: 1, PERIOD_SPENT: 2, PERIOD_PURCHASES: 3, AMOUNT: 4, TIME: 5 };
const CTX_NAMES = ["mandate.spent", "mandate.purchases", "mandate.period_spent", "mandate.period_purchases", "purchase.amount", "decision.time"];
const NUM_CTX = CTX_NAMES.length;
const isMandateCtx = v => v <= CTX.PERIOD_PURCHASES;
const inPeriodCtx = v => v === CTX.PERIOD_SPENT || v === CTX.PERIOD_PURCHASES;
// Periods, numbered as the period byte.
const PERIOD_NAMES = ["", "day", "week", "month"];

// Opcodes.
const BC = {
  INT: 0x01, STR: 0x02, TRUE: 0x03, FALSE: 0x04, SET_STR: 0x05, SET_INT: 0x06, PARAM: 0x07, EVID: 0x08, CTX: 0x09,
  NEG: 0x10, NOT: 0x11, ADD: 0x12, SUB: 0x13, MUL: 0x14,
  EQ: 0x20, NE: 0x21, LT: 0x22, LE: 0x23, GT: 0x24, GE: 0x25, IN: 0x26, NOT_IN: 0x27, CHAIN: 0x28,
  JUMP_IF_FALSE: 0x30, JUMP_IF_TRUE: 0x31,
  LEN: 0x40, LOWER: 0x41, UPPER: 0x42, CONTAINS: 0x43, STARTS_WITH: 0x44, ENDS_WITH: 0x45, SUBSET: 0x46, INTERSECTS: 0x47,
};

// Operators of the tree, in the order of Go's op enum: the checker compares them
// (an op at or after OP.LT in a comparison is an ordering).
const OP = { OR: 1, AND: 2, NOT: 3, NEG: 4, EQ: 5, NE: 6, LT: 7, LE: 8, GT: 9, GE: 10, IN: 11, NOT_IN: 12, ADD: 13, SUB: 14, MUL: 15 };
const OP_SPELLING = ["", "or", "and", "not", "-", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "+", "-", "*"];
const OP_CODE = [0, BC.JUMP_IF_TRUE, BC.JUMP_IF_FALSE, BC.NOT, BC.NEG, BC.EQ, BC.NE, BC.LT, BC.LE, BC.GT, BC.GE, BC.IN, BC.NOT_IN, BC.ADD, BC.SUB, BC.MUL];
const PREC = { LOWEST: 0, OR: 1, AND: 2, NOT: 3, CMP: 4, ADD: 5, MUL: 6, UNARY: 7, PRIMARY: 8 };
function opPrec(o) {
  switch (o) {
    case OP.OR: return PREC.OR;
    case OP.AND: return PREC.AND;
    case OP.NOT: return PREC.NOT;
    case OP.ADD: case OP.SUB: return PREC.ADD;
    case OP.MUL: return PREC.MUL;
    case OP.NEG: return PREC.UNARY;
  }
  return o >= OP.EQ && o <= OP.NOT_IN ? PREC.CMP : PREC.LOWEST;
}
const cmpOp = c => OP.EQ + (c - BC.EQ); // EQ..GE are in the same order in both
function binOp(c) {
  switch (c) {
    case BC.ADD: return OP.ADD;
    case BC.SUB: return OP.SUB;
    case BC.MUL: return OP.MUL;
    case BC.IN: return OP.IN;
  }
  return OP.NOT_IN;
}

// Functions, by opcode.
const FN_NAMES = { [BC.LEN]: "len", [BC.LOWER]: "lower", [BC.UPPER]: "upper", [BC.CONTAINS]: "contains", [BC.STARTS_WITH]: "starts_with",
  [BC.ENDS_WITH]: "ends_with", [BC.SUBSET]: "subset", [BC.INTERSECTS]: "intersects" };
const FN_LIST = "len, lower, upper, contains, starts_with, ends_with, subset, intersects";
const arity = f => f === BC.LEN || f === BC.LOWER || f === BC.UPPER ? 1 : 2;

// ---- strings as Go sees them ----

const encoder = new TextEncoder();
// ignoreBOM: a leading U+FEFF is part of a Go string, not a mark to drop.
const strictUTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const looseUTF8 = new TextDecoder("utf-8", { ignoreBOM: true });
const utf8Len = s => encoder.encode(s).length;

// cmpStr orders strings as Go does, by their UTF-8 bytes. For well-formed UTF-16 that
// is code point order, which differs from code unit order only where a surrogate meets
// a unit of U+E000 or above.
export function cmpStr(a, b) {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i), y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}
const cmpBig = (a, b) => a < b ? -1 : a > b ? 1 : 0;

function sortedDistinct(xs, cmp) {
  const s = [...xs].sort(cmp);
  return s.filter((x, i) => i === 0 || cmp(s[i - 1], x) !== 0);
}

// Go's strings decoded from JSON never hold a lone surrogate: it becomes U+FFFD.
const wellFormed = s => typeof s.toWellFormed === "function" ? s.toWellFormed() : s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");

// Code points whose mapping on its own in JavaScript differs from Go's unicode.ToLower
// and ToUpper, found by comparing the two over every code point (the differential test
// does it again). Two causes: JavaScript applies the full mappings of SpecialCasing.txt
// (U+0130 to "i" and a combining dot, U+1F80 to two letters) where Go applies the simple
// ones; and the browser's Unicode tables may be newer than Go's, which leave the letters
// they do not know as they are (docs/bytecode.md: Go's tables decide).
const caseTable = (pairs, same) => {
  const m = new Map(pairs);
  for (const [lo, hi] of same) for (let c = lo; c <= hi; c++) m.set(c, c);
  return m;
};
const LOWER_EXCEPTIONS = caseTable([[0x130, 0x69]], [[0x1c89, 0x1c89], [0xa7cb, 0xa7cc], [0xa7ce, 0xa7ce], [0xa7d2, 0xa7d2],
  [0xa7d4, 0xa7d4], [0xa7da, 0xa7da], [0xa7dc, 0xa7dc], [0x10d50, 0x10d65], [0x16ea0, 0x16eb8]]);
const UPPER_EXCEPTIONS = caseTable([
  ...[0x1f80, 0x1f90, 0x1fa0].flatMap(base => Array.from({ length: 8 }, (_, i) => [base + i, base + i + 8])),
  [0x1fb3, 0x1fbc], [0x1fc3, 0x1fcc], [0x1ff3, 0x1ffc],
], [[0x19b, 0x19b], [0x264, 0x264], [0x1c8a, 0x1c8a], [0xa7cd, 0xa7cd], [0xa7cf, 0xa7cf], [0xa7d3, 0xa7d3], [0xa7d5, 0xa7d5],
  [0xa7db, 0xa7db], [0x10d70, 0x10d85], [0x16ebb, 0x16ed3]]);

// mapCase is strings.ToLower (or ToUpper): each code point mapped on its own.
export function mapCase(s, upper) {
  const table = upper ? UPPER_EXCEPTIONS : LOWER_EXCEPTIONS;
  let out = "";
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (c < 0x80) { out += upper ? ch.toUpperCase() : ch.toLowerCase(); continue; }
    const e = table.get(c);
    if (e !== undefined) { out += String.fromCodePoint(e); continue; }
    const m = upper ? ch.toUpperCase() : ch.toLowerCase();
    // A full mapping of more than one code point has no simple counterpart here
    // unless the table gives one: the code point stays.
    out += [...m].length === 1 ? m : ch;
  }
  return out;
}

// quote writes s as the language (and JSON) writes a string literal.
export function quote(s) {
  let out = "\"";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    switch (c) {
      case 0x22: out += "\\\""; continue;
      case 0x5c: out += "\\\\"; continue;
      case 0x0a: out += "\\n"; continue;
      case 0x0d: out += "\\r"; continue;
      case 0x09: out += "\\t"; continue;
      case 0x08: out += "\\b"; continue;
      case 0x0c: out += "\\f"; continue;
    }
    out += c < 0x20 ? "\\u00" + c.toString(16).padStart(2, "0") : s[i];
  }
  return out + "\"";
}

// goQuote is Go's %q, for the messages that quote a name or a reason.
export function goQuote(s) {
  let out = "\"";
  for (const ch of s) {
    const c = ch.codePointAt(0);
    const esc = { 7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v", 0x22: "\\\"", 0x5c: "\\\\" }[c];
    if (esc) out += esc;
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else if (c >= 0x80 && c <= 0xa0 || c === 0xad) out += "\\u" + c.toString(16).padStart(4, "0");
    else if (c >= 0xd800 && c <= 0xdfff) out += "\\ufffd";
    else out += ch;
  }
  return out + "\"";
}

// ---- values ----

const val = (t, n = 0n, s = "", set = null) => ({ t, n, s, set });
const intValue = n => val(T_INT, n);
const strValue = s => val(T_STRING, 0n, s);
const boolValue = b => val(T_BOOL, b ? 1n : 0n);
const setLen = set => set.strs.length + set.ints.length;
const newStrSet = xs => ({ strs: sortedDistinct(xs, cmpStr), ints: [] });
const newIntSet = xs => ({ strs: [], ints: sortedDistinct(xs, cmpBig) });

// formatValue writes v for a reason; limit > 0 cuts long sets and strings.
function formatValue(v, limit) {
  switch (v.t) {
    case T_INT: return v.n.toString();
    case T_STRING: {
      const b = encoder.encode(v.s);
      if (limit > 0 && b.length > 4 * limit) {
        let cut = 4 * limit;
        while (cut > 0 && (b[cut] & 0xc0) === 0x80) cut--;
        return quote(looseUTF8.decode(b.subarray(0, cut))) + "...";
      }
      return quote(v.s);
    }
    case T_BOOL: return v.n !== 0n ? "true" : "false";
    case T_STRSET: case T_INTSET: {
      let out = "{";
      const n = setLen(v.set);
      for (let i = 0; i < n; i++) {
        if (limit > 0 && i === limit) { out += `, ... (${n} in all)`; break; }
        if (i > 0) out += ", ";
        out += v.t === T_STRSET ? quote(v.set.strs[i]) : v.set.ints[i].toString();
      }
      return out + "}";
    }
  }
  return "<no value>";
}

// ---- reading bytecode ----

class Reader {
  constructor(b) { this.b = b; this.off = 0; this.err = null; }
  fail(msg) { if (!this.err) this.err = `bytecode offset ${this.off}: ${msg}`; }
  byte(what) {
    if (this.err) return 0;
    if (this.off >= this.b.length) { this.fail(`truncated (reading ${what})`); return 0; }
    return this.b[this.off++];
  }
  // uvarint is encoding/binary's Uvarint, to its overflow rules.
  uvarint(what) {
    if (this.err) return 0n;
    let x = 0n, s = 0n;
    for (let i = 0; this.off + i < this.b.length; i++) {
      const c = this.b[this.off + i];
      if (i === 10) { this.fail(`${what} is not a valid varint`); return 0n; }
      if (c < 0x80) {
        if (i === 9 && c > 1) { this.fail(`${what} is not a valid varint`); return 0n; }
        this.off += i + 1;
        return x | BigInt(c) << s;
      }
      x |= BigInt(c & 0x7f) << s;
      s += 7n;
    }
    this.fail(`truncated (reading ${what})`);
    return 0n;
  }
  varint(what) {
    const u = this.uvarint(what);
    const x = u >> 1n;
    return BigInt.asIntN(64, u & 1n ? ~x : x);
  }
  count(what, limit) {
    const n = this.uvarint(what);
    if (!this.err && n > BigInt(limit)) { this.fail(`${what} ${n} is over the limit of ${limit}`); return 0; }
    return Number(n);
  }
  bytes(n, what) {
    if (this.err) return new Uint8Array(0);
    if (n > this.b.length - this.off) { this.fail(`truncated (reading ${what} of ${n} bytes)`); return new Uint8Array(0); }
    const out = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return out;
  }
  string(what, limit) {
    const b = this.bytes(this.count(what + " length", limit), what);
    try {
      return strictUTF8.decode(b);
    } catch {
      if (!this.err) this.fail(`${what} is not valid UTF-8`);
      return looseUTF8.decode(b);
    }
  }
}

const isLetter = c => c >= 0x61 && c <= 0x7a || c >= 0x41 && c <= 0x5a || c === 0x5f;
const isDigit = c => c >= 0x30 && c <= 0x39;
function isIdent(s) {
  if (s === "" || !isLetter(s.charCodeAt(0))) return false;
  for (let i = 1; i < s.length; i++) if (!isLetter(s.charCodeAt(i)) && !isDigit(s.charCodeAt(i))) return false;
  return true;
}

// checkExtractorName is the rule the compiler applies to an extractor's name.
function checkExtractorName(name) {
  if (name === "") return "extractor name is empty";
  if (utf8Len(name) > MAX_EXTRACTOR_NAME) return `extractor name is ${utf8Len(name)} bytes, over the limit of ${MAX_EXTRACTOR_NAME}`;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (!isLetter(c) && !isDigit(c) && c !== 0x2d && c !== 0x2e) return `extractor name ${quote(name)}: want letters, digits, '_', '-' and '.' only`;
  }
  return "";
}

function readBytecode(b) {
  if (b.length < 5 || b[0] !== 0x49 || b[1] !== 0x50 || b[2] !== 0x4f || b[3] !== 0x4c) return { err: "not policy bytecode (bad magic)" };
  if (b[4] !== 1) return { err: `bytecode version ${b[4]} is not supported (this build reads version 1)` };
  const r = new Reader(b);
  r.off = 5;
  const f = { params: [], evidence: [], constraints: [] };
  f.name = r.string("name", MAX_SOURCE_BYTES);
  f.extractor = r.string("extractor", MAX_EXTRACTOR_NAME);
  const flags = r.byte("flags");
  if (flags & ~KNOWN_FLAGS) r.fail(`unknown flags 0x${flags.toString(16)}`);
  f.evidenceDeclared = (flags & FLAG_EVIDENCE) !== 0;
  const np = r.count("parameter count", MAX_PARAMETERS);
  for (let i = 0; i < np && !r.err; i++) {
    const d = { name: r.string("parameter name", MAX_SOURCE_BYTES), typ: r.byte("parameter type"), optional: false };
    const o = r.byte("parameter flag");
    if (o === 1) d.optional = true;
    else if (o !== 0) r.fail(`parameter ${goQuote(d.name)}: bad optional flag`);
    f.params.push(d);
  }
  f.agents = null;
  if (flags & FLAG_AGENTS) {
    const slot = r.count("agents slot", Math.max(np - 1, 0));
    if (!r.err && np === 0) r.fail("agents slot, but no parameters");
    if (!r.err) f.agents = { name: f.params[slot].name, slot: 0 };
  }
  const ne = r.count("evidence count", MAX_EVIDENCE);
  const evs = [];
  for (let i = 0; i < ne && !r.err; i++) evs.push({ name: r.string("evidence name", MAX_SOURCE_BYTES), typ: r.byte("evidence type"), optional: false });
  if (f.evidenceDeclared) f.evidence = evs;
  let amount = null;
  if (flags & FLAG_AMOUNT) {
    amount = r.bytes(r.count("amount code length", b.length), "amount code");
    if (!r.err && amount.length === 0) r.fail("amount code is empty");
  }
  f.amount = null;
  f.period = 0;
  if (flags & FLAG_PERIOD) {
    f.period = r.byte("period");
    if (!r.err && (f.period === 0 || f.period >= PERIOD_NAMES.length)) r.fail(`period ${f.period} is not day (1), week (2) or month (3)`);
  }
  const nc = r.count("constraint count", MAX_CONSTRAINTS);
  const codes = [];
  for (let i = 0; i < nc && !r.err; i++) {
    const c = { optional: false, x: null };
    const o = r.byte("constraint flag");
    if (o === 1) c.optional = true;
    else if (o !== 0) r.fail(`constraint ${i}: bad flag`);
    f.constraints.push(c);
    codes.push(r.bytes(r.count("code length", b.length), "constraint code"));
  }
  if (!r.err && r.off !== b.length) r.fail(`${b.length - r.off} bytes after the last constraint`);
  if (r.err) return { err: r.err };
  if (f.extractor !== "") {
    const msg = checkExtractorName(f.extractor);
    if (msg) return { err: msg };
  }
  return { f, codes, amount, decls: evs, ctx: (flags & FLAG_CONTEXT) !== 0 };
}

// load turns one expression's code into instructions ({op, cmp, a}), adding its
// constants to pg, with the local checks of Go's load; ctx allows context values.
function load(pg, code, nparams, nev, ctx) {
  const r = new Reader(code);
  const ins = [];
  const at = new Int32Array(code.length + 1);
  const jumps = [];
  let height = 0;
  const use = (pop, push) => {
    if (height < pop) { r.fail("stack underflow"); return; }
    height += push - pop;
  };
  while (r.off < code.length && !r.err) {
    at[r.off] = ins.length + 1;
    const inst = { op: r.byte("opcode"), cmp: 0, a: 0 };
    switch (inst.op) {
      case BC.INT:
        inst.a = pg.ints.length; pg.ints.push(r.varint("integer")); use(0, 1); break;
      case BC.STR:
        inst.a = pg.strs.length; pg.strs.push(r.string("string", MAX_STRING_BYTES)); use(0, 1); break;
      case BC.TRUE: case BC.FALSE:
        use(0, 1); break;
      case BC.SET_STR: {
        const n = r.count("set size", MAX_SET_ELEMENTS);
        const xs = [];
        for (let i = 0; i < n && !r.err; i++) xs.push(r.string("set element", MAX_STRING_BYTES));
        inst.a = pg.sets.length; pg.sets.push(newStrSet(xs)); use(0, 1); break;
      }
      case BC.SET_INT: {
        const n = r.count("set size", MAX_SET_ELEMENTS);
        const xs = [];
        for (let i = 0; i < n && !r.err; i++) xs.push(r.varint("set element"));
        inst.a = pg.sets.length; pg.sets.push(newIntSet(xs)); use(0, 1); break;
      }
      case BC.PARAM:
        inst.a = r.count("parameter slot", Math.max(nparams - 1, 0));
        if (nparams === 0) r.fail("parameter slot, but no parameters");
        use(0, 1); break;
      case BC.EVID:
        inst.a = r.count("evidence slot", Math.max(nev - 1, 0));
        if (nev === 0) r.fail("evidence slot, but no evidence fields");
        use(0, 1); break;
      case BC.CTX:
        inst.a = r.count("context value", NUM_CTX - 1);
        if (!ctx) r.fail("context value, but flags bit 4 is clear");
        use(0, 1); break;
      case BC.NEG: case BC.NOT: case BC.LEN: case BC.LOWER: case BC.UPPER:
        use(1, 1); break;
      case BC.ADD: case BC.SUB: case BC.MUL: case BC.EQ: case BC.NE: case BC.LT: case BC.LE: case BC.GT: case BC.GE: case BC.IN: case BC.NOT_IN:
      case BC.CONTAINS: case BC.STARTS_WITH: case BC.ENDS_WITH: case BC.SUBSET: case BC.INTERSECTS:
        use(2, 1); break;
      case BC.CHAIN:
        inst.cmp = r.byte("chain comparison");
        if (inst.cmp < BC.EQ || inst.cmp > BC.GE) r.fail(`chain comparison 0x${inst.cmp.toString(16)} is not a comparison`);
        inst.a = r.count("jump offset", code.length);
        jumps.push(ins.length);
        use(2, 1); break;
      case BC.JUMP_IF_FALSE: case BC.JUMP_IF_TRUE:
        inst.a = r.count("jump offset", code.length);
        jumps.push(ins.length);
        use(1, 0); break;
      default:
        r.fail(`unknown opcode 0x${inst.op.toString(16)}`);
    }
    if (inst.op === BC.CHAIN || inst.op === BC.JUMP_IF_FALSE || inst.op === BC.JUMP_IF_TRUE) {
      const target = r.off + inst.a;
      if (target > code.length) r.fail("jump past the end of the code");
      else inst.a = target;
    }
    ins.push(inst);
  }
  if (r.err) return { err: r.err };
  at[code.length] = ins.length + 1;
  for (const j of jumps) {
    const idx = at[ins[j].a] - 1;
    if (idx < 0) return { err: "bytecode: a jump lands inside an instruction" };
    if (idx <= j) return { err: "bytecode: a jump does not go forward" };
    ins[j].a = idx;
  }
  if (height !== 1) return { err: `bytecode: code leaves ${height} values on the stack, want 1` };
  return { ins };
}

const SHAPE = "bytecode: code does not have the shape the compiler gives";

// decompile rebuilds a constraint's tree from its instructions, refusing code of any
// other shape than the compiler's.
function decompile(ins, pg, params, ev) {
  let depth = 0;
  const run = (lo, hi) => {
    if (++depth > MAX_DEPTH + 1) throw new Error(`bytecode: nesting over the limit of ${MAX_DEPTH}`);
    const st = [];
    const pop = () => {
      if (!st.length || !st[st.length - 1].x) return null;
      return st.pop().x;
    };
    for (let pc = lo; pc < hi; pc++) {
      const inst = ins[pc];
      switch (inst.op) {
        case BC.INT: st.push({ x: { k: "int", v: pg.ints[inst.a] } }); break;
        case BC.STR: st.push({ x: { k: "str", v: pg.strs[inst.a] } }); break;
        case BC.TRUE: case BC.FALSE: st.push({ x: { k: "bool", v: inst.op === BC.TRUE } }); break;
        case BC.SET_STR: st.push({ x: { k: "set", elem: T_STRING, strs: pg.sets[inst.a].strs, ints: [] } }); break;
        case BC.SET_INT: st.push({ x: { k: "set", elem: T_INT, strs: [], ints: pg.sets[inst.a].ints } }); break;
        case BC.PARAM: st.push({ x: { k: "ref", evidence: false, name: params[inst.a].name, slot: 0 } }); break;
        case BC.EVID: st.push({ x: { k: "ref", evidence: true, name: ev[inst.a].name, slot: 0 } }); break;
        case BC.CTX: st.push({ x: { k: "ctx", v: inst.a } }); break;
        case BC.NEG: case BC.NOT: {
          const x = pop();
          if (!x) throw new Error(SHAPE);
          st.push({ x: { k: "unary", op: inst.op === BC.NOT ? OP.NOT : OP.NEG, x } });
          break;
        }
        case BC.JUMP_IF_FALSE: case BC.JUMP_IF_TRUE: {
          const x = pop();
          const target = inst.a;
          if (!x || target > hi) throw new Error(SHAPE);
          const y = run(pc + 1, target);
          st.push({ x: { k: "bin", op: inst.op === BC.JUMP_IF_TRUE ? OP.OR : OP.AND, x, y } });
          pc = target - 1;
          break;
        }
        case BC.CHAIN: case BC.EQ: case BC.NE: case BC.LT: case BC.LE: case BC.GT: case BC.GE: {
          const y = pop();
          if (!y || !st.length) throw new Error(SHAPE);
          const top = st.pop();
          const o = cmpOp(inst.op === BC.CHAIN ? inst.cmp : inst.op);
          let c;
          if (top.chain) {
            c = top.chain;
            if (inst.op === BC.CHAIN && inst.a !== top.end || inst.op !== BC.CHAIN && pc + 1 !== top.end) throw new Error(SHAPE);
            c.ops.push(o);
            c.xs.push(y);
          } else if (inst.op === BC.CHAIN) {
            if (inst.a > hi) throw new Error(SHAPE);
            c = { k: "chain", ops: [o], xs: [top.x, y] };
          } else {
            st.push({ x: { k: "bin", op: o, x: top.x, y } });
            break;
          }
          st.push(inst.op === BC.CHAIN ? { chain: c, end: inst.a } : { x: c });
          break;
        }
        case BC.ADD: case BC.SUB: case BC.MUL: case BC.IN: case BC.NOT_IN: {
          const y = pop(), x = pop();
          if (!x || !y) throw new Error(SHAPE);
          st.push({ x: { k: "bin", op: binOp(inst.op), x, y } });
          break;
        }
        default: {
          const args = new Array(arity(inst.op));
          for (let i = args.length - 1; i >= 0; i--) {
            const x = pop();
            if (!x) throw new Error(SHAPE);
            args[i] = x;
          }
          st.push({ x: { k: "call", fn: inst.op, name: FN_NAMES[inst.op], args } });
        }
      }
    }
    depth--;
    if (st.length !== 1 || !st[0].x) throw new Error(SHAPE);
    return st[0].x;
  };
  return run(0, ins.length);
}

// ---- printing ----

function exprPrec(e) {
  switch (e.k) {
    case "unary": case "bin": return opPrec(e.op);
    case "chain": return PREC.CMP;
    case "int": return e.v < 0n ? PREC.UNARY : PREC.PRIMARY;
  }
  return PREC.PRIMARY;
}

function printExpr(e, prec) {
  if (exprPrec(e) < prec) return "(" + printExpr(e, PREC.LOWEST) + ")";
  switch (e.k) {
    case "int": return e.v.toString();
    case "str": return quote(e.v);
    case "bool": return e.v ? "true" : "false";
    case "set": return "{" + (e.elem === T_STRING ? e.strs.map(quote) : e.ints.map(String)).join(", ") + "}";
    case "ref": return (e.evidence ? "evidence." : "parameters.") + e.name;
    case "ctx": return CTX_NAMES[e.v];
    case "unary": return e.op === OP.NOT ? "not " + printExpr(e.x, PREC.NOT) : "-" + printExpr(e.x, PREC.UNARY);
    case "bin": {
      const p = opPrec(e.op);
      return printExpr(e.x, p === PREC.CMP ? PREC.ADD : p) + " " + OP_SPELLING[e.op] + " " + printExpr(e.y, p + 1);
    }
    case "chain": return e.xs.map((x, i) => (i > 0 ? " " + OP_SPELLING[e.ops[i - 1]] + " " : "") + printExpr(x, PREC.ADD)).join("");
    case "call": return e.name + "(" + e.args.map(a => printExpr(a, PREC.LOWEST)).join(", ") + ")";
  }
  return "";
}

// exprString is a constraint's canonical text: its pretty_expr.
export const exprString = e => printExpr(e, PREC.LOWEST);

// ---- checking (policy/checker.go) ----

function depthOf(e) {
  switch (e.k) {
    case "unary": return 1 + depthOf(e.x);
    case "bin": {
      let l = depthOf(e.x);
      if (e.x.k !== "bin" || opPrec(e.x.op) !== opPrec(e.op) || opPrec(e.op) === PREC.CMP) l++;
      return Math.max(l, 1 + depthOf(e.y));
    }
    case "chain": return 1 + Math.max(0, ...e.xs.map(depthOf));
    case "call": return 1 + Math.max(0, ...e.args.map(depthOf));
  }
  return 0;
}

function walk(e, f) {
  f(e);
  switch (e.k) {
    case "unary": walk(e.x, f); break;
    case "bin": walk(e.x, f); walk(e.y, f); break;
    case "chain": for (const x of e.xs) walk(x, f); break;
    case "call": for (const x of e.args) walk(x, f); break;
  }
}

const sortDecls = ds => [...ds].sort((a, b) => cmpStr(a.name, b.name)); // stable, as Go's SortStableFunc

function article(t) {
  switch (t) {
    case T_INT: return "an int";
    case T_STRING: return "a string";
    case T_BOOL: return "a bool";
  }
  return "a " + typeString(t);
}

function declared(ds, none) {
  if (!ds.length) return none;
  const names = sortDecls(ds).map(d => d.name);
  return "declared: " + names.slice(0, 10).join(", ") + (names.length > 10 ? ", ..." : "");
}

// check type-checks a decoded tree as the compiler's checker does, resolving slots. A
// decoded tree has no positions, so every message is the bare message, in the order
// found. It answers the sorted declarations, or the error text.
function check(f) {
  const errs = [];
  const c = { report: true, infer: false, evTypes: null, changed: false, inAmount: false };
  const add = msg => errs.push(msg);
  const errorf = msg => { if (c.report) add(msg); };
  const decls = (ds, block, limit, params) => {
    const byName = new Map();
    ds.forEach((d, i) => {
      if (i === limit) add(`more than ${limit} ${block} fields, the limit`);
      if (byName.has(d.name)) { add(`field ${goQuote(d.name)} declared twice in ${block} (first at 0:0)`); return; }
      if (!isValueType(d.typ)) add(`field ${goQuote(d.name)} has no valid type`);
      if (d.optional && !params) add("optional is only allowed in parameters");
      if (!isIdent(d.name)) add(`field name ${goQuote(d.name)} is not an identifier`);
      byName.set(d.name, d);
    });
    const out = [];
    const idx = new Map();
    for (const d of sortDecls(ds)) if (byName.get(d.name) === d) { idx.set(d.name, out.length); out.push(d); }
    return { out, byName, idx };
  };
  const P = decls(f.params, "parameters", MAX_PARAMETERS, true);
  if (f.agents) {
    // As Go's checker.agents.
    const a = f.agents, d = P.byName.get(a.name);
    if (!d) add(`agents names an undeclared parameter ${goQuote(a.name)} (${declared(f.params, "the policy declares no parameters")})`);
    else {
      a.slot = P.idx.get(a.name);
      if (d.typ !== T_STRSET) {
        // An invalid type decls has reported already.
        if (isValueType(d.typ)) add(`agents needs a set<string> parameter (the agents' Base58 public keys): parameters.${a.name} is ${typeString(d.typ)}`);
      } else if (d.optional) add(`agents needs a parameter that is not optional: parameters.${a.name} is optional, and an intent without it would not say whom it delegates to`);
    }
  }
  let E = { out: [], byName: new Map(), idx: new Map() };
  if (f.evidenceDeclared) E = decls(f.evidence, "evidence", MAX_EVIDENCE, false);
  const n = f.constraints.length;
  if (n === 0) add("requires block is empty (want at least one constraint)");
  else if (n > MAX_CONSTRAINTS) add(`more than ${MAX_CONSTRAINTS} constraints, the limit`);
  const deep = f.constraints.map(k => {
    const d = depthOf(k.x);
    if (d > MAX_DEPTH) { add(`expression nests ${d} levels deep, over the limit of ${MAX_DEPTH}`); return true; }
    return false;
  });
  let deepAmount = false;
  if (f.amount) {
    const d = depthOf(f.amount);
    if (d > MAX_DEPTH) { add(`expression nests ${d} levels deep, over the limit of ${MAX_DEPTH}`); deepAmount = true; }
  }

  const show = e => {
    let s = exprString(e);
    const b = encoder.encode(s);
    if (b.length > 60) s = looseUTF8.decode(b.subarray(0, 57)) + "...";
    return s;
  };
  const concrete = isValueType;
  const need = (e, want, what) => {
    const t = expr(e, want);
    if (concrete(t) && t !== want) errorf(`${what} needs ${article(want)}: ${show(e)} is ${typeString(t)}`);
  };
  const ref = (e, want) => {
    if (!e.evidence) {
      const d = P.byName.get(e.name);
      if (!d) { errorf(`undeclared parameter ${goQuote(e.name)} (${declared(f.params, "the policy declares no parameters")})`); return T_UNKNOWN; }
      e.slot = P.idx.get(e.name);
      return d.typ;
    }
    if (!c.infer) {
      const d = E.byName.get(e.name);
      if (!d) { errorf(`undeclared evidence field ${goQuote(e.name)} (${declared(f.evidence, "the evidence block declares none")})`); return T_UNKNOWN; }
      e.slot = E.idx.get(e.name);
      return d.typ;
    }
    let t = c.evTypes.get(e.name);
    if (t === T_UNKNOWN && concrete(want) && !c.report) {
      t = want;
      c.evTypes.set(e.name, t);
      c.changed = true;
    }
    if (c.report) e.slot = E.idx.get(e.name);
    return t;
  };
  // As Go's checker.ctxRef: where a value of the decision's context may be read.
  const ctxRef = e => {
    const name = CTX_NAMES[e.v];
    if (c.inAmount) errorf(`the amount may read only evidence and parameters, not ${name}: it is the price of one purchase, whatever the mandate's totals or the time`);
    else if (e.v === CTX.AMOUNT && !f.amount) errorf("purchase.amount needs an amount part (amount EXPR): it is the value of that expression");
    else if (isMandateCtx(e.v) && !f.amount) errorf(`${name} needs an amount part (amount EXPR): the mandate's totals are sums of the amounts of its purchases`);
    else if (inPeriodCtx(e.v) && !f.period) errorf(`${name} needs a period part (period day, week or month): the calendar period its total counts in`);
  };
  const checkString = s => { if (utf8Len(s) > MAX_STRING_BYTES) errorf(`string literal is ${utf8Len(s)} bytes, over the limit of ${MAX_STRING_BYTES} bytes (4 KiB)`); };
  const inOp = e => {
    let tx = expr(e.x, T_UNKNOWN);
    const ty = expr(e.y, setOf(tx));
    if (!c.report && tx === T_UNKNOWN && isSetType(ty)) tx = expr(e.x, elemOf(ty));
    const o = OP_SPELLING[e.op];
    if (concrete(ty) && !isSetType(ty)) errorf(`operator ${o} needs a set on its right: ${show(e.y)} is ${typeString(ty)}`);
    else if (isSetType(ty) && concrete(tx) && tx !== elemOf(ty)) errorf(`operator ${o} needs ${article(elemOf(ty))} on its left for a ${typeString(ty)}: ${show(e.x)} is ${typeString(tx)}`);
    else if (isSetType(tx) || tx === T_BOOL) errorf(`operator ${o} needs a string or an int on its left: ${show(e.x)} is ${typeString(tx)}`);
  };
  const compare = (ops, xs) => {
    const ts = new Array(xs.length).fill(T_UNKNOWN);
    const ordering = i => i > 0 && ops[i - 1] >= OP.LT || i < ops.length && ops[i] >= OP.LT;
    xs.forEach((x, i) => {
      let want = T_UNKNOWN;
      if (ordering(i)) want = T_INT;
      else if (i > 0 && concrete(ts[i - 1])) want = ts[i - 1];
      ts[i] = expr(x, want);
    });
    if (!c.report) {
      for (let i = xs.length - 2; i >= 0; i--) if (ts[i] === T_UNKNOWN && concrete(ts[i + 1])) ts[i] = expr(xs[i], ts[i + 1]);
      return;
    }
    ops.forEach((o, i) => {
      const [x, y, tx, ty] = [xs[i], xs[i + 1], ts[i], ts[i + 1]];
      if (o >= OP.LT) {
        for (const [e, t] of [[x, tx], [y, ty]]) {
          if (concrete(t) && t !== T_INT) errorf(`operator ${OP_SPELLING[o]} needs int operands: ${show(e)} is ${typeString(t)}`);
        }
        return;
      }
      if (concrete(tx) && concrete(ty) && tx !== ty) errorf(`cannot compare ${show(x)} (${typeString(tx)}) with ${show(y)} (${typeString(ty)}): the types differ`);
    });
  };
  const callOp = e => {
    const result = e.fn === BC.LEN ? T_INT : e.fn === BC.LOWER || e.fn === BC.UPPER ? T_STRING : T_BOOL;
    switch (e.fn) {
      case BC.LEN: {
        const t = expr(e.args[0], T_UNKNOWN);
        if (concrete(t) && t !== T_STRING && !isSetType(t)) errorf(`len needs a string or a set: ${show(e.args[0])} is ${typeString(t)}`);
        break;
      }
      case BC.LOWER: case BC.UPPER:
        need(e.args[0], T_STRING, e.name); break;
      case BC.CONTAINS: case BC.STARTS_WITH: case BC.ENDS_WITH:
        need(e.args[0], T_STRING, e.name); need(e.args[1], T_STRING, e.name); break;
      default: {
        const [a, b] = e.args;
        let ta = expr(a, T_UNKNOWN);
        const tb = expr(b, isSetType(ta) ? ta : T_UNKNOWN);
        if (!c.report && ta === T_UNKNOWN && isSetType(tb)) ta = expr(a, tb);
        for (const [x, t] of [[a, ta], [b, tb]]) {
          if (concrete(t) && !isSetType(t)) errorf(`${e.name} needs two sets: ${show(x)} is ${typeString(t)}`);
        }
        if (isSetType(ta) && isSetType(tb) && ta !== tb) errorf(`${e.name} needs two sets of one type: ${show(a)} is ${typeString(ta)}, ${show(b)} is ${typeString(tb)}`);
      }
    }
    return result;
  };
  const expr = (e, want) => {
    switch (e.k) {
      case "int":
        if (e.v < 0n && e.v !== MIN_INT64) errorf(`negative integer literal ${e.v}: a negative number is the negation of a literal`);
        return T_INT;
      case "str": checkString(e.v); return T_STRING;
      case "bool": return T_BOOL;
      case "set": {
        const len = e.strs.length + e.ints.length;
        if (len === 0 || len > MAX_SET_ELEMENTS) errorf(`set literal has ${len} elements (want 1 to ${MAX_SET_ELEMENTS})`);
        for (const s of e.strs) checkString(s);
        return setOf(e.elem);
      }
      case "ref": return ref(e, want);
      case "ctx": ctxRef(e); return T_INT;
      case "unary":
        if (e.op === OP.NEG) { need(e.x, T_INT, "operator -"); return T_INT; }
        need(e.x, T_BOOL, "operator not");
        return T_BOOL;
      case "bin":
        switch (e.op) {
          case OP.AND: case OP.OR:
            need(e.x, T_BOOL, "operator " + OP_SPELLING[e.op]); need(e.y, T_BOOL, "operator " + OP_SPELLING[e.op]); return T_BOOL;
          case OP.ADD: case OP.SUB: case OP.MUL:
            need(e.x, T_INT, "operator " + OP_SPELLING[e.op]); need(e.y, T_INT, "operator " + OP_SPELLING[e.op]); return T_INT;
          case OP.IN: case OP.NOT_IN:
            inOp(e); return T_BOOL;
        }
        compare([e.op], [e.x, e.y]);
        return T_BOOL;
      case "chain": compare(e.ops, e.xs); return T_BOOL;
      case "call": return callOp(e);
    }
    return T_UNKNOWN;
  };

  if (!f.evidenceDeclared) {
    // The older dialect: the evidence fields and their types come from their uses.
    c.infer = true;
    c.evTypes = new Map();
    const order = [];
    const see = e => {
      if (e.k === "ref" && e.evidence && !c.evTypes.has(e.name)) { c.evTypes.set(e.name, T_UNKNOWN); order.push(e.name); }
    };
    f.constraints.forEach((k, i) => { if (!deep[i]) walk(k.x, see); });
    const amount = f.amount && !deepAmount;
    if (amount) walk(f.amount, see);
    if (order.length > MAX_EVIDENCE) add(`more than ${MAX_EVIDENCE} evidence fields, the limit`);
    c.report = false;
    for (let pass = 0; pass <= order.length; pass++) {
      c.changed = false;
      f.constraints.forEach((k, i) => { if (!deep[i]) expr(k.x, T_BOOL); });
      if (amount) expr(f.amount, T_INT);
      if (!c.changed) break;
    }
    c.report = true;
    const ds = order.map(name => {
      let t = c.evTypes.get(name);
      if (t === T_UNKNOWN) { t = T_ANY; c.evTypes.set(name, t); }
      return { name, typ: t, optional: false };
    });
    E = { out: sortDecls(ds), byName: new Map(), idx: new Map() };
    E.out.forEach((d, i) => E.idx.set(d.name, i));
  }
  if (f.amount && !deepAmount) {
    // As Go's checker.amount: an int, of evidence and parameters only.
    c.inAmount = true;
    const t = expr(f.amount, T_INT);
    c.inAmount = false;
    if (concrete(t) && t !== T_INT) add(`the amount must be an int (the amount of one purchase): ${show(f.amount)} is ${typeString(t)}`);
  }
  if (f.period && !f.amount) add("period needs an amount part (amount EXPR): the period totals are sums of the amounts of purchases");
  f.constraints.forEach((k, i) => {
    if (deep[i]) return;
    const t = expr(k.x, T_BOOL);
    if (t !== T_BOOL && t !== T_UNKNOWN) add(`a constraint must be bool: ${show(k.x)} is ${typeString(t)}`);
  });
  if (errs.length) {
    const list = errs.length > MAX_ERRORS ? [...errs.slice(0, MAX_ERRORS), `too many errors (${errs.length - MAX_ERRORS} more)`] : errs;
    return { err: list.join("\n") };
  }
  return { params: P.out, evidence: E.out };
}

// ---- writing bytecode again (policy/compiler.go) ----

class Writer {
  constructor() { this.b = []; }
  byte(c) { this.b.push(c); }
  uvarint(n) {
    let x = BigInt(n);
    while (x >= 0x80n) { this.b.push(Number(x & 0x7fn) | 0x80); x >>= 7n; }
    this.b.push(Number(x));
  }
  varint(n) { const x = BigInt.asUintN(64, n << 1n); this.uvarint(n < 0n ? BigInt.asUintN(64, ~x) : x); }
  string(s) { const b = encoder.encode(s); this.uvarint(b.length); for (const c of b) this.b.push(c); }
  append(other) { for (const c of other.b) this.b.push(c); }
}

function compileExpr(w, e) {
  switch (e.k) {
    case "int": w.byte(BC.INT); w.varint(e.v); return;
    case "str": w.byte(BC.STR); w.string(e.v); return;
    case "bool": w.byte(e.v ? BC.TRUE : BC.FALSE); return;
    case "set":
      if (e.elem === T_STRING) { w.byte(BC.SET_STR); w.uvarint(e.strs.length); for (const s of e.strs) w.string(s); return; }
      w.byte(BC.SET_INT); w.uvarint(e.ints.length); for (const n of e.ints) w.varint(n); return;
    case "ref": w.byte(e.evidence ? BC.EVID : BC.PARAM); w.uvarint(e.slot); return;
    case "ctx": w.byte(BC.CTX); w.uvarint(e.v); return;
    case "unary": compileExpr(w, e.x); w.byte(OP_CODE[e.op]); return;
    case "bin":
      compileExpr(w, e.x);
      if (e.op === OP.AND || e.op === OP.OR) {
        const right = new Writer();
        compileExpr(right, e.y);
        w.byte(OP_CODE[e.op]); w.uvarint(right.b.length); w.append(right);
        return;
      }
      compileExpr(w, e.y); w.byte(OP_CODE[e.op]); return;
    case "chain": {
      compileExpr(w, e.xs[0]);
      const n = e.ops.length;
      let tail = new Writer();
      compileExpr(tail, e.xs[n]);
      tail.byte(OP_CODE[e.ops[n - 1]]);
      for (let i = n - 1; i >= 1; i--) {
        const x = new Writer();
        compileExpr(x, e.xs[i]);
        x.byte(BC.CHAIN); x.byte(OP_CODE[e.ops[i - 1]]); x.uvarint(tail.b.length);
        x.append(tail);
        tail = x;
      }
      w.append(tail);
      return;
    }
    case "call": for (const a of e.args) compileExpr(w, a); w.byte(e.fn); return;
  }
}

function encode(f, res) {
  const w = new Writer();
  for (const c of [0x49, 0x50, 0x4f, 0x4c, 1]) w.byte(c);
  w.string(f.name);
  w.string(f.extractor);
  let ctx = false;
  for (const c of f.constraints) walk(c.x, e => { if (e.k === "ctx") ctx = true; });
  w.byte((f.evidenceDeclared ? FLAG_EVIDENCE : 0) | (f.agents ? FLAG_AGENTS : 0) | (f.amount ? FLAG_AMOUNT : 0)
    | (f.period ? FLAG_PERIOD : 0) | (ctx ? FLAG_CONTEXT : 0));
  w.uvarint(res.params.length);
  for (const d of res.params) { w.string(d.name); w.byte(d.typ); w.byte(d.optional ? 1 : 0); }
  if (f.agents) w.uvarint(f.agents.slot);
  w.uvarint(res.evidence.length);
  for (const d of res.evidence) { w.string(d.name); w.byte(d.typ); }
  if (f.amount) {
    const code = new Writer();
    compileExpr(code, f.amount);
    w.uvarint(code.b.length);
    w.append(code);
  }
  if (f.period) w.byte(f.period);
  w.uvarint(f.constraints.length);
  for (const c of f.constraints) {
    w.byte(c.optional ? 1 : 0);
    const code = new Writer();
    compileExpr(code, c.x);
    w.uvarint(code.b.length);
    w.append(code);
  }
  return w.b;
}

// decode loads bytecode as policy.Decode does: {policy} or {error} with Go's message.
export function decode(bytecode) {
  try {
    return decodeOrThrow(bytecode);
  } catch (e) {
    // Only a defect here could throw; it is still an answer, not a broken page.
    return { error: `policy: ${e.message}` };
  }
}

function decodeOrThrow(bytecode) {
  const d = readBytecode(bytecode);
  if (d.err) return { error: `policy: ${d.err}` };
  const pg = { ints: [], strs: [], sets: [] };
  // One expression's code, a constraint's or the amount's: {ins, x} or {err}.
  const loadTree = code => {
    const l = load(pg, code, d.f.params.length, d.decls.length, d.ctx);
    if (l.err) return { err: l.err };
    try {
      return { ins: l.ins, x: decompile(l.ins, pg, d.f.params, d.decls) };
    } catch (e) {
      return { err: e.message };
    }
  };
  let amountCode = null;
  if (d.amount) {
    const t = loadTree(d.amount);
    if (t.err) return { error: `policy: amount: ${t.err}` };
    d.f.amount = t.x;
    amountCode = t.ins;
  }
  const codes = [];
  for (let i = 0; i < d.codes.length; i++) {
    const t = loadTree(d.codes[i]);
    if (t.err) return { error: `policy: constraint ${i}: ${t.err}` };
    d.f.constraints[i].x = t.x;
    codes.push(t.ins);
  }
  if (!isIdent(d.f.name)) return { error: `policy: bytecode name ${goQuote(d.f.name)} is not an identifier` };
  for (const e of d.decls) if (!isIdent(e.name)) return { error: `policy: bytecode evidence field ${goQuote(e.name)} is not an identifier` };
  const res = check(d.f);
  if (res.err) return { error: `policy: bytecode does not check: ${res.err}` };
  const again = encode(d.f, res);
  if (again.length !== bytecode.length || again.some((c, i) => c !== bytecode[i])) {
    return { error: "policy: bytecode is not in the canonical form the compiler writes" };
  }
  // The bytes are the compiler's, so the code loaded above is the code Go runs.
  const params = res.params.map(p => ({ name: p.name, type: p.typ, optional: p.optional }));
  const cons = d.f.constraints.map((c, i) => {
    const optSlots = [];
    if (c.optional) {
      walk(c.x, e => {
        if (e.k === "ref" && !e.evidence && params[e.slot].optional && !optSlots.includes(e.slot)) optSlots.push(e.slot);
      });
    }
    return { optional: c.optional, optSlots, code: codes[i], x: c.x, pretty: exprString(c.x) };
  });
  let reads = 0;
  for (const c of cons) walk(c.x, e => { if (e.k === "ctx") reads |= 1 << e.v; });
  return { policy: { name: d.f.name, extractor: d.f.extractor, agents: d.f.agents ? d.f.agents.name : null, params,
    evidence: res.evidence.map(e => ({ name: e.name, type: e.typ })), cons, pg,
    amount: d.f.amount ? { x: d.f.amount, code: amountCode, pretty: exprString(d.f.amount) } : null,
    period: PERIOD_NAMES[d.f.period], reads } };
}

// ---- evidence and attrs ----

// JSONNumber is a number of the evidence as its JSON text, as Go's UseNumber keeps it.
export class JSONNumber {
  constructor(text) { this.text = text; }
}

function describeRaw(raw) {
  if (raw === null) return "null";
  if (typeof raw === "string") return "the string " + formatValue(strValue(wellFormed(raw)), 16);
  if (typeof raw === "boolean") return "the boolean " + raw;
  if (raw instanceof JSONNumber) return "the number " + raw.text;
  if (Array.isArray(raw)) return "an array";
  return "an object";
}

// toInt accepts an integral JSON number in the int64 range: no fraction, no exponent.
function toInt(raw) {
  if (raw instanceof JSONNumber) {
    const s = raw.text;
    if (/[.eE]/.test(s)) return { ok: false, reason: `want int, got ${s} (a number with a fraction or an exponent)` };
    const n = BigInt(s);
    if (n < MIN_INT64 || n > MAX_INT64) return { ok: false, reason: `want int, got ${s} (out of the int64 range)` };
    return { ok: true, n };
  }
  return { ok: false, reason: "want int, got " + describeRaw(raw) };
}

const bad = reason => ({ v: val(T_BAD), reason });

function toSet(raw, want) {
  if (!Array.isArray(raw)) return bad(`want ${typeString(want)}, got ${describeRaw(raw)}`);
  if (raw.length > MAX_SET_ELEMENTS) return bad(`a set of ${raw.length} elements, over the limit of ${MAX_SET_ELEMENTS}`);
  if (want === T_STRSET) {
    for (let i = 0; i < raw.length; i++) {
      if (typeof raw[i] !== "string") return bad(`want ${typeString(want)}, got an array whose element ${i} is ${describeRaw(raw[i])}`);
    }
    return { v: val(want, 0n, "", newStrSet(raw.map(wellFormed))), reason: "" };
  }
  const ints = [];
  for (let i = 0; i < raw.length; i++) {
    const r = toInt(raw[i]);
    if (!r.ok) return bad(`want ${typeString(want)}, got an array whose element ${i} is bad: ${r.reason}`);
    ints.push(r.n);
  }
  return { v: val(want, 0n, "", newIntSet(ints)), reason: "" };
}

// convert is a raw evidence value as a value of the type the policy wants, or a bad
// value and the reason (policy/evidence.go).
function convert(raw, want) {
  switch (want) {
    case T_INT: {
      const r = toInt(raw);
      return r.ok ? { v: intValue(r.n), reason: "" } : bad(r.reason);
    }
    case T_STRING:
      if (typeof raw === "string") return { v: strValue(wellFormed(raw)), reason: "" };
      break;
    case T_BOOL:
      if (typeof raw === "boolean") return { v: boolValue(raw), reason: "" };
      break;
    case T_STRSET: case T_INTSET:
      return toSet(raw, want);
    case T_ANY: {
      if (typeof raw === "string") return { v: strValue(wellFormed(raw)), reason: "" };
      if (typeof raw === "boolean") return { v: boolValue(raw), reason: "" };
      if (Array.isArray(raw)) {
        // The first element decides; an empty array is a set of either type.
        if (!raw.length) return { v: val(T_STRSET, 0n, "", { strs: [], ints: [] }), reason: "" };
        return toSet(raw, typeof raw[0] === "string" ? T_STRSET : T_INTSET);
      }
      const r = toInt(raw);
      if (r.ok) return { v: intValue(r.n), reason: "" };
      if (raw instanceof JSONNumber) return bad(r.reason);
      return bad("a value of none of the language's types: " + describeRaw(raw));
    }
  }
  return bad(`want ${typeString(want)}, got ${describeRaw(raw)}`);
}

// decodeAttrs reads an intent's attrs ({"fields": {...}}, numbers as JSONNumber) as
// policy.DecodeAttrs does: {attrs: Map} or {error: "field: reason"}.
export function decodeAttrs(raw) {
  const isObj = x => x !== null && typeof x === "object" && !Array.isArray(x) && !(x instanceof JSONNumber);
  const got = x => x === null ? "null" : typeof x === "boolean" ? "a boolean" : x instanceof JSONNumber ? "the number " + x.text
    : typeof x === "string" ? "a string" : Array.isArray(x) ? "an array" : "an object";
  const err = (field, reason) => ({ error: (field ? field + ": " : "") + reason });
  const int = (x, path) => {
    if (!(x instanceof JSONNumber)) return err(path, "want an integer, got " + got(x));
    if (/[.eE]/.test(x.text)) return err(path, `want an integer, got ${x.text} (a number with a fraction or an exponent)`);
    const n = BigInt(x.text);
    if (n < MIN_INT64 || n > MAX_INT64) return err(path, `want an integer, got ${x.text} (out of the int64 range)`);
    return { n };
  };
  if (!isObj(raw)) return err("", "want attrs as a JSON object, got " + got(raw));
  for (const k of Object.keys(raw)) if (k !== "fields") return err(k, "unknown key (an ObjectValue has only fields)");
  if (!("fields" in raw)) return err("fields", "missing (want an object of attribute values)");
  if (!isObj(raw.fields)) return err("fields", "want fields as a JSON object, got " + got(raw.fields));
  const attrs = new Map();
  if (Object.keys(raw.fields).length > MAX_ATTR_FIELDS) return err("fields", `more than ${MAX_ATTR_FIELDS} fields (a policy declares at most ${MAX_PARAMETERS} parameters)`);
  for (const [name, v] of Object.entries(raw.fields)) {
    const path = "fields." + name;
    if (!isObj(v)) return err(path, "want a value as a JSON object, got " + got(v));
    const keys = Object.keys(v);
    if (keys.length === 0) return err(path, "empty object (want exactly one of Int, String, Bool or Set)");
    if (keys.length > 1) return err(path, `two variants, ${keys[0]} and ${keys[1]} (want exactly one of Int, String, Bool or Set)`);
    const k = keys[0], x = v[k], p = path + "." + k;
    if (k === "Int") {
      const r = int(x, p);
      if (r.error) return r;
      attrs.set(name, intValue(r.n));
    } else if (k === "String") {
      if (typeof x !== "string") return err(p, "want a string, got " + got(x));
      attrs.set(name, strValue(x));
    } else if (k === "Bool") {
      if (typeof x !== "boolean") return err(p, "want true or false, got " + got(x));
      attrs.set(name, boolValue(x));
    } else if (k === "Set") {
      if (!isObj(x)) return err(p, "want a set as a JSON object, got " + got(x));
      const sk = Object.keys(x);
      if (sk.length === 0) return err(p, "empty object (want exactly one of String or Int)");
      if (sk.length > 1) return err(p, `two element types, ${sk[0]} and ${sk[1]} (want exactly one of String or Int)`);
      const ek = sk[0], arr = x[ek], ep = p + "." + ek;
      if (ek !== "String" && ek !== "Int") return err(ep, "unknown set element type (want String or Int)");
      if (!Array.isArray(arr)) return err(ep, "want an array, got " + got(arr));
      if (ek === "String") {
        for (const [i, s] of arr.entries()) if (typeof s !== "string") return err(`${ep}[${i}]`, "want a string, got " + got(s));
        attrs.set(name, val(T_STRSET, 0n, "", newStrSet(arr)));
      } else {
        const ints = [];
        for (const [i, e] of arr.entries()) {
          const r = int(e, `${ep}[${i}]`);
          if (r.error) return r;
          ints.push(r.n);
        }
        attrs.set(name, val(T_INTSET, 0n, "", newIntSet(ints)));
      }
    } else {
      return err(p, "unknown variant (want Int, String, Bool or Set)");
    }
  }
  return { attrs };
}

// ---- running (policy/vm.go) ----

const FAULT_NONE = 0, FAULT_TYPE = 1, FAULT_OVERFLOW = 2;
const ok = v => ({ v, f: FAULT_NONE });
const faulted = f => ({ v: val(T_UNKNOWN), f });

function apply1(op, x) {
  switch (op) {
    case BC.NEG:
      if (x.t !== T_INT) return faulted(FAULT_TYPE);
      if (x.n === MIN_INT64) return faulted(FAULT_OVERFLOW);
      return ok(intValue(-x.n));
    case BC.NOT:
      if (x.t !== T_BOOL) return faulted(FAULT_TYPE);
      return ok(boolValue(x.n === 0n));
    case BC.LEN:
      if (x.t === T_STRING) return ok(intValue(BigInt([...x.s].length)));
      if (isSetType(x.t)) return ok(intValue(BigInt(setLen(x.set))));
      break;
    case BC.LOWER: case BC.UPPER:
      if (x.t === T_STRING) return ok(strValue(mapCase(x.s, op === BC.UPPER)));
  }
  return faulted(FAULT_TYPE);
}

function equal(x, y) {
  if (x.t !== y.t) {
    if (isSetType(x.t) && isSetType(y.t) && (setLen(x.set) === 0 || setLen(y.set) === 0)) return { eq: setLen(x.set) === setLen(y.set), ok: true };
    return { eq: false, ok: false };
  }
  switch (x.t) {
    case T_INT: case T_BOOL: return { eq: x.n === y.n, ok: true };
    case T_STRING: return { eq: x.s === y.s, ok: true };
    case T_STRSET: return { eq: x.set.strs.length === y.set.strs.length && x.set.strs.every((s, i) => s === y.set.strs[i]), ok: true };
    case T_INTSET: return { eq: x.set.ints.length === y.set.ints.length && x.set.ints.every((n, i) => n === y.set.ints[i]), ok: true };
  }
  return { eq: false, ok: false };
}

function member(x, s) {
  if (s.t === T_STRSET && x.t === T_STRING) return { in: s.set.strs.includes(x.s), ok: true };
  if (s.t === T_INTSET && x.t === T_INT) return { in: s.set.ints.includes(x.n), ok: true };
  if (isSetType(s.t) && setLen(s.set) === 0 && (x.t === T_STRING || x.t === T_INT)) return { in: false, ok: true };
  return { in: false, ok: false };
}

// Go picks the element kind from the left set alone (strings when it has any); an
// empty left set is read as ints, so its right set's ints (none, if it holds strings).
const pick = (a, b) => a.strs.length > 0 ? [a.strs, b.strs] : [a.ints, b.ints];
function subset(a, b) {
  const [xs, ys] = pick(a, b);
  const have = new Set(ys);
  return xs.every(x => have.has(x));
}
function intersects(a, b) {
  const [xs, ys] = pick(a, b);
  const have = new Set(ys);
  return xs.some(x => have.has(x));
}

function arith(op, a, b) {
  const c = op === BC.ADD ? a + b : op === BC.SUB ? a - b : a * b;
  return c < MIN_INT64 || c > MAX_INT64 ? null : c;
}

function apply2(op, x, y) {
  switch (op) {
    case BC.ADD: case BC.SUB: case BC.MUL: {
      if (x.t !== T_INT || y.t !== T_INT) return faulted(FAULT_TYPE);
      const n = arith(op, x.n, y.n);
      return n === null ? faulted(FAULT_OVERFLOW) : ok(intValue(n));
    }
    case BC.LT: case BC.LE: case BC.GT: case BC.GE: {
      if (x.t !== T_INT || y.t !== T_INT) return faulted(FAULT_TYPE);
      const r = op === BC.LT ? x.n < y.n : op === BC.LE ? x.n <= y.n : op === BC.GT ? x.n > y.n : x.n >= y.n;
      return ok(boolValue(r));
    }
    case BC.EQ: case BC.NE: {
      const r = equal(x, y);
      return r.ok ? ok(boolValue(r.eq === (op === BC.EQ))) : faulted(FAULT_TYPE);
    }
    case BC.IN: case BC.NOT_IN: {
      const r = member(x, y);
      return r.ok ? ok(boolValue(r.in === (op === BC.IN))) : faulted(FAULT_TYPE);
    }
    case BC.CONTAINS: case BC.STARTS_WITH: case BC.ENDS_WITH:
      if (x.t !== T_STRING || y.t !== T_STRING) return faulted(FAULT_TYPE);
      return ok(boolValue(op === BC.CONTAINS ? x.s.includes(y.s) : op === BC.STARTS_WITH ? x.s.startsWith(y.s) : x.s.endsWith(y.s)));
    case BC.SUBSET: case BC.INTERSECTS:
      if (!isSetType(x.t) || !isSetType(y.t) || x.t !== y.t && setLen(x.set) > 0 && setLen(y.set) > 0) return faulted(FAULT_TYPE);
      return ok(boolValue(op === BC.SUBSET ? subset(x.set, y.set) : intersects(x.set, y.set)));
  }
  return faulted(FAULT_TYPE);
}

const RES_TRUE = 0, RES_FALSE = 1, RES_FAULT = 2;

// run executes one constraint's instructions.
function run(pg, code, params, ev, ctx) {
  const v = exec(pg, code, params, ev, ctx);
  if (v === null || v.t !== T_BOOL) return RES_FAULT;
  return v.n !== 0n ? RES_TRUE : RES_FALSE;
}

// exec executes one expression's instructions, a constraint's or the amount's: its
// value, or null when it comes to none.
function exec(pg, code, params, ev, ctx) {
  const st = [];
  for (let pc = 0; pc < code.length; pc++) {
    const inst = code[pc];
    switch (inst.op) {
      case BC.INT: st.push(intValue(pg.ints[inst.a])); break;
      case BC.STR: st.push(strValue(pg.strs[inst.a])); break;
      case BC.TRUE: st.push(boolValue(true)); break;
      case BC.FALSE: st.push(boolValue(false)); break;
      case BC.SET_STR: st.push(val(T_STRSET, 0n, "", pg.sets[inst.a])); break;
      case BC.SET_INT: st.push(val(T_INTSET, 0n, "", pg.sets[inst.a])); break;
      case BC.PARAM: case BC.EVID: case BC.CTX: {
        const v = (inst.op === BC.PARAM ? params : inst.op === BC.EVID ? ev : ctx)[inst.a];
        if (!isValueType(v.t)) return null;
        st.push(v);
        break;
      }
      case BC.JUMP_IF_FALSE: case BC.JUMP_IF_TRUE: {
        const v = st[st.length - 1];
        if (v.t !== T_BOOL) return null;
        if ((v.n !== 0n) === (inst.op === BC.JUMP_IF_TRUE)) { pc = inst.a - 1; continue; }
        st.pop();
        break;
      }
      case BC.CHAIN: {
        const y = st.pop(), x = st.pop();
        const r = apply2(inst.cmp, x, y);
        if (r.f !== FAULT_NONE) return null;
        if (r.v.n === 0n) { st.push(r.v); pc = inst.a - 1; continue; }
        st.push(y);
        break;
      }
      case BC.NEG: case BC.NOT: case BC.LEN: case BC.LOWER: case BC.UPPER: {
        const r = apply1(inst.op, st.pop());
        if (r.f !== FAULT_NONE) return null;
        st.push(r.v);
        break;
      }
      default: {
        const y = st.pop(), x = st.pop();
        const r = apply2(inst.op, x, y);
        if (r.f !== FAULT_NONE) return null;
        st.push(r.v);
      }
    }
  }
  return st.length === 1 ? st[0] : null;
}

// ---- reasons (policy/explain.go) ----

const VALUE_LIMIT = 16;
const isLiteral = e => e.k === "int" || e.k === "str" || e.k === "bool" || e.k === "set";
const typeName = v => isSetType(v.t) && setLen(v.set) === 0 ? "empty set" : typeString(v.t);

function describe(e, v) {
  let s = exprString(e);
  if (exprPrec(e) <= PREC.CMP) s = "(" + s + ")";
  return isLiteral(e) ? s : s + " = " + formatValue(v, VALUE_LIMIT);
}

function phrase(o, got) {
  if (o === OP.NOT_IN) { o = OP.IN; got = !got; }
  return got ? OP_SPELLING[o] : "not " + OP_SPELLING[o];
}

class Explainer {
  constructor(p, params, ev, ctx, attrs, evidence) {
    Object.assign(this, { p, params, ev, ctx, attrs, evidence, missing: [] });
  }

  reason(e) {
    const [v, fault] = this.eval(e);
    let out;
    if (fault !== "") out = fault;
    else if (v.t !== T_BOOL) out = `${exprString(e)} is ${formatValue(v, VALUE_LIMIT)}, not a bool`;
    else if (v.n !== 0n) out = "the constraint could not be decided";
    else out = this.why(e, false);
    // Only a value the evaluation stopped at counts as missing.
    if (fault === "") this.missing = [];
    return out;
  }

  eval(e) {
    switch (e.k) {
      case "int": return [intValue(e.v), ""];
      case "str": return [strValue(e.v), ""];
      case "bool": return [boolValue(e.v), ""];
      case "set": return [val(setOf(e.elem), 0n, "", { strs: e.strs, ints: e.ints }), ""];
      case "ref": return this.ref(e);
      case "ctx": return this.ctxValue(e);
      case "unary": {
        const [v, r] = this.eval(e.x);
        if (r !== "") return [v, r];
        const out = apply1(OP_CODE[e.op], v);
        if (out.f !== FAULT_NONE) return [out.v, this.fault(e, out.f, OP_SPELLING[e.op], [e.x], [v])];
        return [out.v, ""];
      }
      case "bin": {
        const [v, r] = this.eval(e.x);
        if (r !== "") return [v, r];
        if (e.op === OP.AND || e.op === OP.OR) {
          if (v.t !== T_BOOL) return [v, this.fault(e, FAULT_TYPE, OP_SPELLING[e.op], [e.x], [v])];
          if ((v.n !== 0n) === (e.op === OP.OR)) return [v, ""];
          const [w, r2] = this.eval(e.y);
          if (r2 === "" && w.t !== T_BOOL) return [w, this.fault(e, FAULT_TYPE, OP_SPELLING[e.op], [e.y], [w])];
          return [w, r2];
        }
        const [w, r2] = this.eval(e.y);
        if (r2 !== "") return [w, r2];
        const out = apply2(OP_CODE[e.op], v, w);
        if (out.f !== FAULT_NONE) return [out.v, this.fault(e, out.f, OP_SPELLING[e.op], [e.x, e.y], [v, w])];
        return [out.v, ""];
      }
      case "chain": {
        let [v, r] = this.eval(e.xs[0]);
        if (r !== "") return [v, r];
        for (let i = 0; i < e.ops.length; i++) {
          const [w, r2] = this.eval(e.xs[i + 1]);
          if (r2 !== "") return [w, r2];
          const out = apply2(OP_CODE[e.ops[i]], v, w);
          if (out.f !== FAULT_NONE) return [out.v, this.fault(e, out.f, OP_SPELLING[e.ops[i]], e.xs.slice(i, i + 2), [v, w])];
          if (out.v.n === 0n) return [out.v, ""];
          v = w;
        }
        return [boolValue(true), ""];
      }
      case "call": {
        const vs = [];
        for (const a of e.args) {
          const [v, r] = this.eval(a);
          if (r !== "") return [v, r];
          vs.push(v);
        }
        const out = vs.length === 1 ? apply1(e.fn, vs[0]) : apply2(e.fn, vs[0], vs[1]);
        if (out.f !== FAULT_NONE) return [out.v, this.fault(e, out.f, e.name, e.args, vs)];
        return [out.v, ""];
      }
    }
    return [val(T_UNKNOWN), "unknown expression"];
  }

  ref(e) {
    if (!e.evidence) {
      const v = this.params[e.slot];
      const d = this.p.params[e.slot];
      if (v.t === T_ABSENT) {
        return [v, d.optional
          ? `parameters.${e.name} is absent from the intent (an optional parameter: only a constraint marked optional: holds without it)`
          : `parameters.${e.name} is missing from the intent`];
      }
      if (v.t === T_BAD) {
        const a = this.attrs.get(e.name);
        return [v, `parameters.${e.name}: want ${typeString(d.type)}, got ${a && isValueType(a.t) ? typeString(a.t) : "no value"}`];
      }
      return [v, ""];
    }
    const v = this.ev[e.slot];
    if (v.t === T_ABSENT) {
      this.missing = [e.name];
      return [v, `evidence.${e.name} is missing from the evidence`];
    }
    if (v.t === T_BAD) {
      this.missing = [e.name];
      return [v, `evidence.${e.name}: ${convert(this.evidence[e.name], this.p.evidence[e.slot].type).reason}`];
    }
    return [v, ""];
  }

  // ctxValue is Go's explainer.ctx: the value, or why there is none.
  ctxValue(e) {
    const v = this.ctx[e.v];
    if (isValueType(v.t)) return [v, ""];
    if (e.v === CTX.AMOUNT) return [v, "purchase.amount has no value: " + this.amountFault()];
    return [v, "decision.time is not known: the decision was made without a time"];
  }

  // amountFault is why the amount part has no value: what stopped it, or that it is
  // negative.
  amountFault() {
    const a = this.p.amount.x;
    const [v, r] = this.eval(a);
    if (r !== "") return r;
    if (v.t === T_INT && v.n < 0n) return describe(a, v) + " is negative (the amount of a purchase is 0 or more)";
    return describe(a, v) + " could not be computed";
  }

  fault(e, f, what, args, vs) {
    if (f === FAULT_OVERFLOW) {
      if (e.k === "unary") return `${exprString(e)} overflows int64: -(${vs[0].n})`;
      return `${exprString(e)} overflows int64: ${vs[0].n} ${what} ${vs[1].n}`;
    }
    const parts = args.map((a, i) => describe(a, vs[i]) + " (" + typeName(vs[i]) + ")");
    return `${what} cannot be applied to ${parts.join(" and ")}: wrong type`;
  }

  value(e) { return this.eval(e)[0]; }

  why(e, got) {
    switch (e.k) {
      case "unary":
        if (e.op === OP.NOT) return this.why(e.x, !got);
        break;
      case "bin":
        if (e.op === OP.AND || e.op === OP.OR) {
          const left = this.value(e.x).n !== 0n;
          if ((e.op === OP.AND) !== got) return left === got ? this.why(e.x, got) : this.why(e.y, got);
          return this.why(e.x, got) + ", and " + this.why(e.y, got);
        }
        if (opPrec(e.op) === PREC.CMP) return this.link(e.op, e.x, e.y, got);
        break;
      case "chain": {
        const parts = [];
        let v = this.value(e.xs[0]);
        for (let i = 0; i < e.ops.length; i++) {
          const w = this.value(e.xs[i + 1]);
          const out = apply2(OP_CODE[e.ops[i]], v, w);
          if (!got && out.v.n === 0n) return this.link(e.ops[i], e.xs[i], e.xs[i + 1], false);
          parts.push(this.link(e.ops[i], e.xs[i], e.xs[i + 1], true));
          v = w;
        }
        return parts.join(", and ");
      }
      case "bool":
        return `the constraint is the literal ${e.v}`;
      case "call": {
        const args = e.args.filter(a => !isLiteral(a)).map(a => describe(a, this.value(a)));
        let s = `${exprString(e)} is ${got}`;
        if (args.length) s += ", with " + args.join(" and ");
        return s;
      }
    }
    return `${exprString(e)} is ${got}`;
  }

  link(o, a, b, got) {
    return describe(a, this.value(a)) + ", which is " + phrase(o, got) + " " + describe(b, this.value(b));
  }
}

// loadInputs is the values of a policy's parameter and evidence slots.
function loadInputs(p, attrs, evidence) {
  const params = p.params.map(d => {
    const v = attrs.get(d.name);
    if (v === undefined) return val(T_ABSENT);
    return v.t !== d.type ? val(T_BAD) : v;
  });
  const has = Object.prototype.hasOwnProperty;
  const ev = p.evidence.map(f => has.call(evidence, f.name) ? convert(evidence[f.name], f.type).v : val(T_ABSENT));
  return { params, ev };
}

// runAmount is the amount part's value on the slots: an int, or a bad value when it
// has none (a fault, or a negative amount).
function runAmount(p, params, ev) {
  const v = exec(p.pg, p.amount.code, params, ev, []);
  return v !== null && v.t === T_INT && v.n >= 0n ? v : val(T_BAD);
}

// toUnix is a Date's Unix seconds, as Go's Time.Unix: rounded down.
const toUnix = d => BigInt(Math.floor(d.getTime() / 1000));

// int64Of is a total of a context as an int64. Go's are int64 by their type; a value
// out of that range is the caller's mistake (it reads receipts' numbers as int64, as
// decodeAttrs does attrs), not bad input, and is thrown rather than run.
const int64Of = (n, what) => {
  const x = BigInt(n ?? 0);
  if (x < MIN_INT64 || x > MAX_INT64) throw new RangeError(`${what} is out of the int64 range`);
  return x;
};

// evaluate runs every constraint of a decoded policy on attrs (a Map from decodeAttrs)
// and evidence (an object whose numbers are JSONNumber), as Policy.EvaluateIn does: the
// constraints that do not hold, in order, each {index, pretty_expr, reason, missing}.
// context is Go's Context: {spent, purchases, periodSpent, periodPurchases} (BigInts or
// numbers; absent is 0) and time, a Date or null for a decision without a time; left
// out, it is the zero Context, and evaluate is Policy.Evaluate.
export function evaluate(p, attrs, evidence, context = {}) {
  const { params, ev } = loadInputs(p, attrs, evidence);
  const ctx = [];
  if (p.reads) {
    ctx[CTX.SPENT] = intValue(int64Of(context.spent, "spent"));
    ctx[CTX.PURCHASES] = intValue(int64Of(context.purchases, "purchases"));
    ctx[CTX.PERIOD_SPENT] = intValue(int64Of(context.periodSpent, "periodSpent"));
    ctx[CTX.PERIOD_PURCHASES] = intValue(int64Of(context.periodPurchases, "periodPurchases"));
    ctx[CTX.TIME] = context.time ? intValue(toUnix(context.time)) : val(T_ABSENT);
    if (p.reads & 1 << CTX.AMOUNT) ctx[CTX.AMOUNT] = runAmount(p, params, ev);
  }
  const fails = [];
  p.cons.forEach((c, k) => {
    if (c.optional && c.optSlots.some(s => params[s].t === T_ABSENT)) return;
    if (run(p.pg, c.code, params, ev, ctx) === RES_TRUE) return;
    const x = new Explainer(p, params, ev, ctx, attrs, evidence);
    const reason = x.reason(c.x);
    fails.push({ index: k, pretty_expr: c.pretty, reason, missing: x.missing });
  });
  return fails;
}

// amount is Policy.Amount: the amount part on the evidence and attrs. It answers
// {ok: false} for a policy without one, {ok: true, amount} (a BigInt), or {ok: true,
// error, missing} with the message of Go's AmountError and the evidence it names.
export function amount(p, attrs, evidence) {
  if (!p.amount) return { ok: false };
  const { params, ev } = loadInputs(p, attrs, evidence);
  const v = runAmount(p, params, ev);
  if (v.t === T_INT) return { ok: true, amount: v.n };
  const x = new Explainer(p, params, ev, [], attrs, evidence);
  const reason = x.amountFault();
  return { ok: true, error: `policy: amount ${p.amount.pretty}: ${reason}`, missing: x.missing };
}

// periodStart is Policy.PeriodStart: the start (UTC) of the period of p that holds the
// Date t, midnight of its day, of the Monday of its ISO week, or of the first of its
// month; null when the policy has no period.
export function periodStart(p, t) {
  // Not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  const utc = (y, m, d) => { const x = new Date(0); x.setUTCFullYear(y, m, d); return x; };
  const [y, m, d] = [t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate()];
  switch (p.period) {
    case "day": return utc(y, m, d);
    case "week": return utc(y, m, d - (t.getUTCDay() + 6) % 7);
    case "month": return utc(y, m, 1);
  }
  return null;
}

// classify is intentd.ClassifyFailures: "evidence" when every failure came of missing
// or ill-typed evidence, else "constraints"; and the fields named, sorted, once each.
export function classify(failures) {
  if (!failures.length) return { kind: "", missing: [] };
  let kind = "evidence";
  const missing = [];
  for (const f of failures) {
    if (!f.missing.length) kind = "constraints";
    missing.push(...f.missing);
  }
  return { kind, missing: sortedDistinct(missing, cmpStr) };
}

// typeNames is for pages that show a decoded policy's declarations.
export { typeString };
