// SPDX-License-Identifier: Apache-2.0

// Package frond is the Go client of Frond's HTTP /v1 API: snowflake IDs,
// segment IDs handed out in-process from ranges leased from the server,
// ID formats and decoding, over a list of servers with failover.
//
// A Client and the Tag handles it makes are safe for use by any number
// of goroutines. Tag.Next is the hot path: one atomic add and two
// comparisons while the leased range lasts; the next range is fetched
// in the background before it ends.
package frond

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Version is the client's version, sent in its User-Agent.
const Version = "0.1.0"

// Defaults of Options and TagOptions.
const (
	DefaultServer   = "http://127.0.0.1:8080"
	DefaultTimeout  = 2 * time.Second
	DefaultRetries  = 3
	backoffBase     = 50 * time.Millisecond
	backoffCap      = time.Second
	maxAnswerBytes  = 64 << 20
	userAgentPrefix = "frond-go/"
)

// Options configure a Client; the zero value is the defaults.
type Options struct {
	// Servers are base URLs ("http://10.0.0.5:8080"). Empty: the
	// comma-separated list in FROND_SERVERS, else DefaultServer.
	Servers []string
	// Timeout bounds each attempt of a call, connecting included
	// (0: DefaultTimeout).
	Timeout time.Duration
	// Retries is how many times a call is tried again, on the next
	// server, after a connection error, a timeout or a 503 (0:
	// DefaultRetries; negative: never). A 4xx is never retried.
	Retries int
	// Token is sent as "Authorization: Bearer <token>" when set.
	Token string
	// Transport replaces the client's own http.Transport (tests, proxies).
	Transport http.RoundTripper
}

// Client talks to one Frond deployment. Make one per process and share it.
type Client struct {
	servers []string
	timeout time.Duration
	retries int
	token   string
	ua      string
	hc      *http.Client
	cur     atomic.Uint32 // index of the server calls go to

	mu     sync.Mutex
	tags   map[string]*Tag
	closed bool

	storeMu sync.Mutex
	store   string // the store of the first range that named one
	storeAt string // the server that named it

	rndMu sync.Mutex
	rnd   *rand.Rand

	calls, failures, failovers atomic.Int64
}

// New makes a client; it calls no server. A server URL that is not
// http:// or https:// with a host is an Error with code INVAL.
func New(opts Options) (*Client, error) {
	servers := opts.Servers
	if len(servers) == 0 {
		if env := os.Getenv("FROND_SERVERS"); strings.TrimSpace(env) != "" {
			for _, s := range strings.Split(env, ",") {
				if s = strings.TrimSpace(s); s != "" {
					servers = append(servers, s)
				}
			}
		}
	}
	if len(servers) == 0 {
		servers = []string{DefaultServer}
	}
	c := &Client{timeout: opts.Timeout, retries: opts.Retries,
		token: opts.Token, ua: userAgentPrefix + Version,
		tags: map[string]*Tag{},
		rnd:  rand.New(rand.NewSource(time.Now().UnixNano()))}
	for _, s := range servers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") ||
			u.Host == "" || (u.Path != "" && u.Path != "/") ||
			u.RawQuery != "" || u.Fragment != "" {
			return nil, newError(CodeInvalid, "server %q is not a base URL "+
				"such as http://127.0.0.1:8080", s)
		}
		c.servers = append(c.servers, u.Scheme+"://"+u.Host)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.retries == 0 {
		c.retries = DefaultRetries
	} else if c.retries < 0 {
		c.retries = 0
	}
	tr := opts.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:               nil, // servers are called directly
			DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	c.hc = &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	return c, nil
}

// Servers returns the base URLs the client calls, in failover order.
func (c *Client) Servers() []string { return append([]string(nil), c.servers...) }

