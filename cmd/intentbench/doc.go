// Command intentbench is intentd's load generator: it measures how much one machine
// carries, so that a change that makes the service slower shows.
//
//	go run ./cmd/intentbench SCENARIO [flags]
//
// It talks HTTP to --server, or starts its own intentd (built from this module, or the
// --intentd binary) as a child process on a temporary data folder, so that the
// server's resident memory and restart time can be read. Intents are Ed25519-signed
// before the load starts: signing is the client's cost, not the server's. Each run
// prints p50, p90, p99, max and throughput as a table, or as JSON with --json.
//
// The scenarios:
//
//   - intake: POST /intents at --concurrency (closed loop) or --rate (open loop, each
//     latency counted from the moment the request was due) for --duration.
//   - baseline: intake, then the same load and the same bodies on a bare server (this
//     program re-executed: the http package's server, router and decoders, JCS, the
//     attrs check and Ed25519 verify; no actors, no store), and the ratio of the two.
//   - intake-floor: baseline with the floor in intentd's place: the bare server that
//     also writes each intent synced to the service's store, as the service must keep
//     it (the canonical intent and its authorship), without actors or snapshots.
//   - decide: intents, then one proposal each at --rate; the latency from a proposal's
//     200 to its event on a stream, with the demo catalog's solutions.
//   - decide-floor: decide on the floor: the proposal's work alone, two synced writes,
//     the extraction, the evaluation, the receipt and the stream.
//   - fanout: --subscribers streams while proposals make events at --rate; every
//     subscriber must read every event: lost and duplicated events are counted, and a
//     subscriber the server cuts off reconnects after its last id, as clients do.
//   - soak-open: fill the store with --intents open intents, read the resident memory,
//     restart the server and time it until it serves a status, then read statuses.
//
// Latencies are kept in a log-linear histogram precise to 1/64 of each value; the
// maximum is exact. The figures and how to read them are in docs/benchmarks.md.
package main
