// Package client is the Go client of intentd's HTTP API, the one intentctl uses: one
// method per route (PutPolicy, SubmitIntent, Propose, Status, Proof, Info, PublicKey,
// ...), error answers turned back into *APIError values carrying the status, code and
// message (errors.As also gives an *intentd.Error, so code written against the engine's
// errors handles the client's), and Events, an EventStream that reconnects after a drop
// and resumes from its last event id, so that its reader sees every event once.
//
// It is a package of its own, apart from package http, so that a program that only
// talks to a server links no server: it reads only the domain types of package intentd
// and the leaves crypto and policy, never the engine, its store or the server's
// metrics. The error codes it and its callers switch on are intentd's Code constants,
// and GET /info decodes into intentd.Info, the server's own type; the error body is
// read here and held to the server's by its tests. Proofs it fetches are checked
// offline with package proof.
package client
