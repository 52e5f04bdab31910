// SPDX-License-Identifier: Apache-2.0

// The tests' fixture: a real `frond serve` ($FROND_BIN) on a free
// loopback port in a temp dir, stopped when the test ends, passed or
// failed, and killed with the test process if that dies first.

package frond

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type server struct {
	t      *testing.T
	dir    string
	store  string
	port   int
	args   []string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
}

func frondBin(t *testing.T) string {
	bin := os.Getenv("FROND_BIN")
	if bin == "" {
		t.Fatal("FROND_BIN is not set: the path of the frond binary under test")
	}
	return bin
}

// freePort draws a free loopback port below the kernel's ephemeral
// range, as the other suites do, so that no outgoing connection takes it
// between the draw and the bind.
func freePort(t *testing.T) int {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &lo)
	}
	top := lo - 1
	if top > 32767 {
		top = 32767
	}
	// Go 1.19's global source starts from the same seed in every process.
	rnd := rand.New(rand.NewSource(time.Now().UnixNano() ^ int64(os.Getpid())<<20))
	for i := 0; i < 200; i++ {
		p := top - 12000 + rnd.Intn(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

// newStore makes a SQLite store with tags (name -> step) in a temp dir.
func newStore(t *testing.T, tags map[string]int) string {
	dir := t.TempDir()
	store := "sqlite://" + filepath.Join(dir, "frond.db")
	for name, step := range tags {
		out, err := exec.Command(frondBin(t), "tag", "create", name, "--step",
			fmt.Sprint(step), "--store", store).CombinedOutput()
		if err != nil {
			t.Fatalf("tag create %s: %v: %s", name, err, out)
		}
	}
	return store
}

// startServer starts a frond serve on store with extra flags.
func startServer(t *testing.T, store string, extra ...string) *server {
	s := &server{t: t, dir: t.TempDir(), store: store, port: freePort(t)}
	s.args = append([]string{"serve", "--listen",
		fmt.Sprintf("127.0.0.1:%d", s.port), "--resp-listen", "off",
		"--store", store, "--data-dir", s.dir, "--threads", "1"}, extra...)
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) url() string { return fmt.Sprintf("http://127.0.0.1:%d", s.port) }

// serverEnv is the test's environment without the client's FROND_SERVERS
// (a test may set it) and with sanitizer reports written to the dir.
func (s *server) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "FROND_SERVERS=") ||
			strings.HasPrefix(kv, "ASAN_OPTIONS=") ||
			strings.HasPrefix(kv, "UBSAN_OPTIONS=") {
			continue
		}
		env = append(env, kv)
	}
	opt := func(name string) string {
		v := os.Getenv(name)
		if v != "" {
			v += ":"
		}
		return name + "=" + v + "log_path=" + filepath.Join(s.dir, "sanitizer")
	}
	return append(env, opt("ASAN_OPTIONS"), opt("UBSAN_OPTIONS"))
}

// start starts the server (again, after stop or kill, on the same port
// and dir) and waits until it answers /readyz.
func (s *server) start() {
	t := s.t
	var err error
	s.log, err = os.OpenFile(filepath.Join(s.dir, "server.log"),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(frondBin(t), s.args...)
	s.cmd.Dir, s.cmd.Env = s.dir, s.env()
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func(c *exec.Cmd) { c.Wait(); close(exited) }(s.cmd)
	s.exited = exited
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("frond serve exited at start: %s", s.output())
		default:
		}
		r, err := http.Get(s.url() + "/readyz")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("frond serve not ready after 30 s: %s", s.output())
}

func (s *server) output() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b)
}

// signal sends sig and waits up to 15 s for the exit (then SIGKILL).
func (s *server) signal(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		s.t.Errorf("frond serve did not exit within 15 s of %v", sig)
	}
	s.cmd = nil
	s.log.Close()
	s.checkSanitizer()
}

func (s *server) kill() { s.signal(syscall.SIGKILL) }
func (s *server) stop() { s.signal(syscall.SIGTERM) }

// checkSanitizer fails the test on any AddressSanitizer, LeakSanitizer
// or UBSan report the server wrote.
func (s *server) checkSanitizer() {
	files, _ := filepath.Glob(filepath.Join(s.dir, "sanitizer.*"))
	files = append(files, filepath.Join(s.dir, "server.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, m := range []string{"ERROR: AddressSanitizer",
			"ERROR: LeakSanitizer", "runtime error:"} {
			if i := strings.Index(string(b), m); i >= 0 {
				s.t.Errorf("sanitizer report from frond serve (%s):\n%s", f,
					string(b[i:]))
				break
			}
		}
	}
}

// namesStore says whether the server at url names its store in
// GET /v1/layout ("store"): a client listing several servers takes
// ranges only from servers that do, and refuses the others with
// STORE_MISMATCH.
func namesStore(t *testing.T, url string) bool {
	resp, err := http.Get(url + "/v1/layout")
	if err != nil {
		t.Fatalf("layout of %s: %v", url, err)
	}
	defer resp.Body.Close()
	var l struct {
		Store *string `json:"store"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatalf("layout of %s: %v", url, err)
	}
	return l.Store != nil
}

// refusedUnnamed checks, for a server that does not name its store, that
// a tag of a client listing it among others is refused with
// STORE_MISMATCH, and says so; false when the server names its store.
func refusedUnnamed(t *testing.T, url string, tag *Tag) bool {
	t.Helper()
	if namesStore(t, url) {
		return false
	}
	_, err := tag.Next()
	wantCode(t, err, CodeStoreMismatch, 0)
	t.Logf("%s does not name its store: refused", url)
	return true
}
