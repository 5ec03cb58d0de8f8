// Package console holds the files of intentd's browser console, embedded in the binary
// so that the server that runs the API also serves the pages that watch it, with no
// build step and nothing fetched from elsewhere: plain HTML, CSS and JavaScript modules.
//
// The pages (live outcomes, one intent, a proof checked in the browser, a policy) call
// the same API any client calls, with the same bearer token when the server has tokens.
// Package http serves these files under /ui/ and describes them in docs/console.md.
package console
