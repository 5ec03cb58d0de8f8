package jsread

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecode decodes the leader's answer to the read of an intent's snapshot of
// about 1.5 KB with its headers, and of a full entry bundle of the transparency log
// (256 entries of about 250 bytes): the two reads a cluster member makes most.
func BenchmarkDecode(b *testing.B) {
	hdrs := base64.StdEncoding.EncodeToString([]byte("NATS/1.0\r\nIntentd-Phase: open\r\nIntentd-Policy: 7Kf3mQ2xYzPqR8sTuVwXaBcDeFgHiJkLmNoPqRsTuVw\r\nIntentd-Expires: 1796011200000000000\r\n\r\n"))
	for _, size := range []int{1500, 64000} {
		data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", size)))
		answer := []byte(fmt.Sprintf(`{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"intentd.intent.0b7e6c1e-3f4a-4d2b-9c8e-1a2b3c4d5e6f","seq":123456,"hdrs":%q,"data":%q,"time":"2026-11-30T04:00:00.123456789Z"}}`, hdrs, data))
		b.Run(fmt.Sprint(size, " bytes"), func(b *testing.B) {
			b.SetBytes(int64(len(answer)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(answer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
