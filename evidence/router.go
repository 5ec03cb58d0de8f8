package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
)

// RouterConfig says which extractor handles a solution: the first rule that matches,
// else Default. It is what the optional config file holds (see LoadRouterConfig and
// docs/evidence.md); server options may build one too.
type RouterConfig struct {
	// Rules are tried in order; the first whose conditions all hold wins.
	Rules []Rule `json:"rules,omitempty"`
	// Default is the extractor for a solution no rule matches; "" makes such a
	// solution an extraction failure.
	Default string `json:"default,omitempty"`
	// Timeout bounds every extraction, whatever the extractor (0: DefaultTimeout).
	// The http and web extractors have their own limits as well.
	Timeout Duration `json:"timeout,omitempty"`
}

// Rule chooses Extractor for the solutions that satisfy every condition it sets. A
// rule with no condition is refused: that is what Default is for.
type Rule struct {
	// Scheme matches the solution's URL scheme, case-insensitively: "https",
	// or "sku" for a solution "sku:TS-NAVY-M".
	Scheme string `json:"scheme,omitempty"`
	// Host matches the URL's host name (no port), case-insensitively: "shop.example"
	// exactly, or "*.shop.example" for any subdomain (not shop.example itself).
	Host string `json:"host,omitempty"`
	// Prefix matches the start of the solution string as given, byte for byte.
	Prefix string `json:"prefix,omitempty"`
	// Extractor is the name of the extractor to use.
	Extractor string `json:"extractor"`
}

// Duration is a time.Duration that reads and writes as a Go duration string ("10s")
// in JSON.
type Duration time.Duration

// UnmarshalJSON reads "10s", "1m30s" and so on.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"10s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %q", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (r Rule) matches(solution string, u *url.URL) bool {
	if r.Prefix != "" && !strings.HasPrefix(solution, r.Prefix) {
		return false
	}
	if r.Scheme != "" && (u == nil || !strings.EqualFold(u.Scheme, r.Scheme)) {
		return false
	}
	if r.Host != "" {
		if u == nil {
			return false
		}
		host := strings.ToLower(u.Hostname())
		pattern := strings.ToLower(r.Host)
		if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
			if !strings.HasSuffix(host, "."+suffix) {
				return false
			}
		} else if host != pattern {
			return false
		}
	}
	return true
}

// LoadRouterConfig reads a router config file: JSON, unknown fields refused so that
// a misspelt key is not silently ignored. The format is in docs/evidence.md.
func LoadRouterConfig(path string) (RouterConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return RouterConfig{}, fmt.Errorf("router config: %w", err)
	}
	cfg, err := ParseRouterConfig(data)
	if err != nil {
		return RouterConfig{}, fmt.Errorf("router config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseRouterConfig decodes the JSON of a router config file.
func ParseRouterConfig(data []byte) (RouterConfig, error) {
	var cfg RouterConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return RouterConfig{}, err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return RouterConfig{}, fmt.Errorf("data after the JSON object")
	}
	return cfg, nil
}

// Router is the Extractor the engine calls. It chooses an extractor by name, checks
// what that extractor returned against the attributes asked for (Check), and bounds
// the whole by a time limit. It is safe for concurrent use.
type Router struct {
	cfg        RouterConfig
	extractors map[string]Extractor
	timeout    time.Duration
}

// NewRouter returns a router over the named extractors ("catalog", "http", "web",
// or any name of one's own). Every name the config uses must be among them.
func NewRouter(cfg RouterConfig, extractors map[string]Extractor) (*Router, error) {
	ex := make(map[string]Extractor, len(extractors))
	for name, x := range extractors {
		if name == "" || x == nil {
			return nil, fmt.Errorf("router: extractor %q: an extractor needs a name and an implementation", name)
		}
		ex[name] = x
	}
	for i, r := range cfg.Rules {
		if r.Scheme == "" && r.Host == "" && r.Prefix == "" {
			return nil, fmt.Errorf("router: rule %d: no condition (scheme, host or prefix); use default instead", i)
		}
		if r.Host != "" && strings.Contains(strings.TrimPrefix(r.Host, "*."), "*") {
			return nil, fmt.Errorf("router: rule %d: host %q: only a leading \"*.\" is allowed", i, r.Host)
		}
		if _, ok := ex[r.Extractor]; !ok {
			return nil, fmt.Errorf("router: rule %d: unknown extractor %q (have %s)", i, r.Extractor, names(ex))
		}
	}
	if _, ok := ex[cfg.Default]; cfg.Default != "" && !ok {
		return nil, fmt.Errorf("router: default: unknown extractor %q (have %s)", cfg.Default, names(ex))
	}
	cfg.Rules = append([]Rule(nil), cfg.Rules...)
	timeout := time.Duration(cfg.Timeout)
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Router{cfg: cfg, extractors: ex, timeout: timeout}, nil
}

func names(ex map[string]Extractor) string {
	out := make([]string, 0, len(ex))
	for n := range ex {
		out = append(out, fmt.Sprintf("%q", n))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Choose returns the name of the extractor for a solution: named when it is set (a
// policy's `extractor "NAME"`), else the first matching rule, else the default.
func (r *Router) Choose(solution, named string) (string, error) {
	if named != "" {
		if _, ok := r.extractors[named]; !ok {
			return "", errorf(KindNoExtractor, "", nil, "the policy names extractor %q, which this server does not have (have %s)", named, names(r.extractors))
		}
		return named, nil
	}
	u, err := url.Parse(solution)
	if err != nil {
		u = nil // prefix rules may still match
	}
	for _, rule := range r.cfg.Rules {
		if rule.matches(solution, u) {
			return rule.Extractor, nil
		}
	}
	if r.cfg.Default == "" {
		return "", errorf(KindNoExtractor, "", nil, "no extractor is configured for solution %q", clip(solution))
	}
	return r.cfg.Default, nil
}

// Extract chooses the extractor, runs it under the router's time limit, and returns
// its evidence reduced to the asked attributes and checked against their types
// (Check). Every error is an *Error naming the extractor.
func (r *Router) Extract(ctx context.Context, req Request) (Evidence, error) {
	name, err := r.Choose(req.Solution, req.Extractor)
	if err != nil {
		return nil, err
	}
	limit := effectiveLimit(ctx, r.timeout)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ev, err := r.extractors[name].Extract(ctx, req)
	if err != nil {
		return nil, r.wrap(ctx, name, err, limit)
	}
	out, err := Check(ev, req.Attributes)
	if err != nil {
		e := err.(*Error)
		e.Extractor = name
		return nil, e
	}
	return out, nil
}

// wrap makes sure an extractor's error is an *Error that names the extractor, so
// that a custom extractor's plain error still reads well as a failure reason.
func (r *Router) wrap(ctx context.Context, name string, err error, limit time.Duration) error {
	var e *Error
	if errors.As(err, &e) {
		if e.Extractor == "" {
			c := *e
			c.Extractor = name
			return &c
		}
		return e
	}
	if e := ctxError(ctx, name, "extraction", limit); e != nil {
		e.Err = err
		return e
	}
	return &Error{Kind: KindFailed, Extractor: name, Reason: err.Error(), Err: err}
}
