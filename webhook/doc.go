// Package webhook pushes outcomes to the endpoints an admin registers, in the Standard
// Webhooks format (standardwebhooks.com), at least once and in order, across restarts
// and the members of a cluster (docs/webhooks.md).
//
// Each endpoint is one record in the store (intentd.WebhookStore) holding its
// configuration, its secret and where its deliveries stand: the id of the last event
// delivered (its cursor), the attempt of the event being retried, and a lease naming
// the one member that delivers it. A member delivers an endpoint while it holds the
// lease, which each write of the record renews; the record's revision fences the
// writes, so a member that lost the lease has its next write refused and stops. The
// events come from the engine's event stream, resumed from the cursor, so that nothing
// the log holds is skipped: a delivery that fails is tried again on a schedule, the
// events after it waiting, and the cursor only moves past an event once it was taken.
package webhook
