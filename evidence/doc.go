// Package evidence extracts evidence about a proposed solution: the catalog, http and
// web extractors, the rules that choose one for a solution, and the check that what an
// extractor returned has the types the policy asked for.
//
// The engine holds one Router and calls its Extract for each proposal. The router
// picks an extractor by name (the policy's `extractor "NAME"`, else the first rule
// on the solution's scheme, host or prefix, else the default), bounds it by a time
// limit, and passes what it returns through Check: fields the policy did not ask
// for are dropped, a value of the wrong type is an error naming the field (never
// coerced), and a field the source did not give stays absent so that the policy
// fails closed on it.
//
// Built in:
//
//   - Catalog: a JSON file {"<solution>": {<flat evidence>}}, reloaded on demand
//     (SIGHUP), with an embedded demo catalog (DefaultCatalog).
//   - HTTPExtractor: POST BASE/extract to an evidence service; the Request's JSON is
//     the wire body, and only a 200 with a flat JSON object counts.
//   - WebExtractor: GET the solution URL and read schema.org Product data (JSON-LD,
//     microdata) and OpenGraph product tags (ParsePage), with prices converted to
//     integer cents exactly (ParsePrice).
//
// Every failure is an *Error whose message is fit to be an intent's failure reason
// and whose Kind tells a product that does not exist from a source that failed. The
// wire contract, the web fields and the config file are documented in
// docs/evidence.md.
//
// The package reads the policy's schema in its wire form (Request.Attributes) and
// so does not depend on the policy package.
package evidence
