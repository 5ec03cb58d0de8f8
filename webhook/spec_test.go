package webhook

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

func TestCheckSpec(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	guarded := New(Options{Store: newMemStore(), Source: newMemLog(), Log: newMemLog(), Key: key})
	noKey := New(Options{Store: newMemStore(), Source: newMemLog(), Log: newMemLog(), AllowPrivate: true})
	for _, tc := range []struct {
		name string
		s    *Service
		spec intentd.WebhookSpec
		want string // a part of the refusal; "" for none
	}{
		{"a public https URL", guarded, intentd.WebhookSpec{URL: "https://hooks.example.com/intentd"}, ""},
		{"a public IP", guarded, intentd.WebhookSpec{URL: "http://93.184.216.34:8080/x"}, ""},
		{"not a URL", guarded, intentd.WebhookSpec{URL: "hooks.example.com"}, "not an absolute"},
		{"another scheme", guarded, intentd.WebhookSpec{URL: "ftp://hooks.example.com/"}, "not http or https"},
		{"credentials", guarded, intentd.WebhookSpec{URL: "https://u:p@hooks.example.com/"}, "credentials"},
		{"a fragment", guarded, intentd.WebhookSpec{URL: "https://hooks.example.com/#x"}, "fragment"},
		{"loopback", guarded, intentd.WebhookSpec{URL: "http://127.0.0.1:9000/"}, "not a public address"},
		{"localhost", guarded, intentd.WebhookSpec{URL: "http://localhost:9000/"}, "not a public address"},
		{"cloud metadata", guarded, intentd.WebhookSpec{URL: "http://169.254.169.254/latest"}, "not a public address"},
		{"private, allowed", noKey, intentd.WebhookSpec{URL: "http://10.0.0.5/"}, ""},
		{"a state that is not an event", guarded, intentd.WebhookSpec{URL: "https://h.example/", Types: []intentd.State{"open"}}, "not an event type"},
		{"max_in_flight too high", guarded, intentd.WebhookSpec{URL: "https://h.example/", MaxInFlight: 33}, "max_in_flight"},
		{"an empty policy id", guarded, intentd.WebhookSpec{URL: "https://h.example/", PolicyIDs: []string{""}}, "policy_ids"},
		{"v1a without a key", noKey, intentd.WebhookSpec{URL: "https://h.example/", Asymmetric: true}, "no webhook signing key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh, err := tc.s.CreateWebhook(context.Background(), tc.spec)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CreateWebhook: %v", err)
				}
				if wh.MaxInFlight != 1 || !strings.HasPrefix(wh.Secret, "whsec_") || wh.Status != intentd.WebhookActive {
					t.Fatalf("created %+v, want max_in_flight 1, a whsec_ secret, active", wh)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || intentd.ErrorKind(err) != intentd.KindUnprocessable {
				t.Fatalf("CreateWebhook: %v, want a 422 refusal naming %q", err, tc.want)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	s := New(Options{Store: newMemStore(), Source: newMemLog(), Log: newMemLog(), MaxWebhooks: 2})
	for i := range 3 {
		_, err := s.CreateWebhook(context.Background(), intentd.WebhookSpec{URL: "https://h.example/"})
		if i < 2 && err != nil || i == 2 && intentd.ErrorKind(err) != intentd.KindConflict {
			t.Fatalf("endpoint %d of 2 allowed: %v", i+1, err)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		bad  bool
	}{
		{"0s,5s,5m,30m,2h,5h,10h,10h", 8, false},
		{"1s", 1, false},
		{"", 0, true},
		{"1s,,2s", 0, true},
		{"-1s", 0, true},
		{"5 minutes", 0, true},
	} {
		got, err := ParseSchedule(tc.in)
		if tc.bad != (err != nil) || len(got) != tc.want {
			t.Errorf("ParseSchedule(%q) = %v, %v", tc.in, got, err)
		}
	}
}
