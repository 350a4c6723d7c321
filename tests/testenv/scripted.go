package testenv

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// scripted is the part every scripted model API shares: a listener on
// 127.0.0.1 that stops when the test ends, the log of the requests it saw,
// and the problems it found in them. Its script runs one request at a
// time (scriptMu), so that a script may keep state.
type scripted struct {
	name string // for the test's log, e.g. "the fake Gemini API"
	srv  *httptest.Server

	scriptMu sync.Mutex
	mu       sync.Mutex
	requests int
	paths    []string
	problems []string
}

// start serves h on a port of 127.0.0.1 until t ends.
func (s *scripted) start(t testing.TB, name string, h http.HandlerFunc) {
	t.Helper()
	s.name = name
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("%s cannot listen: %v", name, err)
	}
	s.srv = httptest.NewUnstartedServer(h)
	s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	t.Cleanup(s.srv.Close)
}

// record notes a request's method and path in the log.
func (s *scripted) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
}

// next counts one request the script answers and returns its number, from 1.
func (s *scripted) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	return s.requests
}

func (s *scripted) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// Check fails the test on anything the API found wrong, and shows the
// requests it saw.
func (s *scripted) Check(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("%s got %d requests: %v", s.name, s.requests, s.paths)
	if len(s.problems) > 0 {
		t.Errorf("%s found problems: %v\nrequests: %v", s.name, s.problems, s.paths)
	}
}

// Count is how many requests the script has been asked to answer.
func (s *scripted) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}
