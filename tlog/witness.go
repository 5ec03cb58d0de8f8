package tlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd"
	iproof "github.com/intentd/intentd/proof"
)

// DefaultWitnessInterval is how often the witnesses are asked by default: a few
// minutes, since public witnesses serve many logs and ask each to call rarely, and a
// checkpoint a proof needs at once is asked for at once anyway.
const DefaultWitnessInterval = 5 * time.Minute

// WitnessTimeout bounds one request to a witness.
const WitnessTimeout = 10 * time.Second

// onDemandEvery is the shortest time between two rounds started by proofs of leaves
// that no cosigned checkpoint covers (or the witness interval, when shorter): a burst
// of proofs shares one round, and a steady stream of them costs each witness at most
// 360 requests an hour.
const onDemandEvery = 10 * time.Second

// demandWait is how long a proof waits for the round it started.
const demandWait = 5 * time.Second

// maxWitnessAnswer bounds what is read of a witness's answer: a few signature lines.
const maxWitnessAnswer = 16 << 10

// WitnessStatus is what the log knows of one witness, for metrics, GET /readyz and
// the console.
type WitnessStatus struct {
	// Name, Key and URL are the witness's in the policy: its name there, its note
	// verifier key, the prefix of its endpoints.
	Name string `json:"name"`
	Key  string `json:"key"`
	URL  string `json:"url"`
	// Size is the tree size the witness last cosigned for this log, or told it holds;
	// 0 until it answered.
	Size uint64 `json:"size"`
	// Cosigned is the size of the newest checkpoint it cosigned for this log.
	Cosigned uint64 `json:"cosigned"`
	// Requests, Alarms and Failures count the requests sent, the answers that are
	// alarms (403, 404, 422, or a cosignature that does not verify) and those that
	// failed otherwise (no answer, 5xx, anything unexpected).
	Requests uint64 `json:"requests"`
	Alarms   uint64 `json:"alarms"`
	Failures uint64 `json:"failures"`
	// Alarm is the newest alarm while it stands, empty once the witness cosigns again.
	Alarm string `json:"alarm,omitempty"`
	// Error is the newest failure while it stands.
	Error string `json:"error,omitempty"`
}

// witnessing asks the witnesses of a policy to cosign the log's checkpoints, following
// C2SP tlog-witness, and keeps the newest checkpoint whose cosignatures meet the
// policy's quorum.
type witnessing struct {
	l        *Log
	policy   *iproof.WitnessPolicy
	interval time.Duration
	client   *http.Client
	ws       []*witnessState

	// cosigned is the newest checkpoint that met the quorum, its note carrying the
	// cosignature lines; last is the one of the newest round, met or not.
	cosigned atomic.Pointer[checkpoint]
	last     atomic.Pointer[checkpoint]

	// kick asks the loop for a round now.
	kick chan struct{}
	// mu guards done, closed and replaced at the end of each round, and lastDemand.
	mu         sync.Mutex
	done       chan struct{}
	lastDemand time.Time
}

// witnessState is one witness as the log knows it; its fields but the counters are
// owned by the round that asks it, and read under mu.
type witnessState struct {
	w        iproof.Witness
	mu       sync.Mutex
	size     uint64
	lines    []byte // its cosignature lines of the checkpoint of linesFor leaves
	linesFor *checkpoint
	alarm    string
	alarmFor *checkpoint // the checkpoint the alarm was about
	err      string

	requests, alarms, failures atomic.Uint64
}

func newWitnessing(l *Log, opts Options) *witnessing {
	w := &witnessing{l: l, policy: opts.Witnesses, interval: opts.WitnessInterval, client: opts.WitnessClient,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	if w.interval <= 0 {
		w.interval = DefaultWitnessInterval
	}
	if w.client == nil {
		w.client = &http.Client{Timeout: WitnessTimeout}
	}
	for _, wt := range opts.Witnesses.Witnesses {
		w.ws = append(w.ws, &witnessState{w: wt})
	}
	return w
}

// served is the checkpoint the log serves: the newest that met the quorum, else the
// newest the witnesses were asked about; nil before the first round.
func (w *witnessing) served() *checkpoint {
	if c := w.cosigned.Load(); c != nil {
		return c
	}
	return w.last.Load()
}

// Witnesses returns what the log knows of each witness of its policy, in policy
// order; nil when it has none.
func (l *Log) Witnesses() []WitnessStatus {
	if l.wit == nil {
		return nil
	}
	out := make([]WitnessStatus, len(l.wit.ws))
	for i, s := range l.wit.ws {
		s.mu.Lock()
		out[i] = WitnessStatus{Name: s.w.Name, Key: s.w.Key, URL: s.w.URL, Size: s.size, Alarm: s.alarm, Error: s.err,
			Requests: s.requests.Load(), Alarms: s.alarms.Load(), Failures: s.failures.Load()}
		if s.linesFor != nil {
			out[i].Cosigned = s.linesFor.size
		}
		s.mu.Unlock()
	}
	return out
}

// Uncosigned is the number of leaves beyond the newest checkpoint that meets the
// witnesses' quorum: the gap readers who require the quorum cannot see yet. It is 0
// without witnesses.
func (l *Log) Uncosigned() uint64 {
	if l.wit == nil {
		return 0
	}
	var n uint64
	if c := l.wit.cosigned.Load(); c != nil {
		n = c.size
	}
	return l.Size() - min(n, l.Size())
}

// loop asks the witnesses each interval, and when kicked, until ctx ends. The first
// round is at once, so that a started log serves a cosigned checkpoint soon.
func (w *witnessing) loop(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	w.round(ctx, false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.round(ctx, false)
		case <-w.kick:
			w.round(ctx, true)
		}
	}
}

