package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// newStreamClient returns a client for event streams: each stream holds a connection
// of its own for as long as it runs, so nothing is pooled.
func newStreamClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: -1,
		DisableKeepAlives:   true,
		DisableCompression:  true,
	}}
}

// openStream starts GET /events?query after the event id after (0: no header).
func openStream(ctx context.Context, c *http.Client, base, query string, after uint64) (*http.Response, error) {
	url := base + "/events"
	if query != "" {
		url += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &httpStatusError{Status: resp.StatusCode}
	}
	return resp, nil
}

// marker puts one intent through to its event and returns the event's id. Events of
// the run that follows have larger ids, so its streams start there: on a server that
// already holds many events, a stream without a starting point would replay them all
// to every subscriber first.
func marker(ctx context.Context, b *bench, base, policyID string) (uint64, error) {
	in, err := signIntents(1, policyID, b.key)
	if err != nil {
		return 0, err
	}
	if _, err := post(ctx, b.client, base+"/intents", "application/json", in[0].Body); err != nil {
		return 0, fmt.Errorf("marker intent: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sc := newStreamClient()
	resp, err := openStream(ctx, sc, base, "intent_id="+in[0].ID, 0)
	if err != nil {
		return 0, fmt.Errorf("marker stream: %w", err)
	}
	defer resp.Body.Close()
	if _, err := post(ctx, b.client, base+"/intents/"+in[0].ID+"/proposal", "application/json", proposalBody(0)); err != nil {
		return 0, fmt.Errorf("marker proposal: %w", err)
	}
	rd := newSSEReader(resp.Body)
	for {
		ev, err := rd.Next()
		if err != nil {
			return 0, fmt.Errorf("marker stream: %w", err)
		}
		if string(eventIntentID(ev.Data)) == in[0].ID && ev.HasID {
			return ev.ID, nil
		}
	}
}

// proposalBodies are the bodies of the demo solutions' proposals.
var proposalBodies = func() [][]byte {
	out := make([][]byte, len(demoSolutions))
	for i, s := range demoSolutions {
		out[i] = []byte(`{"solution":` + strconv.Quote(s) + `}`)
	}
	return out
}()

// proposalBody is the proposal sent for the i-th intent.
func proposalBody(i int) []byte { return proposalBodies[i%len(proposalBodies)] }

// intentIndex maps the run's intent ids to their position, for the stream readers.
// The key is the 16 bytes of the UUID, looked up without allocating.
type intentIndex map[[16]byte]int32

func newIntentIndex(intents []signedIntent) intentIndex {
	m := make(intentIndex, len(intents))
	for i, in := range intents {
		m[uuid.MustParse(in.ID)] = int32(i)
	}
	return m
}

// lookup returns the position of the intent whose id is the text id, or -1.
func (m intentIndex) lookup(id []byte) int32 {
	u, err := uuid.ParseBytes(id)
	if err != nil {
		return -1
	}
	i, ok := m[u]
	if !ok {
		return -1
	}
	return i
}
