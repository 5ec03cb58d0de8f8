//go:build race

package main

// raceEnabled makes the tests build intentd with the race detector too, reusing the
// dependencies `go test -race` compiled.
const raceEnabled = true
