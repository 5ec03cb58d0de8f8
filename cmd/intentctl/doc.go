// Command intentctl is the command line of an intentd server: it makes keys, stores
// and checks policies, builds, signs and submits intents, proposes solutions, follows
// the outcome stream, and fetches and verifies proofs offline. It speaks to the server
// only through the Go client (github.com/intentd/intentd/client) and checks proofs with
// package proof, so that it links none of the server; keys, signatures, policy
// compilation and proof verification run locally.
//
// Usage:
//
//	intentctl [--server URL] [--token-file FILE | --token T] [--timeout D] [--json] COMMAND [ARGS]
//
// The bearer token is best given by file, --token-file FILE (or INTENTCTL_TOKEN_FILE),
// or by INTENTCTL_TOKEN: a --token on the command line is shown to every user of the
// host. --token @FILE reads the file too.
//
// Run `intentctl help` for the commands, and see docs/cli.md for a walk-through from
// nothing to a verified outcome. `intentctl demo` runs that walk-through in one go
// against a server with the demo catalog: it stores the demo policy, signs two intents
// with a throwaway key, proposes a product that passes and one that fails, follows both
// to their outcome and verifies both proofs under the server's key.
//
// Exit codes:
//
//	0  done
//	1  refused: by the server (an error answer), or by a local check (a policy that
//	   does not compile, a key or token file that cannot be used); demo: an outcome
//	   other than the one expected; policy test: a case failed, a policy could not
//	   be tested, or a coverage is below --threshold
//	2  usage: a wrong flag, argument or attribute value
//	3  the server cannot be reached (or did not answer in --timeout)
//	4  a proof failed verification; log watch: the log showed a fork (two histories)
//	5  watch --until-terminal: every intent ended, not all in success
package main
