// The witnesses of the transparency log, as the Proof page shows them: the cosignature
// lines of a bundle's checkpoint (C2SP tlog-cosignature), each checked here with
// WebCrypto under the witness keys the server lists in GET /log/witnesses, and the
// witnesses' standing alarms. Whether the cosigners meet a quorum is a reader's own
// policy to say: `intentctl verify --log-policy` checks it; the page shows the
// server's word beside what it checked.

import { call } from "./api.js";
import { base64Decode, ed25519Verify, utf8 } from "./codec.js";
import { h } from "./dom.js";

// witnesses answers GET /log/witnesses, or null when the server's log has none.
export async function witnesses() {
  try {
    return await (await call("/log/witnesses")).json();
  } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
}

// cosignatures reads the signature lines of a signed checkpoint that follow its first
// (the log's own), and checks each under the witness key (a cosignature/v1 verifier
// key, NAME+HASH+BASE64(0x04 || key)) whose name it carries, when one is listed. It
// answers [{name, witness, verified, time}], witness the policy's name of the key.
export async function cosignatures(checkpoint, list) {
  const cut = checkpoint.indexOf("\n\n");
  if (cut < 0) return [];
  const text = checkpoint.slice(0, cut + 1);
  const lines = checkpoint.slice(cut + 2).split("\n").filter(l => l.startsWith("— ")).slice(1);
  const keys = (list?.witnesses || []).map(w => ({ name: w.name, vkey: w.key }));
  const out = [];
  for (const line of lines) {
    const [name, b64] = line.slice(2).split(" ");
    const entry = { name, witness: "", verified: false, time: null };
    out.push(entry);
    let sig;
    try { sig = base64Decode(b64 || ""); } catch { continue; }
    if (sig.length !== 4 + 8 + 64) continue;
    for (const k of keys) {
      // The key's Base64 may hold "+" too: only the first two separate.
      const vkey = k.vkey || "", i = vkey.indexOf("+"), j = vkey.indexOf("+", i + 1);
      if (i < 0 || j < 0) continue;
      const kname = vkey.slice(0, i), khash = vkey.slice(i + 1, j), k64 = vkey.slice(j + 1);
      if (kname !== name || !k64) continue;
      let key;
      try { key = base64Decode(k64); } catch { continue; }
      if (key.length !== 33 || key[0] !== 4) continue;
      const hash = Array.from(sig.slice(0, 4), b => b.toString(16).padStart(2, "0")).join("");
      if (hash !== khash) continue;
      const t = new DataView(sig.buffer, sig.byteOffset + 4, 8).getBigUint64(0);
      const msg = utf8(`cosignature/v1\ntime ${t}\n${text}`);
      if (await ed25519Verify(key.slice(1), sig.slice(12), msg)) {
        Object.assign(entry, { witness: k.name, verified: true, time: new Date(Number(t) * 1000).toISOString() });
      }
      break;
    }
  }
  return out;
}

// witnessRows are the Proof page's lines for a bundle's log checkpoint: its
// cosignatures and the server's word on the quorum.
export function witnessRows(cosigs, word) {
  const rows = [];
  const said = word ? (word.quorum_met ? "the server says its witnesses' quorum is met" : word.message || "the server says its witnesses' quorum is not met") : "";
  const items = cosigs.map(c => h("li", { "data-witness": c.witness || c.name, "data-verified": String(c.verified) },
    h("span", { class: "mono" }, c.name), c.verified ? ` (${c.witness}): cosignature verified here, made ${c.time}` : ": not checked here (no key for it in GET /log/witnesses), or it does not verify"));
  rows.push(h("dt", {}, "witnesses"), h("dd", { id: "proof-witnesses" },
    cosigs.length ? `cosigned by ${cosigs.length} witness(es); ` : "no witness cosigned this checkpoint; ", said,
    items.length ? h("ul", {}, items) : ""));
  return rows;
}

// alarms are the witnesses' standing alarms and failures, as GET /readyz lists them.
export function alarms(list) {
  const bad = (list?.witnesses || []).filter(w => w.alarm || w.error);
  if (!bad.length && !list?.uncosigned_leaves) return null;
  return h("section", { class: "card", id: "witness-alarms", role: "status" },
    h("h2", {}, "Witnesses"),
    h("ul", {}, bad.map(w => h("li", { class: w.alarm ? "fail" : "", "data-witness": w.name },
      h("strong", {}, w.name), w.alarm ? ` ALARM ${w.alarm}` : ` unreachable: ${w.error}`))),
    list.uncosigned_leaves ? h("p", { class: "muted" }, `${list.uncosigned_leaves} leaves are not yet covered by a checkpoint that meets the witnesses' quorum.`) : "");
}
