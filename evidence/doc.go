// Package evidence extracts evidence about a proposed solution: the catalog, http and
// web extractors, the rules that choose one for a solution, and the check that what an
// extractor returned has the types the policy asked for.
package evidence
