// The policy machine's decoder (see policyvm.js): bytecode read with the Go decoder's
// checks (policy/bytecode.go), the tree type-checked as the compiler's checker does
// (policy/checker.go), and written again to compare with what was read
// (policy/compiler.go).

import { arity, BC, binOp, cmpOp, cmpStr, CTX, CTX_NAMES, elemOf, encoder, exprString, FLAG_AGENTS, FLAG_AMOUNT,
  FLAG_CONTEXT, FLAG_EVIDENCE, FLAG_PERIOD, FN_NAMES, goQuote, inPeriodCtx, isMandateCtx, isSetType, isValueType,
  KNOWN_FLAGS, looseUTF8, MAX_CONSTRAINTS, MAX_DEPTH, MAX_ERRORS, MAX_EVIDENCE, MAX_EXTRACTOR_NAME, MAX_PARAMETERS,
  MAX_SET_ELEMENTS, MAX_SOURCE_BYTES, MAX_STRING_BYTES, MIN_INT64, newIntSet, newStrSet, NUM_CTX, OP, OP_CODE,
  OP_SPELLING, opPrec, PERIOD_NAMES, PREC, quote, setOf, strictUTF8, T_ANY, T_BOOL, T_INT, T_STRING, T_STRSET,
  T_UNKNOWN, typeString, utf8Len, walk } from "./policycore.js";

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

const concrete = isValueType;

// Checker is Go's checker (policy/checker.go) for a decoded tree: it resolves slots,
// types every expression, and infers the evidence of the older dialect. A decoded tree
// has no positions, so every message is the bare message, in the order found.
class Checker {
  constructor(f) {
    Object.assign(this, { f, errs: [], report: true, infer: false, evTypes: null, changed: false, inAmount: false });
    this.P = this.decls(f.params, "parameters", MAX_PARAMETERS, true);
    this.E = { out: [], byName: new Map(), idx: new Map() };
  }

  add(msg) { this.errs.push(msg); }
  errorf(msg) { if (this.report) this.add(msg); }

  decls(ds, block, limit, params) {
    const byName = new Map();
    ds.forEach((d, i) => {
      if (i === limit) this.add(`more than ${limit} ${block} fields, the limit`);
      if (byName.has(d.name)) { this.add(`field ${goQuote(d.name)} declared twice in ${block} (first at 0:0)`); return; }
      if (!isValueType(d.typ)) this.add(`field ${goQuote(d.name)} has no valid type`);
      if (d.optional && !params) this.add("optional is only allowed in parameters");
      if (!isIdent(d.name)) this.add(`field name ${goQuote(d.name)} is not an identifier`);
      byName.set(d.name, d);
    });
    const out = [];
    const idx = new Map();
    for (const d of sortDecls(ds)) if (byName.get(d.name) === d) { idx.set(d.name, out.length); out.push(d); }
    return { out, byName, idx };
  }

  // agents is Go's checker.agents.
  agents() {
    const a = this.f.agents, d = this.P.byName.get(a.name);
    if (!d) {
      this.add(`agents names an undeclared parameter ${goQuote(a.name)} (${declared(this.f.params, "the policy declares no parameters")})`);
      return;
    }
    a.slot = this.P.idx.get(a.name);
    if (d.typ !== T_STRSET) {
      // An invalid type decls has reported already.
      if (isValueType(d.typ)) this.add(`agents needs a set<string> parameter (the agents' Base58 public keys): parameters.${a.name} is ${typeString(d.typ)}`);
    } else if (d.optional) {
      this.add(`agents needs a parameter that is not optional: parameters.${a.name} is optional, and an intent without it would not say whom it delegates to`);
    }
  }

  show(e) {
    let s = exprString(e);
    const b = encoder.encode(s);
    if (b.length > 60) s = looseUTF8.decode(b.subarray(0, 57)) + "...";
    return s;
  }

