#!/bin/sh
# Starts a cluster of three intentd on loopback, each embedding one member of a
# three-server JetStream cluster, with one signing key; stops them all on Ctrl-C.
# Usage: scripts/cluster.sh BIN_DIR DATA_DIR  (make cluster gives bin and cluster-data)
set -eu
bin=$1
data=$2
mkdir -p "$data"
if [ ! -f "$data/signing.key" ]; then
	"$bin/intentctl" keygen -o "$data/signing.key" >/dev/null
fi
# The members speak mutual TLS, as they would across machines: a CA and a certificate
# per node, made once.
if [ ! -f "$data/certs/node3.pem" ]; then
	"$bin/intentctl" certs -o "$data/certs" node1=127.0.0.1 node2=127.0.0.1 node3=127.0.0.1 >/dev/null
fi
# The NATS servers' routes authenticate with one user and password, made once and kept
# in the data folder (mode 0600), so that no other process joins their cluster. Each
# intentd admits its own client alone, with the credential it makes in its data folder.
if [ ! -f "$data/nats-route.credential" ]; then
	(umask 077 && printf 'route %s\n' "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" >"$data/nats-route.credential")
fi
read -r route_user route_pass <"$data/nats-route.credential"
routes="nats-route://$route_user:$route_pass@127.0.0.1:6311, nats-route://$route_user:$route_pass@127.0.0.1:6312, nats-route://$route_user:$route_pass@127.0.0.1:6313"
# Another cluster on these ports would answer the readiness checks below for this one.
for i in 1 2 3; do
	if curl -s -o /dev/null "http://127.0.0.1:831$i/healthz" 2>/dev/null; then
		echo "port 831$i already answers: another intentd (make cluster?) runs; stop it first" >&2
		exit 1
	fi
done
pids=""
trap 'kill $pids 2>/dev/null; wait; exit 0' INT TERM
for i in 1 2 3; do
	mkdir -p "$data/node$i"
	rm -f "$data/node$i/nats.conf" # an earlier one may be readable by others; this one holds the password
	(umask 077 && cat >"$data/node$i/nats.conf" <<CONF
server_name: node$i
listen: 127.0.0.1:431$i
cluster {
  name: intentd, listen: 127.0.0.1:631$i, routes: [$routes]
  authorization { user: "$route_user", password: "$route_pass" }
}
CONF
	)
	"$bin/intentd" --listen "127.0.0.1:831$i" --data "$data/node$i" --signing-key "$data/signing.key" \
		--nats-embed --nats-embed-config "$data/node$i/nats.conf" --nats-replicas 3 \
		--cluster-bind "127.0.0.1:731$i" --cluster-tls-ca "$data/certs/ca.pem" \
		--cluster-tls-cert "$data/certs/node$i.pem" --cluster-tls-key "$data/certs/node$i.key" --log-format json 2>"$data/node$i/log" &
	pids="$pids $!"
done
for i in 1 2 3; do
	n=0
	pid=$(echo $pids | cut -d' ' -f$i)
	until curl -sf "http://127.0.0.1:831$i/readyz" >/dev/null 2>&1; do
		n=$((n + 1))
		if [ "$n" -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then
			echo "node $i did not start; its log: $data/node$i/log" >&2
			kill $pids 2>/dev/null
			exit 1
		fi
		sleep 0.1
	done
done
cat <<MSG
A cluster of three intentd on loopback (logs in $data/node*/log):
  node 1  http://127.0.0.1:8311   NATS nats://127.0.0.1:4311   cluster 127.0.0.1:7311
  node 2  http://127.0.0.1:8312   NATS nats://127.0.0.1:4312   cluster 127.0.0.1:7312
  node 3  http://127.0.0.1:8313   NATS nats://127.0.0.1:4313   cluster 127.0.0.1:7313
The members speak mutual TLS under the CA in $data/certs.
Try:    $bin/intentctl demo --server http://127.0.0.1:8312
        curl -s http://127.0.0.1:8313/info
Ctrl-C stops the three.
MSG
wait
