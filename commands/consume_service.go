package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serviceFlags are consume's flags for running as a service.
type serviceFlags struct {
	MetricsListen string        `name:"metrics-listen" placeholder:"ADDR" help:"Serve Prometheus metrics on http://ADDR/metrics, and health on /healthz and /readyz (e.g. 127.0.0.1:9464; port 0 picks a free port; stderr says which). Off by default."`
	MetricsLinger time.Duration `name:"metrics-linger" default:"0s" placeholder:"D" help:"With --metrics-listen: once the run has ended, keep serving until /metrics was scraped once more (the final counts), for D at most."`
}

// validate checks the flags.
func (f serviceFlags) validate() error {
	if f.MetricsLinger < 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "--metrics-linger must not be negative, got %v", f.MetricsLinger)
	}
	if f.MetricsListen == "" {
		if f.MetricsLinger > 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "--metrics-linger needs --metrics-listen")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(f.MetricsListen); err != nil {
		return jsutil.Errorf(jsutil.ErrBadInput, "--metrics-listen %q: want HOST:PORT, such as 127.0.0.1:9464, :9464 or 127.0.0.1:0 (%v)", f.MetricsListen, err)
	}
	return nil
}

// consumeService is consume's HTTP listener (--metrics-listen): /metrics,
// /healthz and /readyz. A nil *consumeService (no --metrics-listen) does
// nothing.
type consumeService struct {
	srv     *http.Server
	addr    string
	metrics *consumeMetrics
	health  *consumeHealth
	linger  time.Duration
	log     *slog.Logger
	stopAll context.CancelFunc // the consumer watch

	mu      sync.Mutex
	ended   bool
	scraped chan struct{} // closed at the first scrape after the end
	served  chan struct{} // closed when Serve returned
}

// startService starts the listener of --metrics-listen, if given, and says
// on stderr where it listens.
func (c *ConsumeCmd) startService(ctx context.Context, env *Env, cl *jsutil.Client, cons jetstream.Consumer, lg *slog.Logger, stderr io.Writer) (*consumeService, error) {
	if c.MetricsListen == "" {
		return nil, nil
	}
	timeout := env.Globals.Timeout
	read := func(ctx context.Context) (*positions.Consumer, error) {
		return positions.Read(ctx, cl.JS, c.Stream, c.Consumer, positions.Options{Timeout: timeout})
	}
	m, err := newConsumeMetrics(c.Stream, c.Consumer, read, timeout)
	if err != nil {
		return nil, fmt.Errorf("metrics of consumer %q on stream %q: %w", c.Consumer, c.Stream, err)
	}
	connected := func() bool { return cl.NC.Status() == nats.CONNECTED }
	h := newConsumeHealth(c.Stream, c.Consumer, timeout, connected, time.Now)
	ln, err := net.Listen("tcp", c.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s for --metrics-listen: %w (choose another address, or port 0 for any free one)", c.MetricsListen, err)
	}
	s := &consumeService{
		metrics: m, health: h, linger: c.MetricsLinger, log: lg, addr: ln.Addr().String(),
		scraped: make(chan struct{}), served: make(chan struct{}),
	}
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		metrics.ServeHTTP(w, r)
		s.noteScrape()
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { answer(w, h.healthy) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { answer(w, h.readiness) })
	s.srv = &http.Server{
		Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		// What net/http reports (a failed accept) goes to jsctl's stderr.
		ErrorLog: log.New(writerFunc(func(b []byte) (int, error) {
			return fmt.Fprintf(stderr, "jsctl: warning: --metrics-listen %s: %s", s.addr, b)
		}), "", 0),
	}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			lg.Warn(fmt.Sprintf("--metrics-listen %s stopped serving: %v", s.addr, err), "addr", s.addr)
		}
	}()
	wctx, cancel := context.WithCancel(ctx)
	s.stopAll = cancel
	go h.watch(wctx, cons, timeout)
	context.AfterFunc(ctx, func() { h.stop("jsctl was asked to stop (a signal); running handlers finish within --stop-timeout") })
	lg.Info(fmt.Sprintf("serving metrics on http://%s/metrics and health on /healthz and /readyz", s.addr),
		"addr", s.addr, "stream", c.Stream, "consumer", c.Consumer)
	return s, nil
}

// answer writes a health answer: 200 or 503, and the reason in one line.
func answer(w http.ResponseWriter, state func() (bool, string)) {
	ok, why := state()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = io.WriteString(w, why+"\n")
}

// options are the library's hooks the service needs.
func (s *consumeService) options() []acks.ConsumeOption {
	if s == nil {
		return nil
	}
	return []acks.ConsumeOption{acks.OnFetch(s.health.fetched), acks.OnSweep(s.metrics.swept)}
}

// result counts one result.
func (s *consumeService) result(r acks.Result) {
	if s != nil {
		s.metrics.result(r)
	}
}

// handlerStarted counts a handler run; call the returned function when it
// ends.
func (s *consumeService) handlerStarted() func() {
	if s == nil {
		return func() {}
	}
	return s.metrics.handlerStarted()
}

// end notes that the run has ended (err: why it failed).
func (s *consumeService) end(err error) {
	if s == nil {
		return
	}
	reason := "the run has ended"
	if err != nil {
		reason = "the run has ended: " + err.Error()
	}
	s.health.stop(reason)
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// noteScrape marks the first scrape after the end.
func (s *consumeService) noteScrape() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		select {
		case <-s.scraped:
		default:
			close(s.scraped)
		}
	}
}

// lingerForScrape waits, after the run, for /metrics to be scraped once
// more (--metrics-linger), saying so on stderr.
func (s *consumeService) lingerForScrape() {
	if s == nil || s.linger <= 0 {
		return
	}
	s.log.Info(fmt.Sprintf("the run has ended; serving the final metrics on http://%s/metrics until they are scraped, for %s at most (--metrics-linger)", s.addr, s.linger), "addr", s.addr)
	t := time.NewTimer(s.linger)
	defer t.Stop()
	select {
	case <-s.scraped:
	case <-t.C:
	}
}

// close stops the listener (a request being served may finish within a
// second) and the consumer watch.
func (s *consumeService) close() {
	if s == nil {
		return
	}
	s.stopAll()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		_ = s.srv.Close()
	}
	<-s.served
}
