// Package http is intentd's HTTP API: the routes of the service specification (policies,
// intents, proposals, statuses) over any intentd.Engine, the strict decoders of request
// bodies, the one table that turns the domain's error kinds into statuses and error
// bodies, and the Server-Sent Events stream of outcomes. A request body is decoded once,
// here, checked against the limits, and handed to the engine as a decoded value.
//
// Every error answer is {"message": "...", "code": "..."} with a stable snake_case code;
// the codes are listed in docs/api.md. Internal errors are logged with their cause and
// shown only as "internal error".
//
// The stream (GET /events) sends each event as `id`, `event` and a one-line `data`,
// advises a reconnection delay once with `retry:`, keeps idle connections alive with a
// comment line, resumes after the Last-Event-ID header (or the last-event-id query
// parameter) with no gap and no duplicate, and ends cleanly when the server shuts down.
//
// The routes are one table (routes.go: method, pattern, role, handler), registered with
// httprouter in a loop; each route's chain (the CORS headers of an allowed origin, its
// caller, by bearer token or client certificate, checked against its role when the
// server authenticates callers, then counted in Metrics and logged, without its body,
// query or headers) is built once, at
// registration, with its pattern known. Requests that match no route go through the
// same chain under the pattern "unmatched". Each pattern also has an OPTIONS route that
// answers the CORS preflights of the origins in Options.CORSOrigins, without a token,
// and any other OPTIONS request as httprouter would. Limits
// bound what an intent's attrs, a solution and a policy source may carry, before the
// engine is asked. GET /openapi.json serves the OpenAPI 3.1 document embedded from
// openapi.json; /healthz, /readyz and /metrics are for operators.
//
// With Options.TLS, Serve serves TLS, HTTP/2 and HTTP/1.1, from certificate files read
// again on reload (tls.go); with a client CA in it, a client certificate authenticates
// its caller beside the tokens, with the roles its subject's OU values name, checked
// once per connection at its first request that needs a caller (clientcert.go).
//
// With Options.Console, the browser console (package console, docs/console.md) is served
// under /ui/, beside the routes rather than in their table: its files are no part of the
// API and need no token, and the one call it adds, the times of an intent, needs the read
// role as a status does.
//
// The Go client of this API is package client, kept apart so that a program that only
// talks to a server does not link one.
package http
