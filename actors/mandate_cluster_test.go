//go:build !race

// protoactor-go races with itself when several cluster members run in one process (see
// cluster_test.go).

package actors

import (
	"testing"
	"time"
)

// TestClusterMandateLimits makes twenty purchases of one mandate at once through the
// three members of a cluster, under each limit: each member's actor of the mandate
// decides the purchases whose intents it owns, and the store's fence on the mandate's
// record serializes the members, so the totals are exact as on one node.
func TestClusterMandateLimits(t *testing.T) {
	for _, tt := range limitCases {
		t.Run(tt.name, func(t *testing.T) {
			hs := clusterOf(t, 3, withProver)
			ms := make([]*mandateHarness, len(hs))
			for i, h := range hs {
				ms[i] = asMandate(h)
			}
			id := ms[0].create(tt.l, ms[0].key, time.Now().Add(time.Hour))
			byState, refused := purchaseThrough(ms, id, 20, "M-2498")
			for _, m := range ms {
				m.checkLimit(id, byState, refused, tt.successes, tt.names, tt.state)
			}
			ms[1].verifyPurchases(id, byState)
		})
	}
}
