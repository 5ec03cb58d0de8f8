// Verifies webhook deliveries with the Standard Webhooks library for JavaScript
// (npm standardwebhooks), for TestWebhookOfficialVerifier. It reads a JSON array on
// stdin, each element {"secret", "headers", "body"} with the body in Base64 as it came,
// and prints one JSON line per element: {"ok": true} when
// new Webhook(secret).verify(body, headers) accepts it, else {"ok": false, "error"}.
"use strict";
const { Webhook } = require("standardwebhooks");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  for (const d of JSON.parse(input)) {
    const body = Buffer.from(d.body, "base64");
    try {
      new Webhook(d.secret).verify(body, d.headers);
      console.log(JSON.stringify({ ok: true }));
    } catch (e) {
      console.log(JSON.stringify({ ok: false, error: String(e && e.message || e) }));
    }
  }
});
