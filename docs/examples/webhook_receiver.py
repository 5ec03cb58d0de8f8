"""A webhook receiver that verifies intentd's deliveries (Standard Webhooks, v1).

Run: WEBHOOK_SECRET=whsec_... python3 docs/examples/webhook_receiver.py PORT
It says when it listens, prints one line per verified event, and answers 401 to
anything else.
"""
import base64, hashlib, hmac, http.server, json, os, sys, time

KEY = base64.b64decode(os.environ["WEBHOOK_SECRET"].removeprefix("whsec_"))
seen = set()  # webhook-ids taken: a repeat is acknowledged and not acted on twice


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        msg_id, ts = self.headers["webhook-id"], self.headers["webhook-timestamp"]
        signed = f"{msg_id}.{ts}.".encode() + body
        want = base64.b64encode(hmac.new(KEY, signed, hashlib.sha256).digest()).decode()
        sigs = [s.removeprefix("v1,") for s in self.headers["webhook-signature"].split() if s.startswith("v1,")]
        fresh = abs(time.time() - int(ts)) < 300
        if not fresh or not any(hmac.compare_digest(s, want) for s in sigs):
            self.send_response(401)
            self.end_headers()
            return
        if msg_id not in seen:
            seen.add(msg_id)
            event = json.loads(body)
            print(f"event {msg_id}: {event['type']} {event['intent_id']}", flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver)
print(f"listening on 127.0.0.1:{sys.argv[1]}", flush=True)
server.serve_forever()
