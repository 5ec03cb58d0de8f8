package actors

import cmap "github.com/orcaman/concurrent-map"

// protoactor keeps the name of every live actor and every future of an actor system in
// 1,024 maps of orcaman/concurrent-map, and each of those splits itself into
// cmap.SHARD_COUNT Go maps: 32 by default, 32,768 Go maps a system. A Go map keeps the
// table it grew for good, and names are hashed over all of them, so a system's first
// tens of thousands of actors grew a table in nearly every map and the member kept them:
// 9.6 MiB a system, two systems a member, the most of what a member held after its first
// load that it had not held before (docs/cluster.md, "Memory after a load"). protoactor
// already spreads its names over 1,024 locks, so a second split inside each buys no
// concurrency on a few cores; with one Go map behind each of the 1,024, a system keeps
// 0.1 MiB empty and under 1 MiB after any number of actors (TestProcessRegistryCeiling).
//
// cmap reads SHARD_COUNT when a map is made and when it is used, so it is set before
// anything of the process makes one: this package's init runs before main, and protoactor
// makes its maps only in NewActorSystem and in a cluster's PID cache. The only users of
// cmap in the binary are those two.
func init() { cmap.SHARD_COUNT = 1 }
