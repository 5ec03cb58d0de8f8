package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/intentd/intentd/cluster/clustertls"
	"github.com/intentd/intentd/internal/secretfile"
)

// certName is what a member's name may be: it names its two files.
var certName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// certs writes the members' mutual TLS material: a cluster CA in DIR (made on first use,
// reused after, so that a member added later trusts and is trusted by the others), and a
// certificate and key per member, naming the hosts the other members dial it at.
func (c *cli) certs(args []string) error {
	flags := c.flags("certs")
	dir := flags.String("o", "cluster-certs", "folder of the CA (ca.pem, ca.key) and of each member's NAME.pem and NAME.key")
	days := flags.Int("days", 365, "days a member's certificate is valid (never past the CA's)")
	caDays := flags.Int("ca-days", 3650, "days a new CA is valid")
	renew := flags.Bool("renew", false, "replace the certificates of members that have one in the folder (a rotation: the CA stays)")
	pos, err := c.parse(flags, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("want at least one NAME=HOST[,HOST...]")
	}
	if *days < 1 || *caDays < 1 {
		return usagef("--days and --ca-days: want at least 1")
	}
	type member struct {
		name  string
		hosts []string
	}
	var members []member
	for _, p := range pos {
		name, hosts, ok := strings.Cut(p, "=")
		if !ok || !certName.MatchString(name) || name == "ca" || hosts == "" {
			return usagef("%q: want NAME=HOST[,HOST...], a name of letters, digits, '.', '-' and '_' other than ca, and the hosts (IP addresses or DNS names) the other members dial it at", p)
		}
		members = append(members, member{name, strings.Split(hosts, ",")})
		if !*renew {
			for _, ext := range []string{".pem", ".key"} {
				if f := filepath.Join(*dir, name+ext); fileExists(f) {
					return fmt.Errorf("%s exists; certs replaces a member's files only with --renew", f)
				}
			}
		}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	ca, made, err := loadOrMakeCA(*dir, time.Duration(*caDays)*24*time.Hour)
	if err != nil {
		return err
	}
	if made {
		fmt.Fprintf(c.stdout, "CA:       %s (give every member --cluster-tls-ca %[1]s), key %s (mode 0600; keep it off the members)\n",
			filepath.Join(*dir, "ca.pem"), filepath.Join(*dir, "ca.key"))
	} else {
		fmt.Fprintf(c.stdout, "CA:       %s (already there; its key signs the new certificates)\n", filepath.Join(*dir, "ca.pem"))
	}
	for _, m := range members {
		cert, key, err := ca.Issue(m.name, m.hosts, time.Duration(*days)*24*time.Hour)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		certFile, keyFile := filepath.Join(*dir, m.name+".pem"), filepath.Join(*dir, m.name+".key")
		// The key first: a member that reads its files between the two writes finds a
		// key that is not its certificate's, refuses it, and reads both once the
		// certificate is there too.
		if err := secretfile.Replace(keyFile, key, 0o600); err != nil {
			return err
		}
		if err := secretfile.Replace(certFile, cert, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "member:   %-10s --cluster-tls-cert %s --cluster-tls-key %s  (%s)\n", m.name, certFile, keyFile, strings.Join(m.hosts, ", "))
	}
	return nil
}

// loadOrMakeCA reads the CA in dir, or makes one there when there is none.
func loadOrMakeCA(dir string, validity time.Duration) (ca *clustertls.CA, made bool, err error) {
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	_, certErr := os.Stat(certFile)
	_, keyErr := os.Stat(keyFile)
	switch {
	case certErr == nil && keyErr == nil:
		ca, err := clustertls.LoadCA(certFile, keyFile)
		return ca, false, err
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
	case certErr == nil || keyErr == nil:
		return nil, false, fmt.Errorf("%s has one of ca.pem and ca.key without the other: restore the missing one, or use another folder for a new CA", dir)
	default:
		return nil, false, errors.Join(certErr, keyErr)
	}
	ca, err = clustertls.NewCA("intentd cluster CA", validity)
	if err != nil {
		return nil, false, err
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return nil, false, err
	}
	if err := secretfile.WriteNew(keyFile, key); err != nil {
		return nil, false, err
	}
	if err := secretfile.Replace(certFile, ca.CertPEM(), 0o644); err != nil {
		return nil, false, err
	}
	return ca, true, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
