// Reading the canonical text of a policy, which the server prints in one fixed layout
// (docs/policy-language.md): blocks "parameters {", "evidence {" and "requires {", one
// declaration or one constraint per line.

// parsePolicy returns the policy's name, extractor, the parameter its agents part names
// ("" without one), the expression of its amount part and its period ("" without
// them), parameters and evidence fields ({name, type, optional}), and its constraints
// with the line each is on.
export function parsePolicy(text) {
  const lines = text.replace(/\n$/, "").split("\n");
  const p = { name: "", extractor: "", agents: "", amount: "", period: "", parameters: [], evidence: null, constraints: [], lines };
  let block = "";
  lines.forEach((line, n) => {
    const t = line.trim();
    if (block === "") {
      let m;
      if ((m = /^name (\S+)$/.exec(t))) p.name = m[1];
      else if ((m = /^extractor (".*")$/.exec(t))) p.extractor = JSON.parse(m[1]);
      else if ((m = /^agents parameters\.(\S+)$/.exec(t))) p.agents = m[1];
      else if ((m = /^amount (.+)$/.exec(t))) p.amount = m[1];
      else if ((m = /^period (day|week|month)$/.exec(t))) p.period = m[1];
      else if ((m = /^(parameters|intent|evidence|requires) \{$/.exec(t))) {
        block = m[1] === "intent" ? "parameters" : m[1];
        if (block === "evidence") p.evidence = [];
      }
      return;
    }
    if (t === "}") { block = ""; return; }
    if (block === "requires") {
      const optional = t.startsWith("optional: ");
      p.constraints.push({ index: p.constraints.length, line: n, optional, expr: t.replace(/^optional: /, "").replace(/;$/, "") });
      return;
    }
    const m = /^([A-Za-z_][A-Za-z0-9_]*): (optional )?(.+)$/.exec(t);
    if (m) p[block].push({ name: m[1], type: m[3], optional: !!m[2] });
  });
  return p;
}

// evidenceRead is the evidence a policy reads: its evidence block when it has one, or
// else (the older dialect) the fields its constraints name, whose types the server
// infers.
export function evidenceRead(p) {
  if (p.evidence) return { declared: true, fields: p.evidence };
  const names = new Set();
  for (const c of p.constraints) {
    for (const m of c.expr.matchAll(/\bevidence\.([A-Za-z_][A-Za-z0-9_]*)/g)) names.add(m[1]);
  }
  return { declared: false, fields: [...names].sort().map(name => ({ name, type: "inferred", optional: false })) };
}
