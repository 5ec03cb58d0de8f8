// Package deploy holds no code. Beside it are the files that deploy intentd: a systemd
// unit (systemd/), Prometheus alerting rules (prometheus/) and a Grafana dashboard
// (grafana/), described in docs/deploying.md. Its tests check them against the intentd they deploy: the unit
// with systemd-analyze and by starting intentd with the unit's flags and settings, the
// rules and the dashboard's queries with promtool and against the metrics, labels,
// error codes and routes the code has, so that a flag or a metric renamed in the code fails here rather than on a host.
package deploy
