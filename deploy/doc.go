// Package deploy holds no code. Beside it are the files that deploy intentd: a systemd
// unit (systemd/), Kubernetes manifests (kubernetes/), Prometheus alerting rules
// (prometheus/) and a Grafana dashboard (grafana/), described in docs/deploying.md with
// the container image (../Containerfile). Its tests check them against the intentd they
// deploy: the unit with systemd-analyze and by starting intentd with the unit's flags
// and settings; the image by building it and reading what it holds; the manifests by
// decoding them with the Kubernetes API's types, parsing each pod's flags with intentd
// and the NATS configuration with nats-server; the rules and the dashboard's queries
// with promtool and against the metrics, labels, error codes and routes the code has;
// so that a flag or a metric renamed in the code fails here rather than on a host.
package deploy
