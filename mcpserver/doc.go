// Package mcpserver serves intentd to AI agents over the Model Context Protocol, on
// the official Go SDK. Its tools are what an agent shopping for a person needs to
// spend an intent's one proposal well: get_intent (what the person asked for and the
// policy that decides), get_requirements (what a solution's evidence must satisfy,
// the policy with the intent's parameters put in), preview_solution (what a proposal
// of a candidate would
// decide, with nothing spent), propose_solution (the one proposal), await_outcome (the
// decision, waited for) and get_proof (the proof bundle, checked here under the
// server's key). Under a mandate, a person's one signed authorization for many
// purchases under a budget, get_mandate tells its limits, its totals and what remains,
// and purchase makes one purchase: an intent of the mandate's, proposed to at once,
// which await_outcome and get_proof then follow as any other.
//
// The tools run over a Backend: Local, an engine in the same process (intentd serves
// it at /mcp on the streamable HTTP transport), or Remote, an intentd server reached
// with package client (intentctl mcp serves it over stdio to desktop agents). A
// refusal comes back as a tool error whose text is the JSON {"code", "message"} of
// the service's error, so that an agent can switch on the code as any client does;
// internal errors are logged and shown only as "internal error".
//
// Over HTTP, a request is bounded before the SDK decodes it: a JSON-RPC batch holds at
// most MaxBatchMessages messages, since the SDK makes all the calls of a batch at once,
// and an answer at most MaxAnswerBytes, since it holds every answer of a batch until
// the last is done.
//
// Intents and policies are offered through get_intent only, not as MCP resources: an
// agent needs the intent, its policy and the evidence that policy reads together, at
// the moment it evaluates candidates, and many agent hosts surface tools to the model
// but leave resources to the person.
package mcpserver