// covering returns the newest checkpoint meeting the quorum if it covers leaf index;
// otherwise it starts a round (unless one started by a proof began less than
// onDemandEvery ago), waits for it up to demandWait, and tries again. Without such a
// checkpoint it returns nil and says so.
func (w *witnessing) covering(ctx context.Context, index uint64) (*checkpoint, *intentd.LogWitnessing) {
	c := w.cosigned.Load()
	if c == nil || index >= c.size {
		w.mu.Lock()
		done, now := w.done, time.Now()
		ask := now.Sub(w.lastDemand) >= min(onDemandEvery, w.interval)
		if ask {
			w.lastDemand = now
		}
		w.mu.Unlock()
		if ask {
			select {
			case w.kick <- struct{}{}:
			default: // a round is asked for already
			}
			wctx, cancel := context.WithTimeout(ctx, demandWait)
			// The round in progress, if any, may end before it took the new
			// checkpoint: wait for the next too.
			for range 2 {
				select {
				case <-done:
				case <-wctx.Done():
				}
				if c = w.cosigned.Load(); (c != nil && index < c.size) || wctx.Err() != nil {
					break
				}
				w.mu.Lock()
				done = w.done
				w.mu.Unlock()
			}
			cancel()
		}
		c = w.cosigned.Load()
	}
	if c == nil || index >= c.size {
		return nil, &intentd.LogWitnessing{Cosigners: []string{}, Message: fmt.Sprintf(
			"no checkpoint that covers leaf %d meets the witnesses' quorum yet: the checkpoint is the log's own; ask again later", index)}
	}
	return c, &intentd.LogWitnessing{QuorumMet: true, Cosigners: c.cosigners}
}

// round asks every witness to cosign the newest checkpoint, those it has not
// cosigned yet, at once. A witness whose last answer was an alarm is asked again only
// at the interval, and only about a newer checkpoint than the one it refused: the
// same request would be refused the same way.
func (w *witnessing) round(ctx context.Context, demand bool) {
	defer func() {
		w.mu.Lock()
		close(w.done)
		w.done = make(chan struct{})
		w.mu.Unlock()
	}()
	cp, err := w.l.publish()
	if err != nil {
		w.l.log.Error("the transparency log could not sign a checkpoint for its witnesses", "err", err)
		return
	}
	var wg sync.WaitGroup
	for _, s := range w.ws {
		s.mu.Lock()
		skip := s.linesFor == cp || (s.alarm != "" && (demand || s.alarmFor == cp))
		s.mu.Unlock()
		if skip {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.ask(ctx, s, cp) }()
	}
	wg.Wait()
	note := slices.Clip(cp.note)
	var names []string
	for _, s := range w.ws {
		s.mu.Lock()
		if s.linesFor == cp {
			note = append(note, s.lines...)
			names = append(names, s.w.Name)
		}
		s.mu.Unlock()
	}
	c := &checkpoint{size: cp.size, root: cp.root, note: note, cosigners: names}
	if names == nil {
		c.cosigners = []string{}
	}
	w.last.Store(c)
	if w.policy.Satisfied(names) {
		if old := w.cosigned.Load(); old == nil || old.size <= c.size {
			w.cosigned.Store(c)
		}
	}
}

