package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
)

// demoPolicy is the policy the demo catalog is written for (docs/evidence.md).
var demoPolicy = evidence.DemoPolicy

// demoSolutions are demo catalog entries (docs/evidence.md) proposed in turn: three
// that pass the demo policy for a size M navy-or-white intent with a budget of 3000,
// and five that fail it on one constraint or several, so that both outcomes and
// their receipts are in the mix.
var demoSolutions = []string{
	"https://shop.example/products/tshirt-navy-m",
	"https://shop.example/products/supima-tee-white-m",
	"sku:PO-NAVY-M",
	"https://shop.example/products/tshirt-navy-s",
	"https://shop.example/products/tshirt-black-m",
	"sku:TS-WHITE-M",
	"https://shop.example/products/premium-tee-navy-m",
	"sku:PO-BLACK-L",
}

// demoAttrs are the attributes of every generated intent.
const demoAttrs = `{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}`

// signedIntent is a POST /intents body, signed ahead of the run.
type signedIntent struct {
	ID   string
	Body []byte
}

// signIntents makes n Ed25519-signed intents for the policy, on every core. Signing
// happens before the load starts, so that the figures are the server's and not the
// signer's.
func signIntents(n int, policyID string, key ed25519.PrivateKey) ([]signedIntent, error) {
	out := make([]signedIntent, n)
	workers := runtime.GOMAXPROCS(0)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				id := uuid.NewString()
				intent := []byte(`{"id":"` + id + `","policy_id":"` + policyID + `","attrs":` + demoAttrs + `}`)
				auth, err := crypto.SignEd25519(key, intent)
				if err != nil {
					errs <- err
					return
				}
				a, err := json.Marshal(auth)
				if err != nil {
					errs <- err
					return
				}
				var b bytes.Buffer
				b.Grow(len(intent) + len(a) + 32)
				b.WriteString(`{"intent":`)
				b.Write(intent)
				b.WriteString(`,"authorship":`)
				b.Write(a)
				b.WriteString(`}`)
				out[i] = signedIntent{ID: id, Body: b.Bytes()}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("sign intents: %w", err)
	}
	return out, nil
}

// newClient returns an HTTP client that keeps up to conns connections open to one
// server: the default keeps two, and the rest would be dialled again for every
// request, measuring TCP set-up instead of the service.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// httpStatusError is an answer other than the one wanted.
type httpStatusError struct {
	Status int
	Body   string
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Body) }

// post sends body and reads the answer, which must be 200.
func post(ctx context.Context, c *http.Client, url, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	return do(c, req)
}

// get reads url, which must answer 200.
func get(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return do(c, req)
}

func do(c *http.Client, req *http.Request) ([]byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &httpStatusError{Status: resp.StatusCode, Body: string(bytes.TrimSpace(b))}
	}
	return b, nil
}

// putPolicies stores the demo policy on each of bases and returns its id.
func putPolicies(ctx context.Context, c *http.Client, bases []string) (string, error) {
	var id string
	for _, base := range bases {
		got, err := putPolicy(ctx, c, base)
		if err != nil {
			return "", err
		}
		id = got
	}
	return id, nil
}

// putPolicy stores the demo policy and returns its id.
func putPolicy(ctx context.Context, c *http.Client, base string) (string, error) {
	b, err := post(ctx, c, base+"/policies", "text/plain; charset=utf-8", []byte(demoPolicy))
	if err != nil {
		return "", fmt.Errorf("POST /policies: %w", err)
	}
	var id string
	if err := json.Unmarshal(b, &id); err != nil {
		return "", fmt.Errorf("POST /policies answered %q, want a JSON string: %v", b, err)
	}
	return id, nil
}

// errorClass names a failed request for the error counts: its status, or the kind of
// transport error.
func errorClass(err error) string {
	var se *httpStatusError
	if errors.As(err, &se) {
		return strconv.Itoa(se.Status)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "transport"
}

// loadSpec is how a load is driven: closed loop at a concurrency, or open loop at a
// rate with the concurrency as the most requests in flight.
type loadSpec struct {
	Concurrency int
	Rate        float64 // requests per second; 0: closed loop
	Duration    time.Duration
}

// loadResult is what a load measured.
type loadResult struct {
	Latency   hist
	OK        atomic.Int64
	errMu     sync.Mutex
	Errors    map[string]int64
	FirstErr  error
	Elapsed   time.Duration
	Exhausted bool // the requests ran out before the duration
}

func (r *loadResult) fail(err error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.Errors == nil {
		r.Errors = map[string]int64{}
	}
	r.Errors[errorClass(err)]++
	if r.FirstErr == nil {
		r.FirstErr = err
	}
}

// ErrorCount is the number of failed requests.
func (r *loadResult) ErrorCount() int64 {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// runLoad calls req(i) for i from 0 up to n-1 until the duration is over. Each call's
// latency is recorded; in open loop it counts from the moment the request was due, not
// from when a free worker sent it, so that a server that falls behind shows it.
func runLoad(ctx context.Context, spec loadSpec, n int, req func(ctx context.Context, i int) error) *loadResult {
	res := &loadResult{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	deadline := start.Add(spec.Duration)
	conc := max(spec.Concurrency, 1)
	var wg sync.WaitGroup
	one := func(i int, due time.Time) {
		err := req(ctx, i)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			res.fail(err)
			return
		}
		res.Latency.Record(time.Since(due))
		res.OK.Add(1)
	}
	var issued atomic.Int64
	if spec.Rate <= 0 {
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) && ctx.Err() == nil {
					i := int(issued.Add(1) - 1)
					if i >= n {
						return
					}
					one(i, time.Now())
				}
			}()
		}
	} else {
		type job struct {
			i   int
			due time.Time
		}
		jobs := make(chan job, 4*conc)
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range jobs {
					one(j.i, j.due)
				}
			}()
		}
		period := time.Duration(float64(time.Second) / spec.Rate)
		for i := 0; i < n; i++ {
			due := start.Add(time.Duration(i) * period)
			if !due.Before(deadline) {
				break
			}
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			}
			if ctx.Err() != nil {
				break
			}
			jobs <- job{i, due}
			issued.Add(1)
		}
		close(jobs)
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Exhausted = int(issued.Load()) >= n && time.Now().Before(deadline)
	return res
}

// submitAll posts the intents at a concurrency, as fast as the servers take them, to
// bases one after the other, and fails on the first refusal: the scenarios that set up
// intents need all of them.
func submitAll(ctx context.Context, c *http.Client, bases []string, intents []signedIntent, conc int) (time.Duration, error) {
	res := runLoad(ctx, loadSpec{Concurrency: conc, Duration: 24 * time.Hour}, len(intents), func(ctx context.Context, i int) error {
		_, err := post(ctx, c, nodeFor(bases, i, 0)+"/intents", "application/json", intents[i].Body)
		return err
	})
	if res.FirstErr != nil {
		return 0, fmt.Errorf("POST /intents: %d of %d failed, first: %w", res.ErrorCount(), len(intents), res.FirstErr)
	}
	return res.Elapsed, ctx.Err()
}

// sortedKeys returns the keys of m in order, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