// Next returns one snowflake ID.
func (c *Client) Next(ctx context.Context) (int64, error) {
	ids, err := c.NextBatch(ctx, 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// NextBatch returns n snowflake IDs, increasing (n from 1 to the server's
// max_count, 100,000 by default).
func (c *Client) NextBatch(ctx context.Context, n int) ([]int64, error) {
	if n < 1 {
		return nil, newError("COUNT_INVALID", "count %d is not at least 1", n)
	}
	strs, err := c.strings(ctx, "/v1/snowflake?count="+strconv.Itoa(n), n)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(strs))
	for i, s := range strs {
		if ids[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, newError(CodeBadResponse, "ID %q is not a 64-bit integer", s)
		}
	}
	return ids, nil
}

// Format returns count strings of the server's format name
// (format.<name> in its configuration).
func (c *Client) Format(ctx context.Context, name string, count int) ([]string, error) {
	if name == "" {
		return nil, newError(CodeInvalid, "a format name is needed")
	}
	if count < 1 {
		return nil, newError("COUNT_INVALID", "count %d is not at least 1", count)
	}
	return c.strings(ctx, "/v1/format/"+url.PathEscape(name)+"?count="+
		strconv.Itoa(count), count)
}

// Decode returns the fields of an ID or an ID string, as the server
// decodes it (format: one of its format names, or "" to read s by its
// shape). IDs are strings, times RFC 3339, numbers json.Number.
func (c *Client) Decode(ctx context.Context, s, format string) (map[string]interface{}, error) {
	if s == "" {
		return nil, newError("ID_INVALID", "an empty string is no ID")
	}
	path := "/v1/decode/" + url.PathEscape(s)
	if format != "" {
		path += "?format=" + url.QueryEscape(format)
	}
	body, err := c.get(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(strings.NewReader(string(body)))
	d.UseNumber()
	var out map[string]interface{}
	if err := d.Decode(&out); err != nil || out == nil {
		return nil, newError(CodeBadResponse, "decode answer is not a JSON object")
	}
	return out, nil
}

// Stats counts a client's calls and its handles' ranges.
type Stats struct {
	Calls     int64 // HTTP requests sent, every attempt
	Failures  int64 // attempts that failed: connection, timeout, 503
	Failovers int64 // moves to the next server
	Ranges    int64 // ranges leased by the client's tags
	Leased    int64 // IDs in those ranges
	Dropped   int64 // leased IDs skipped: expired, closed, refused
}

// Stats returns the client's counts, its tags' summed.
func (c *Client) Stats() Stats {
	s := Stats{Calls: c.calls.Load(), Failures: c.failures.Load(),
		Failovers: c.failovers.Load()}
	c.mu.Lock()
	for _, t := range c.tags {
		ts := t.Stats()
		s.Ranges += ts.Ranges
		s.Leased += ts.Leased
		s.Dropped += ts.Dropped
	}
	c.mu.Unlock()
	return s
}

// Close drops every tag's buffered ranges (their IDs are skipped, never
// reused) and makes every later call fail with CLOSED.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	tags := make([]*Tag, 0, len(c.tags))
	for _, t := range c.tags {
		tags = append(tags, t)
	}
	c.mu.Unlock()
	for _, t := range tags {
		t.close()
	}
	c.hc.CloseIdleConnections()
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// strings calls a /v1 endpoint that answers {"ids":[...]} and checks
// that it holds n strings.
func (c *Client) strings(ctx context.Context, path string, n int) ([]string, error) {
	body, err := c.get(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	var a struct {
		IDs []string `json:"ids"`
	}
	if err := json.Unmarshal(body, &a); err != nil || len(a.IDs) != n {
		return nil, newError(CodeBadResponse, "answer to %s is not %d IDs", path, n)
	}
	return a.IDs, nil
}

// get calls path on the current server, moving to the next one and
// trying again after a connection error, a timeout or a 503, up to
// c.retries times, with full-jitter backoff. calls, when not nil, counts
// the attempts.
func (c *Client) get(ctx context.Context, path string, calls *atomic.Int64) ([]byte, error) {
	return c.getChecked(ctx, path, calls, nil)
}

// getChecked is get, with check (when not nil) run on each 200 answer:
// an error it gives with code STORE_MISMATCH moves the call to the next
// server as a 503 does, and is the call's error if no server gives an
// answer check takes; any other error it gives ends the call.
func (c *Client) getChecked(ctx context.Context, path string, calls *atomic.Int64,
	check func(body []byte, h http.Header, srv string) *Error) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if c.isClosed() {
		return nil, newError(CodeClosed, "the client is closed")
	}
	var last, mismatch *Error
	for attempt := 0; attempt <= c.retries; attempt++ {
		if attempt > 0 {
			if err := c.sleep(ctx, attempt); err != nil {
				return nil, err
			}
		}
		idx := c.cur.Load()
		srv := c.servers[int(idx)%len(c.servers)]
		c.calls.Add(1)
		if calls != nil {
			calls.Add(1)
		}
		body, h, err, retry := c.once(ctx, srv, path)
		if err == nil && check != nil {
			if err = check(body, h, srv); err != nil {
				if retry = err.Code == CodeStoreMismatch; retry {
					mismatch = err
				}
			}
		}
		if err == nil {
			return body, nil
		}
		if !retry {
			return nil, err
		}
		last = err
		c.failures.Add(1)
		if ctx.Err() != nil {
			break
		}
		if len(c.servers) > 1 && c.cur.CompareAndSwap(idx, idx+1) {
			c.failovers.Add(1)
		}
	}
	if ctx.Err() != nil {
		return nil, &Error{Code: CodeTimeout, Message: "the call's context " +
			"ended: " + ctx.Err().Error(), err: ctx.Err()}
	}
	if mismatch != nil {
		// A server of another store outweighs one that did not answer.
		return nil, mismatch
	}
	return nil, last
}

// checkStore checks the store a range answer of srv names ("store", or
// the Frond-Store header) against the one the client pinned: the first
// one seen. A server that names none (older than the store's identity)
// is trusted only when it is the only one listed.
func (c *Client) checkStore(body *string, header []string, srv string) *Error {
	if len(header) > 1 || (body != nil && len(header) == 1 && *body != header[0]) {
		return &Error{Code: CodeBadResponse, Server: srv, Message: fmt.Sprintf(
			"the answer names store %v in its body and %q in Frond-Store",
			deref(body), header)}
	}
	st := ""
	if body != nil {
		st = *body
	} else if len(header) == 1 {
		st = header[0]
	} else {
		if len(c.servers) > 1 {
			return &Error{Code: CodeStoreMismatch, Server: srv, Message: srv +
				" does not name its store (a server older than the store " +
				"identity): with several servers listed, ranges are taken " +
				"only from servers that name one, so that servers on " +
				"different stores are never mixed"}
		}
		return nil
	}
	if !storeID(st) {
		return &Error{Code: CodeBadResponse, Server: srv, Message: fmt.Sprintf(
			"the answer names store %q, not 32 lowercase hex digits", st)}
	}
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	if c.store == "" {
		c.store, c.storeAt = st, srv
		return nil
	}
	if st != c.store {
		return &Error{Code: CodeStoreMismatch, Server: srv, Message: fmt.Sprintf(
			"%s serves store %s, but %s served store %s: servers on "+
				"different stores hand out the same IDs; its range is not used",
			srv, st, c.storeAt, c.store)}
	}
	return nil
}

func storeID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return strconv.Quote(*s)
}

// bound is the longest a call can take: every attempt's timeout and
// every backoff at its cap.
func (c *Client) bound() time.Duration {
	return time.Duration(c.retries+1)*c.timeout + time.Duration(c.retries)*backoffCap
}

// sleep waits the backoff before the attempt-th retry: a uniform draw in
// [0, min(cap, base * 2^(attempt-1))).
func (c *Client) sleep(ctx context.Context, attempt int) error {
	ceil := backoffBase << uint(attempt-1)
	if ceil > backoffCap || ceil <= 0 {
		ceil = backoffCap
	}
	c.rndMu.Lock()
	d := time.Duration(c.rnd.Int63n(int64(ceil)))
	c.rndMu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return &Error{Code: CodeTimeout, Message: "the call's context ended: " +
			ctx.Err().Error(), err: ctx.Err()}
	}
}

// once is one attempt on one server: the body of a 200, or an Error and
// whether another attempt may help.
func (c *Client) once(ctx context.Context, srv, path string) ([]byte, http.Header, *Error, bool) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, srv+path, nil)
	if err != nil {
		return nil, nil, &Error{Code: CodeInvalid, Message: err.Error(), err: err}, false
	}
	req.Header.Set("User-Agent", c.ua)
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		resp.Body.Close()
	}
	if err != nil {
		code, what := CodeUnavailable, "cannot reach the server"
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) ||
			(errors.As(err, &ne) && ne.Timeout()) {
			code, what = CodeTimeout, fmt.Sprintf("no answer within %v", c.timeout)
		}
		return nil, nil, &Error{Code: code, Message: what + ": " + err.Error(),
			Server: srv, err: err}, true
	}
	if resp.StatusCode == http.StatusOK {
		return body, resp.Header, nil, false
	}
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e := &Error{Code: CodeBadResponse, Status: resp.StatusCode, Server: srv,
		Message: fmt.Sprintf("HTTP %d without a Frond error body", resp.StatusCode)}
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		e.Code, e.Message = eb.Error.Code, eb.Error.Message
	}
	return nil, nil, e, resp.StatusCode == http.StatusServiceUnavailable
}
