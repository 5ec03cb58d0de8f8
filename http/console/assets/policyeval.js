// The policy machine's evaluator (see policyvm.js): evidence and attrs read as Go reads
// them (policy/evidence.go, policy/value.go), the machine (policy/vm.go), the reasons
// (policy/explain.go), and a mandate's amount and period (policy/mandate.go).

import { BC, boolValue, cmpStr, CTX, exprPrec, exprString, formatValue, intValue, isSetType, isValueType, mapCase,
  MAX_ATTR_FIELDS, MAX_INT64, MAX_PARAMETERS, MAX_SET_ELEMENTS, MIN_INT64, newIntSet, newStrSet, OP, OP_CODE,
  OP_SPELLING, opPrec, PREC, setLen, setOf, sortedDistinct, strValue, T_ABSENT, T_ANY, T_BAD, T_BOOL, T_INT,
  T_INTSET, T_STRING, T_STRSET, T_UNKNOWN, typeString, val, wellFormed } from "./policycore.js";

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

// attrsJCS is the JCS text of attrs (a Map from decodeAttrs) as Go writes them
// (Attrs.MarshalJSON, then crypto.Canonicalize): what proof.Verify compares a mandate's
// attrs and its purchase's by. Sets are sorted and each element once, as decoded; an
// int is written as JCS writes a number, through a double, as Go's canonical form is.
export function attrsJCS(attrs) {
  const str = s => JSON.stringify(s), num = n => String(Number(n));
  const value = v => {
    switch (v.t) {
      case T_INT: return `{"Int":${num(v.n)}}`;
      case T_STRING: return `{"String":${str(v.s)}}`;
      case T_BOOL: return `{"Bool":${v.n !== 0n}}`;
      case T_STRSET: return `{"Set":{"String":[${v.set.strs.map(str).join(",")}]}}`;
      case T_INTSET: return `{"Set":{"Int":[${v.set.ints.map(num).join(",")}]}}`;
    }
    return "null";
  };
  // JCS orders members by their UTF-16 code units, as sort does.
  const names = [...attrs.keys()].sort();
  return `{"fields":{${names.map(n => str(n) + ":" + value(attrs.get(n))).join(",")}}}`;
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
