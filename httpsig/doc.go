// Package httpsig checks that an HTTP request was signed by the holder of an Ed25519
// key, the way AI agents sign what they send (Visa's Trusted Agent Protocol,
// Cloudflare's Web Bot Auth): RFC 9421 HTTP Message Signatures over the method, the
// authority, the path and a Content-Digest (RFC 9530) of the body.
//
// intentd uses it on proposals: an agent signs POST /intents/{id}/proposal with its
// key, and names the key in the signature's keyid parameter as the Base58 encoding of
// the 32-byte public key, so that the verifier needs no key directory to find it. What
// the key is allowed to do is for the caller to decide; Verify only says which key
// signed which request, and hands back the signature base so that the caller can keep
// it as evidence an offline verifier checks again (VerifyBase, BaseComponents).
//
// The package implements the part of RFC 9421 that this needs, strictly: Ed25519 only
// (alg "ed25519" or no alg), requests only, created, expires and nonce required, and a
// bounded validity window, because a signature without them could be replayed at will;
// the window is bounded so that a caller remembering nonces to refuse replays needs to
// remember them only that long. Component identifiers with parameters (;sf, ;key, ;bs,
// ;req, ;tr) and @query-param are refused as unsupported rather than half implemented.
//
// The "@signature-params" line of the signature base is the signer's own text of its
// Signature-Input member, not a re-serialization: RFC 8941 lets a sender write the
// same value in more than one way (spaces inside an inner list or after a ";",
// leading zeros in an integer), and a signer that signed its own spelling must still
// verify. What Verify interprets (created, expires, keyid, the covered components) is
// parsed from that same text, so the base and the checks cannot disagree.
package httpsig
