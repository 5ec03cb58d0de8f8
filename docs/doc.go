// Package docs holds no code. Its test runs the shell blocks of README.md, docs/cli.md and
// docs/api.md, in order, against an intentd it starts, and compares what each command
// prints with the sample the document shows, so that a walk-through that no longer runs
// as written fails the build.
//
// A block the test cannot run carries a marker, an HTML comment on the line before its
// fence, which a reader of the source sees and the rendered page hides:
//
//	<!-- doctest: skip REASON -->       not run; the test names it and says why
//	<!-- doctest: server FLAGS -->      starts a server: not run; the test starts its own
//	                                    intentd, with FLAGS, on a fresh data folder
//	<!-- doctest: restart FLAGS -->     runs on a fresh intentd started with FLAGS, which
//	                                    the blocks after it use too
//	<!-- doctest: background -->        its one command runs beside the next ones, as in a
//	                                    second terminal
//	<!-- doctest: background output --> a plain block: what that second terminal shows
//	                                    since it was last looked at
//	<!-- doctest: stream -->            each command runs until interrupted: the test
//	                                    stops it after a moment
package docs