  need(e, want, what) {
    const t = this.expr(e, want);
    if (concrete(t) && t !== want) this.errorf(`${what} needs ${article(want)}: ${this.show(e)} is ${typeString(t)}`);
  }

  ref(e, want) {
    const f = this.f;
    if (!e.evidence) {
      const d = this.P.byName.get(e.name);
      if (!d) { this.errorf(`undeclared parameter ${goQuote(e.name)} (${declared(f.params, "the policy declares no parameters")})`); return T_UNKNOWN; }
      e.slot = this.P.idx.get(e.name);
      if (this.inAmount && d.optional) this.errorf(`the amount cannot read an optional parameter: parameters.${e.name} is optional, and the purchases of an intent without it would have no amount`);
      return d.typ;
    }
    if (!this.infer) {
      const d = this.E.byName.get(e.name);
      if (!d) { this.errorf(`undeclared evidence field ${goQuote(e.name)} (${declared(f.evidence, "the evidence block declares none")})`); return T_UNKNOWN; }
      e.slot = this.E.idx.get(e.name);
      return d.typ;
    }
    let t = this.evTypes.get(e.name);
    if (t === T_UNKNOWN && concrete(want) && !this.report) {
      t = want;
      this.evTypes.set(e.name, t);
      this.changed = true;
    }
    if (this.report) e.slot = this.E.idx.get(e.name);
    return t;
  }

  // ctxRef is Go's checker.ctxRef: where a value of the decision's context may be read.
  ctxRef(e) {
    const name = CTX_NAMES[e.v], f = this.f;
    if (this.inAmount) this.errorf(`the amount may read only evidence and parameters, not ${name}: it is the price of one purchase, whatever the mandate's totals or the time`);
    else if (e.v === CTX.AMOUNT && !f.amount) this.errorf("purchase.amount needs an amount part (amount EXPR): it is the value of that expression");
    else if (isMandateCtx(e.v) && !f.amount) this.errorf(`${name} needs an amount part (amount EXPR): the mandate's totals are sums of the amounts of its purchases`);
    else if (inPeriodCtx(e.v) && !f.period) this.errorf(`${name} needs a period part (period day, week or month): the calendar period its total counts in`);
  }

  checkString(s) {
    if (utf8Len(s) > MAX_STRING_BYTES) this.errorf(`string literal is ${utf8Len(s)} bytes, over the limit of ${MAX_STRING_BYTES} bytes (4 KiB)`);
  }

  inOp(e) {
    let tx = this.expr(e.x, T_UNKNOWN);
    const ty = this.expr(e.y, setOf(tx));
    if (!this.report && tx === T_UNKNOWN && isSetType(ty)) tx = this.expr(e.x, elemOf(ty));
    const o = OP_SPELLING[e.op];
    if (concrete(ty) && !isSetType(ty)) this.errorf(`operator ${o} needs a set on its right: ${this.show(e.y)} is ${typeString(ty)}`);
    else if (isSetType(ty) && concrete(tx) && tx !== elemOf(ty)) this.errorf(`operator ${o} needs ${article(elemOf(ty))} on its left for a ${typeString(ty)}: ${this.show(e.x)} is ${typeString(tx)}`);
    else if (isSetType(tx) || tx === T_BOOL) this.errorf(`operator ${o} needs a string or an int on its left: ${this.show(e.x)} is ${typeString(tx)}`);
  }

