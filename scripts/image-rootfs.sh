#!/bin/sh
# image-rootfs.sh OUT: the files of intentd's container image, for the Containerfile to
# copy into an image FROM scratch: in OUT/rootfs a static intentd, the user it runs as,
# the name service order and the CA certificates; OUT/data, empty, becomes the data
# folder /data, which the Containerfile copies apart to give it to that user. `make
# image` runs it on the host; the Containerfile's build stage runs it inside the Go
# image. It needs Go and the module proxy (GOPROXY) or a module cache.
#
# VERSION, when set, is stamped into the binary as a release's version is.
set -eu
out=${1:?usage: image-rootfs.sh OUT}
go=${GO:-go}
uid=65532 # the "nonroot" of distroless images: no user of a host has it by chance

rm -rf "$out"
mkdir -p "$out/data"
out=$out/rootfs
mkdir -p "$out/etc/ssl/certs" "$out/tmp"
ldflags="-s -w"
if [ -n "${VERSION:-}" ]; then
	ldflags="$ldflags -X github.com/intentd/intentd/internal/buildinfo.version=$VERSION"
fi
# Pebble builds without cgo, so the binary needs no libc and runs on an empty image.
CGO_ENABLED=0 "$go" build -trimpath -buildvcs=auto -ldflags "$ldflags" -o "$out/intentd" ./cmd/intentd

printf 'root:x:0:0:root:/:/sbin/nologin\nintentd:x:%d:%d:intentd:/data:/sbin/nologin\n' "$uid" "$uid" >"$out/etc/passwd"
printf 'root:x:0:\nintentd:x:%d:\n' "$uid" >"$out/etc/group"
# Go reads /etc/hosts before DNS without this file too; it says so to whoever looks.
printf 'hosts: files dns\n' >"$out/etc/nsswitch.conf"

# The web and http extractors and NATS over TLS verify servers against these.
for ca in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem; do
	if [ -f "$ca" ]; then
		cp "$ca" "$out/etc/ssl/certs/ca-certificates.crt"
		break
	fi
done
if [ ! -f "$out/etc/ssl/certs/ca-certificates.crt" ]; then
	echo "image-rootfs.sh: no CA certificates found on this host (Debian: apt-get install ca-certificates)" >&2
	exit 1
fi
chmod 0644 "$out/etc/passwd" "$out/etc/group" "$out/etc/nsswitch.conf" "$out/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$out/tmp"
