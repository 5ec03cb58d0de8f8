// The policy machine, for checking a proof in the browser: reading bytecode (the format
// of docs/bytecode.md) with the Go decoder's checks, and running it on an intent's attrs
// and the evidence to the same failures, indexes and reasons as the Go machine.
//
// It follows package policy step by step rather than re-deriving the language, because
// the proof check compares its output with the receipt byte for byte: a reason worded a
// little differently would be a false alarm. Where JavaScript and Go differ underneath,
// the Go behaviour is rebuilt:
//   - ints are int64: BigInt, with overflow checked as Go checks it;
//   - strings compare by their UTF-8 bytes (code point order), not UTF-16 units;
//   - lengths and cuts that Go counts in bytes are counted in UTF-8 bytes;
//   - lower and upper map each code point on its own, as Go's simple case mapping does;
//   - evidence numbers keep their JSON text (JSONNumber), since Go reads them with
//     UseNumber and "2.0" is not an int there, though JSON.parse makes it 2.
// Nothing here throws on bad input: decode answers an Error with Go's message, and the
// caller shows it as the failure of a check.
//
// The machine is in three modules: policycore.js (types, opcodes, strings and values as
// Go has them, printing), policydecode.js (reading, checking and writing bytecode) and
// policyeval.js (evidence, attrs, running, reasons, amounts and periods). This one is
// what pages import.

export { cmpStr, exprString, goQuote, mapCase, quote, typeString } from "./policycore.js";
export { decode } from "./policydecode.js";
export { amount, attrsJCS, classify, decodeAttrs, evaluate, JSONNumber, periodStart } from "./policyeval.js";