  compare(ops, xs) {
    const ts = new Array(xs.length).fill(T_UNKNOWN);
    const ordering = i => i > 0 && ops[i - 1] >= OP.LT || i < ops.length && ops[i] >= OP.LT;
    xs.forEach((x, i) => {
      let want = T_UNKNOWN;
      if (ordering(i)) want = T_INT;
      else if (i > 0 && concrete(ts[i - 1])) want = ts[i - 1];
      ts[i] = this.expr(x, want);
    });
    if (!this.report) {
      for (let i = xs.length - 2; i >= 0; i--) if (ts[i] === T_UNKNOWN && concrete(ts[i + 1])) ts[i] = this.expr(xs[i], ts[i + 1]);
      return;
    }
    ops.forEach((o, i) => {
      const [x, y, tx, ty] = [xs[i], xs[i + 1], ts[i], ts[i + 1]];
      if (o >= OP.LT) {
        for (const [e, t] of [[x, tx], [y, ty]]) {
          if (concrete(t) && t !== T_INT) this.errorf(`operator ${OP_SPELLING[o]} needs int operands: ${this.show(e)} is ${typeString(t)}`);
        }
        return;
      }
      if (concrete(tx) && concrete(ty) && tx !== ty) this.errorf(`cannot compare ${this.show(x)} (${typeString(tx)}) with ${this.show(y)} (${typeString(ty)}): the types differ`);
    });
  }

  callOp(e) {
    const result = e.fn === BC.LEN ? T_INT : e.fn === BC.LOWER || e.fn === BC.UPPER ? T_STRING : T_BOOL;
    switch (e.fn) {
      case BC.LEN: {
        const t = this.expr(e.args[0], T_UNKNOWN);
        if (concrete(t) && t !== T_STRING && !isSetType(t)) this.errorf(`len needs a string or a set: ${this.show(e.args[0])} is ${typeString(t)}`);
        break;
      }
      case BC.LOWER: case BC.UPPER:
        this.need(e.args[0], T_STRING, e.name); break;
      case BC.CONTAINS: case BC.STARTS_WITH: case BC.ENDS_WITH:
        this.need(e.args[0], T_STRING, e.name); this.need(e.args[1], T_STRING, e.name); break;
      default: {
        const [a, b] = e.args;
        let ta = this.expr(a, T_UNKNOWN);
        const tb = this.expr(b, isSetType(ta) ? ta : T_UNKNOWN);
        if (!this.report && ta === T_UNKNOWN && isSetType(tb)) ta = this.expr(a, tb);
        for (const [x, t] of [[a, ta], [b, tb]]) {
          if (concrete(t) && !isSetType(t)) this.errorf(`${e.name} needs two sets: ${this.show(x)} is ${typeString(t)}`);
        }
        if (isSetType(ta) && isSetType(tb) && ta !== tb) this.errorf(`${e.name} needs two sets of one type: ${this.show(a)} is ${typeString(ta)}, ${this.show(b)} is ${typeString(tb)}`);
      }
    }
    return result;
  }

  expr(e, want) {
    switch (e.k) {
      case "int":
        if (e.v < 0n && e.v !== MIN_INT64) this.errorf(`negative integer literal ${e.v}: a negative number is the negation of a literal`);
        return T_INT;
      case "str": this.checkString(e.v); return T_STRING;
      case "bool": return T_BOOL;
      case "set": {
        const len = e.strs.length + e.ints.length;
        if (len === 0 || len > MAX_SET_ELEMENTS) this.errorf(`set literal has ${len} elements (want 1 to ${MAX_SET_ELEMENTS})`);
        for (const s of e.strs) this.checkString(s);
        return setOf(e.elem);
      }
      case "ref": return this.ref(e, want);
      case "ctx": this.ctxRef(e); return T_INT;
      case "unary":
        if (e.op === OP.NEG) { this.need(e.x, T_INT, "operator -"); return T_INT; }
        this.need(e.x, T_BOOL, "operator not");
        return T_BOOL;
      case "bin":
        switch (e.op) {
          case OP.AND: case OP.OR:
            this.need(e.x, T_BOOL, "operator " + OP_SPELLING[e.op]); this.need(e.y, T_BOOL, "operator " + OP_SPELLING[e.op]); return T_BOOL;
          case OP.ADD: case OP.SUB: case OP.MUL:
            this.need(e.x, T_INT, "operator " + OP_SPELLING[e.op]); this.need(e.y, T_INT, "operator " + OP_SPELLING[e.op]); return T_INT;
          case OP.IN: case OP.NOT_IN:
            this.inOp(e); return T_BOOL;
        }
        this.compare([e.op], [e.x, e.y]);
        return T_BOOL;
      case "chain": this.compare(e.ops, e.xs); return T_BOOL;
      case "call": return this.callOp(e);
    }
    return T_UNKNOWN;
  }

