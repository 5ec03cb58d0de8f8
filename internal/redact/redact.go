// Package redact keeps the secrets a setting may carry out of what is shown of it: a
// log line, an error, the profiler's command line.
package redact

import "strings"

// Mask stands for a secret taken out.
const Mask = "xxxxx"

// URLs replaces the user information of each URL in v, a URL or a comma list of
// them: what stands between a scheme's :// (or the start) and an @. It reads no URL
// syntax beyond that, so that a password holding a comma, a slash or an @ of its own
// is redacted whole rather than cut where a parser would end it; a path with an @ is
// redacted too, which costs nothing in a message or a profile.
func URLs(v string) string {
	var b strings.Builder
	for {
		at := strings.Index(v, "@")
		if at < 0 {
			b.WriteString(v)
			return b.String()
		}
		start := 0
		if s := strings.LastIndex(v[:at], "://"); s >= 0 {
			start = s + len("://")
		}
		b.WriteString(v[:start])
		b.WriteString(Mask + "@")
		v = v[at+1:]
	}
}
