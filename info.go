package intentd

// Info is the body of GET /info: what a client needs to know of a server's settings. It
// is here, with the other wire forms, so that the server and its clients share one type.
type Info struct {
	APIVersion string `json:"api_version"`
	// Version and Revision are the build of intentd that answers: its release (or
	// the module version recorded at build) and the VCS revision, when recorded.
	Version           string `json:"version,omitempty"`
	Revision          string `json:"revision,omitempty"`
	UnsignedPermitted bool   `json:"unsigned_permitted"`
	IntentTTLSeconds  int64  `json:"intent_ttl_seconds"`
	MaxBodyBytes      int64  `json:"max_body_bytes"`
	MaxSolutionBytes  int    `json:"max_solution_bytes"`
	EventRetention    uint64 `json:"event_retention"`
	// The limits beyond the body size, which the server refuses a request over.
	MaxAttrs             int `json:"max_attrs"`
	MaxSetElements       int `json:"max_set_elements"`
	MaxStringBytes       int `json:"max_string_bytes"`
	MaxSubscribers       int `json:"max_subscribers"`
	MaxPolicySourceBytes int `json:"max_policy_source_bytes"`
	// MaxPreviewsPerIntent is how many previews one intent may have; 0: no bound.
	MaxPreviewsPerIntent int `json:"max_previews_per_intent"`
	// AuthRequired says whether requests need a caller's credentials, a bearer token or
	// a client certificate (all but the health checks).
	AuthRequired bool `json:"auth_required"`
	// PublicKey (Base58 of 32 bytes) and KeyID are the Ed25519 key receipts are signed
	// with: what a verifier pins to check proofs (docs/proofs.md). Empty without one.
	PublicKey string `json:"public_key,omitempty"`
	KeyID     string `json:"key_id,omitempty"`
	// LogOrigin and LogVerifierKey name the transparency log of outcomes, when the
	// server keeps one, or is a member of a cluster, which serves the log of the
	// members that keep it: its checkpoints' origin line and the C2SP note verifier key
	// they are signed with (the receipt key, under the origin's name).
	LogOrigin      string `json:"log_origin,omitempty"`
	LogVerifierKey string `json:"log_verifier_key,omitempty"`
	// WebhookPublicKey is the whpk_ Ed25519 key that v1a webhook signatures verify
	// with (docs/webhooks.md), when the server delivers webhooks.
	WebhookPublicKey string `json:"webhook_public_key,omitempty"`
	// Cluster is set in cluster mode: the cluster's name and the members this node
	// sees, so that an operator can tell from any node whether it is in the cluster.
	Cluster *ClusterInfo `json:"cluster,omitempty"`
}

// ClusterInfo is the cluster a node is a member of, as the node sees it.
type ClusterInfo struct {
	Name string `json:"name"`
	// Members are the members' addresses (HOST:PORT), this node's included, sorted.
	Members []string `json:"members"`
}
