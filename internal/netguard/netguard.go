// Package netguard keeps the service's outbound requests off its own network: the one
// check, on the address actually dialled, that the evidence fetcher's web pages and the
// webhook deliveries go through, so that a URL given by a caller (a proposal's page, an
// endpoint an admin registers) cannot make the server reach loopback, private,
// link-local or cloud-metadata addresses.
package netguard

import (
	"fmt"
	"net"
	"syscall"
)

// Error is the refusal of a non-public address.
type Error struct{ Addr string }

func (e *Error) Error() string { return fmt.Sprintf("address %s is not a public address", e.Addr) }

// Control is a net.Dialer Control function that refuses every address PublicIP does
// not accept. It runs after DNS, on each address dialled, so that a name resolving (or
// re-resolving) to a private address is caught too.
func Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || !PublicIP(ip) {
		return &Error{Addr: host}
	}
	return nil
}

// PublicIP reports whether ip is an address of the public internet: not loopback,
// private, link-local, multicast, unspecified or carrier-grade NAT.
func PublicIP(ip net.IP) bool {
	return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() ||
		// 100.64.0.0/10, carrier-grade NAT, is as internal as the RFC 1918 ranges.
		(ip.To4() != nil && ip.To4()[0] == 100 && ip.To4()[1]&0xc0 == 64))
}
