// The policy machine's common ground (see policyvm.js): the types, opcodes and operators
// of the bytecode, strings compared and cased as Go does, values and how a reason writes
// them, and the canonical text of an expression. policydecode.js reads bytecode with it,
// and policyeval.js runs what it read.

// Types, numbered as in bytecode.
export const T_INT = 1, T_STRING = 2, T_BOOL = 3, T_STRSET = 4, T_INTSET = 5, T_ANY = 6;
export const T_UNKNOWN = 0, T_ABSENT = 7, T_BAD = 8;

export const TYPE_NAMES = { [T_INT]: "int", [T_STRING]: "string", [T_BOOL]: "bool", [T_STRSET]: "set<string>", [T_INTSET]: "set<int>", [T_ANY]: "any" };
export const typeString = t => TYPE_NAMES[t] || `Type(${t})`;
export const isSetType = t => t === T_STRSET || t === T_INTSET;
export const isValueType = t => t >= T_INT && t <= T_INTSET;
export const elemOf = t => t === T_STRSET ? T_STRING : t === T_INTSET ? T_INT : T_UNKNOWN;
export const setOf = t => t === T_STRING ? T_STRSET : t === T_INT ? T_INTSET : T_UNKNOWN;

// Limits of the language (policy/types.go).
export const MAX_SOURCE_BYTES = 64 << 10, MAX_CONSTRAINTS = 256, MAX_PARAMETERS = 128, MAX_EVIDENCE = 256, MAX_DEPTH = 64;
export const MAX_ATTR_FIELDS = 8 * MAX_PARAMETERS;
export const MAX_STRING_BYTES = 4 << 10, MAX_SET_ELEMENTS = 1024, MAX_EXTRACTOR_NAME = 64, MAX_ERRORS = 10;

export const MIN_INT64 = -(1n << 63n), MAX_INT64 = (1n << 63n) - 1n;

// Bits of the flags byte: an evidence block; an agents part, whose parameter slot
// follows the parameters; an amount part, whose code follows the evidence table; a
// period part, whose byte follows the amount; and constraints that read the decision's
// context (the CTX instruction), which has no bytes of its own.
export const FLAG_EVIDENCE = 1, FLAG_AGENTS = 2, FLAG_AMOUNT = 4, FLAG_PERIOD = 8, FLAG_CONTEXT = 16;
export const KNOWN_FLAGS = FLAG_EVIDENCE | FLAG_AGENTS | FLAG_AMOUNT | FLAG_PERIOD | FLAG_CONTEXT;

// Values of the decision's context, numbered as the operand of CTX (policy/mandate.go).
export const CTX = { SPENT: 0, PURCHASES: 1, PERIOD_SPENT: 2, PERIOD_PURCHASES: 3, AMOUNT: 4, TIME: 5 };
export const CTX_NAMES = ["mandate.spent", "mandate.purchases", "mandate.period_spent", "mandate.period_purchases", "purchase.amount", "decision.time"];
export const NUM_CTX = CTX_NAMES.length;
export const isMandateCtx = v => v <= CTX.PERIOD_PURCHASES;
export const inPeriodCtx = v => v === CTX.PERIOD_SPENT || v === CTX.PERIOD_PURCHASES;
// Periods, numbered as the period byte.
export const PERIOD_NAMES = ["", "day", "week", "month"];

// Opcodes.
export const BC = {
  INT: 0x01, STR: 0x02, TRUE: 0x03, FALSE: 0x04, SET_STR: 0x05, SET_INT: 0x06, PARAM: 0x07, EVID: 0x08, CTX: 0x09,
  NEG: 0x10, NOT: 0x11, ADD: 0x12, SUB: 0x13, MUL: 0x14,
  EQ: 0x20, NE: 0x21, LT: 0x22, LE: 0x23, GT: 0x24, GE: 0x25, IN: 0x26, NOT_IN: 0x27, CHAIN: 0x28,
  JUMP_IF_FALSE: 0x30, JUMP_IF_TRUE: 0x31,
  LEN: 0x40, LOWER: 0x41, UPPER: 0x42, CONTAINS: 0x43, STARTS_WITH: 0x44, ENDS_WITH: 0x45, SUBSET: 0x46, INTERSECTS: 0x47,
};