  // inferEvidence is Go's checker.inferEvidence: for the older dialect, the evidence
  // fields and their types come from their uses in the constraints and the amount.
  inferEvidence(deep, deepAmount) {
    const f = this.f;
    this.infer = true;
    this.evTypes = new Map();
    const order = [];
    const see = e => {
      if (e.k === "ref" && e.evidence && !this.evTypes.has(e.name)) { this.evTypes.set(e.name, T_UNKNOWN); order.push(e.name); }
    };
    f.constraints.forEach((k, i) => { if (!deep[i]) walk(k.x, see); });
    const amount = f.amount && !deepAmount;
    if (amount) walk(f.amount, see);
    if (order.length > MAX_EVIDENCE) this.add(`more than ${MAX_EVIDENCE} evidence fields, the limit`);
    this.report = false;
    for (let pass = 0; pass <= order.length; pass++) {
      this.changed = false;
      f.constraints.forEach((k, i) => { if (!deep[i]) this.expr(k.x, T_BOOL); });
      if (amount) this.expr(f.amount, T_INT);
      if (!this.changed) break;
    }
    this.report = true;
    const ds = order.map(name => {
      let t = this.evTypes.get(name);
      if (t === T_UNKNOWN) { t = T_ANY; this.evTypes.set(name, t); }
      return { name, typ: t, optional: false };
    });
    this.E = { out: sortDecls(ds), byName: new Map(), idx: new Map() };
    this.E.out.forEach((d, i) => this.E.idx.set(d.name, i));
  }

  // amount is Go's checker.amount: an int, of evidence and parameters only.
  amount() {
    this.inAmount = true;
    const t = this.expr(this.f.amount, T_INT);
    this.inAmount = false;
    if (concrete(t) && t !== T_INT) this.add(`the amount must be an int (the amount of one purchase): ${this.show(this.f.amount)} is ${typeString(t)}`);
  }
}

// check type-checks a decoded tree as the compiler's checker does, resolving slots, and
// answers the sorted declarations, or the error text.
function check(f) {
  const c = new Checker(f);
  if (f.agents) c.agents();
  if (f.evidenceDeclared) c.E = c.decls(f.evidence, "evidence", MAX_EVIDENCE, false);
  const n = f.constraints.length;
  if (n === 0) c.add("requires block is empty (want at least one constraint)");
  else if (n > MAX_CONSTRAINTS) c.add(`more than ${MAX_CONSTRAINTS} constraints, the limit`);
  const tooDeep = x => {
    const d = depthOf(x);
    if (d > MAX_DEPTH) { c.add(`expression nests ${d} levels deep, over the limit of ${MAX_DEPTH}`); return true; }
    return false;
  };
  const deep = f.constraints.map(k => tooDeep(k.x));
  const deepAmount = f.amount ? tooDeep(f.amount) : false;
  if (!f.evidenceDeclared) c.inferEvidence(deep, deepAmount);
  if (f.amount && !deepAmount) c.amount();
  if (f.period && !f.amount) c.add("period needs an amount part (amount EXPR): the period totals are sums of the amounts of purchases");
  f.constraints.forEach((k, i) => {
    if (deep[i]) return;
    const t = c.expr(k.x, T_BOOL);
    if (t !== T_BOOL && t !== T_UNKNOWN) c.add(`a constraint must be bool: ${c.show(k.x)} is ${typeString(t)}`);
  });
  const errs = c.errs;
  if (errs.length) {
    const list = errs.length > MAX_ERRORS ? [...errs.slice(0, MAX_ERRORS), `too many errors (${errs.length - MAX_ERRORS} more)`] : errs;
    return { err: list.join("\n") };
  }
  return { params: c.P.out, evidence: c.E.out };
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
