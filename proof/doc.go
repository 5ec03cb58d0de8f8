// Package proof checks a proof bundle offline: the receipt's signature under the
// service's key, the digests that bind the authored intent, the proposal and the
// evidence, the policy bytecode against its id, the intent's authorship, and the policy
// run again on the evidence. It links only the domain package and the leaves (crypto,
// policy), so that a client such as intentctl checks proofs with the code the service
// trusts, without linking the service. docs/proofs.md lists the checks.
package proof