// Operators of the tree, in the order of Go's op enum: the checker compares them
// (an op at or after OP.LT in a comparison is an ordering).
export const OP = { OR: 1, AND: 2, NOT: 3, NEG: 4, EQ: 5, NE: 6, LT: 7, LE: 8, GT: 9, GE: 10, IN: 11, NOT_IN: 12, ADD: 13, SUB: 14, MUL: 15 };
export const OP_SPELLING = ["", "or", "and", "not", "-", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "+", "-", "*"];
export const OP_CODE = [0, BC.JUMP_IF_TRUE, BC.JUMP_IF_FALSE, BC.NOT, BC.NEG, BC.EQ, BC.NE, BC.LT, BC.LE, BC.GT, BC.GE, BC.IN, BC.NOT_IN, BC.ADD, BC.SUB, BC.MUL];
export const PREC = { LOWEST: 0, OR: 1, AND: 2, NOT: 3, CMP: 4, ADD: 5, MUL: 6, UNARY: 7, PRIMARY: 8 };
export function opPrec(o) {
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
export const cmpOp = c => OP.EQ + (c - BC.EQ); // EQ..GE are in the same order in both
export function binOp(c) {
  switch (c) {
    case BC.ADD: return OP.ADD;
    case BC.SUB: return OP.SUB;
    case BC.MUL: return OP.MUL;
    case BC.IN: return OP.IN;
  }
  return OP.NOT_IN;
}

// Functions, by opcode.
export const FN_NAMES = { [BC.LEN]: "len", [BC.LOWER]: "lower", [BC.UPPER]: "upper", [BC.CONTAINS]: "contains", [BC.STARTS_WITH]: "starts_with",
  [BC.ENDS_WITH]: "ends_with", [BC.SUBSET]: "subset", [BC.INTERSECTS]: "intersects" };
export const FN_LIST = "len, lower, upper, contains, starts_with, ends_with, subset, intersects";
export const arity = f => f === BC.LEN || f === BC.LOWER || f === BC.UPPER ? 1 : 2;

// ---- strings as Go sees them ----

export const encoder = new TextEncoder();
// ignoreBOM: a leading U+FEFF is part of a Go string, not a mark to drop.
export const strictUTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
export const looseUTF8 = new TextDecoder("utf-8", { ignoreBOM: true });
export const utf8Len = s => encoder.encode(s).length;

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
export const cmpBig = (a, b) => a < b ? -1 : a > b ? 1 : 0;

export function sortedDistinct(xs, cmp) {
  const s = [...xs].sort(cmp);
  return s.filter((x, i) => i === 0 || cmp(s[i - 1], x) !== 0);
}

// Go's strings decoded from JSON never hold a lone surrogate: it becomes U+FFFD.
export const wellFormed = s => typeof s.toWellFormed === "function" ? s.toWellFormed() : s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");

// Code points whose mapping on its own in JavaScript differs from Go's unicode.ToLower
// and ToUpper, found by comparing the two over every code point (the differential test
// does it again). Two causes: JavaScript applies the full mappings of SpecialCasing.txt
// (U+0130 to "i" and a combining dot, U+1F80 to two letters) where Go applies the simple
// ones; and the browser's Unicode tables may be newer than Go's, which leave the letters
// they do not know as they are (docs/bytecode.md: Go's tables decide).
export const caseTable = (pairs, same) => {
  const m = new Map(pairs);
  for (const [lo, hi] of same) for (let c = lo; c <= hi; c++) m.set(c, c);
  return m;
};
export const LOWER_EXCEPTIONS = caseTable([[0x130, 0x69]], [[0x1c89, 0x1c89], [0xa7cb, 0xa7cc], [0xa7ce, 0xa7ce], [0xa7d2, 0xa7d2],
  [0xa7d4, 0xa7d4], [0xa7da, 0xa7da], [0xa7dc, 0xa7dc], [0x10d50, 0x10d65], [0x16ea0, 0x16eb8]]);
export const UPPER_EXCEPTIONS = caseTable([
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

export const val = (t, n = 0n, s = "", set = null) => ({ t, n, s, set });
export const intValue = n => val(T_INT, n);
export const strValue = s => val(T_STRING, 0n, s);
export const boolValue = b => val(T_BOOL, b ? 1n : 0n);
export const setLen = set => set.strs.length + set.ints.length;
export const newStrSet = xs => ({ strs: sortedDistinct(xs, cmpStr), ints: [] });
export const newIntSet = xs => ({ strs: [], ints: sortedDistinct(xs, cmpBig) });

// formatValue writes v for a reason; limit > 0 cuts long sets and strings.
export function formatValue(v, limit) {
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

// ---- printing ----

export function exprPrec(e) {
  switch (e.k) {
    case "unary": case "bin": return opPrec(e.op);
    case "chain": return PREC.CMP;
    case "int": return e.v < 0n ? PREC.UNARY : PREC.PRIMARY;
  }
  return PREC.PRIMARY;
}

export function printExpr(e, prec) {
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

export function walk(e, f) {
  f(e);
  switch (e.k) {
    case "unary": walk(e.x, f); break;
    case "bin": walk(e.x, f); walk(e.y, f); break;
    case "chain": for (const x of e.xs) walk(x, f); break;
    case "call": for (const x of e.args) walk(x, f); break;
  }
}