// ask sends the checkpoint to one witness (C2SP tlog-witness add-checkpoint) with a
// consistency proof from the size the witness holds. A 409 names that size, and the
// request is made again once from there; 403, 404 and 422 are alarms, kept and
// counted, never tried again in this round.
func (w *witnessing) ask(ctx context.Context, s *witnessState, cp *checkpoint) {
	for try := 0; try < 2; try++ {
		s.mu.Lock()
		old := s.size
		s.mu.Unlock()
		if old > cp.size {
			w.alarm(s, cp, 0, fmt.Sprintf("the witness holds a tree of %d leaves for this log, which has %d", old, cp.size))
			return
		}
		body, err := w.request(old, cp)
		if err != nil {
			w.fail(s, fmt.Sprintf("consistency proof from %d to %d: %v", old, cp.size, err))
			return
		}
		status, answer, err := w.post(ctx, s, body)
		if err != nil {
			w.fail(s, err.Error())
			return
		}
		switch status {
		case http.StatusOK:
			w.cosigned1(s, cp, answer)
			return
		case http.StatusConflict:
			n, err := strconv.ParseUint(strings.TrimSpace(string(answer)), 10, 64)
			if err != nil || n == old {
				w.fail(s, fmt.Sprintf("409 with %q, not another tree size", clipText(answer)))
				return
			}
			// The witness holds another size (it restarted with an older state, or
			// the log's own memory of it is gone): resynchronise to it.
			s.mu.Lock()
			s.size = n
			s.mu.Unlock()
		case http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity:
			w.alarm(s, cp, status, clipText(answer))
			return
		default:
			w.fail(s, fmt.Sprintf("%d %s", status, clipText(answer)))
			return
		}
	}
	w.fail(s, "409 twice: the witness's tree size moves under the log")
}

// request is the body of add-checkpoint: the old size, the consistency proof from it,
// a blank line and the signed checkpoint.
func (w *witnessing) request(old uint64, cp *checkpoint) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	if old > 0 && old < cp.size {
		nodes, err := proof.Consistency(old, cp.size)
		if err != nil {
			return nil, err
		}
		hashes, err := w.l.rehash(nodes)
		if err != nil {
			return nil, err
		}
		for _, h := range hashes {
			b.WriteString(base64.StdEncoding.EncodeToString(h))
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	b.Write(cp.note)
	return b.Bytes(), nil
}

func (w *witnessing) post(ctx context.Context, s *witnessState, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, WitnessTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.w.URL+"/add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	s.requests.Add(1)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessAnswer))
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer: %w", err)
	}
	return resp.StatusCode, answer, nil
}

// cosigned1 keeps a witness's cosignature lines of cp: those that verify under its
// key. An answer with none is an alarm: the witness said yes with words that mean no.
func (w *witnessing) cosigned1(s *witnessState, cp *checkpoint, answer []byte) {
	lines := cosignatureLines(cp.note, s.w.Verifier(), answer)
	if lines == nil {
		w.alarm(s, cp, http.StatusOK, "the answer carries no cosignature that verifies under the witness's key")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alarm != "" || s.err != "" {
		w.l.log.Info("the witness cosigns the log's checkpoints again", "witness", s.w.Name, "size", cp.size)
	}
	s.size, s.lines, s.linesFor, s.alarm, s.alarmFor, s.err = cp.size, lines, cp, "", nil, ""
}

// cosignatureLines returns the lines of a witness's answer to add-checkpoint that are
// its signatures of the signed note, each verified under v; nil when none is.
func cosignatureLines(signed []byte, v note.Verifier, answer []byte) []byte {
	var lines []byte
	for _, line := range strings.SplitAfter(string(answer), "\n") {
		if !strings.HasPrefix(line, "— ") || !strings.HasSuffix(line, "\n") {
			continue
		}
		n, err := note.Open(append(slices.Clip(signed), line...), note.VerifierList(v))
		if err == nil && len(n.Sigs) == 1 && n.Sigs[0].Name == v.Name() && n.Sigs[0].Hash == v.KeyHash() {
			lines = append(lines, line...)
		}
	}
	return lines
}

// alarm records an answer that says the witness will not cosign: the log is unknown
// to it (404), or its key is (403), or the checkpoint is not consistent with what it
// cosigned before (422): a fork, or a witness that was given another log's history.
func (w *witnessing) alarm(s *witnessState, cp *checkpoint, status int, msg string) {
	s.alarms.Add(1)
	text := msg
	if status != 0 {
		text = fmt.Sprintf("%d %s", status, msg)
	}
	s.mu.Lock()
	changed := s.alarm != text
	s.alarm, s.alarmFor = text, cp
	s.mu.Unlock()
	if changed {
		w.l.log.Error("ALARM: a witness refuses the log's checkpoint", "witness", s.w.Name, "url", s.w.URL, "status", status, "answer", msg)
	}
}

// fail records a request that failed without an answer from the witness (it is down,
// or answered what the protocol does not): the log goes on, uncosigned by it.
func (w *witnessing) fail(s *witnessState, msg string) {
	s.failures.Add(1)
	s.mu.Lock()
	changed := s.err == ""
	s.err = msg
	s.mu.Unlock()
	if changed {
		w.l.log.Warn("a witness could not be asked to cosign; it is asked again at the next round", "witness", s.w.Name, "url", s.w.URL, "err", msg)
	}
}

// clipText is the first line of a witness's answer, at most 200 bytes, for a log line.
func clipText(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
