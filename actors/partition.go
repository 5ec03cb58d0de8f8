package actors

import (
	"hash/crc32"
	"slices"
	"strconv"

	"github.com/asynkron/protoactor-go/cluster"
)

// An intent's commands cross to its owner through a grain of its partition, not a grain
// of its own. A grain of its own was activated for each intent's first crossing and
// stopped once the intent went quiet: each crossing asked the owner's placement actor
// for the grain (a round trip), and each grain that stopped told every member
// (protoactor broadcasts an activation's end to each member's event stream), so a
// decided intent cost a cluster of N members N + 3 messages over remoting beyond its
// command and reply, and a placement actor's pass over all its grains. A partition's
// grain is activated once and serves every intent of the partition while commands come:
// a crossing is the command and its reply (docs/cluster.md, "What a command does").

// partitionKind is the grain kind of a partition of the intents.
const partitionKind = "intent-partition"

// partitions is how many partitions the intents are hashed into. Members of one cluster
// must agree on it and on partitionOf, so it is fixed. The count trades reuse against
// balance: a partition's grain is reused when its commands come within PassivateAfter of
// each other (at 200 crossings a second, 86 % of commands find their grain active with
// 1,024 partitions, 39 % with 4,096), while rendezvous placement of 1,024 keys gives each
// member its share only within the spread of so few keys (simulated with protoactor's
// Rendezvous: within 9 % of even at 3 members, 17 % at 10, 37 % at 30; docs/cluster.md).
// It also holds a member's partition grains to 1,024 (a few MiB) whatever its load.
const partitions = 1024

// partitionOf is the identity of the partition grain of intent id: the CRC-32 (IEEE) of
// the id, modulo partitions, in decimal.
func partitionOf(id string) string {
	return strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(id))%partitions), 10)
}

// grainOf is the grain a command for intent id goes to among members: its partition's,
// when every member serves partitions, or, while one does not (a release before
// partitions, serving beside this one in a rolling upgrade), the intent's own grain,
// which every release serves.
func grainOf(id string, partitioned bool) *cluster.ClusterIdentity {
	if partitioned {
		return &cluster.ClusterIdentity{Kind: partitionKind, Identity: partitionOf(id)}
	}
	return &cluster.ClusterIdentity{Kind: intentKind, Identity: id}
}

// allServePartitions reports whether every member of a topology serves partition grains.
func allServePartitions(members []*cluster.Member) bool {
	for _, m := range members {
		if !slices.Contains(m.Kinds, partitionKind) {
			return false
		}
	}
	return true
}
