// Package pgtest starts a throwaway PostgreSQL server for tests, from
// the binaries of Debian's server package (postgresql, under
// /usr/lib/postgresql/*/bin): a cluster made by initdb in a temp
// directory, listening on a free loopback port with its socket inside
// that directory, stopped and removed after. PostgreSQL refuses to run
// as root, so as root the cluster belongs to, and runs as, the postgres
// user the package creates (setpriv).
//
// One cluster serves a test package: Need starts it on first use and
// Main stops it when the package's tests end; each test takes its own
// database (NewDatabase). Without the binaries a test skips with a
// message, and fails under CI=true, where .ci/run installs them.
package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrMissing: no PostgreSQL server binaries on this machine.
var ErrMissing = errors.New("pgtest: no PostgreSQL server found: install Debian's postgresql package (apt-get install -y postgresql) or set AEPFORMS_PG_BIN to the directory of initdb and postgres")

// startTimeout bounds initdb and the server's start: a deadline on
// events (the server's "ready" line), not a wait.
const startTimeout = 2 * time.Minute

// Cluster is a running throwaway server.
type Cluster struct {
	dir  string // the temp directory: data/, sock/, removed by Stop
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the server exits
	log  *tail

	mu    sync.Mutex
	admin *pgx.Conn
	n     int
}

// Start makes and starts a cluster. The caller must Stop it.
func Start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	as, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempBase(as), "aepforms-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	fail := func(err error) (*Cluster, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, "sock"), 0o700); err != nil {
		return fail(err)
	}
	if as != nil {
		for _, p := range []string{dir, filepath.Join(dir, "sock")} {
			if err := os.Chown(p, as.uid, as.gid); err != nil {
				return fail(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	initdb := as.command(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"),
		"-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("pgtest: initdb: %w\n%s", err, out))
	}
	// A port free a moment ago may be taken before the server binds it:
	// try another.
	for try := 0; ; try++ {
		err = c.start(ctx, bin, as)
		if err == nil {
			break
		}
		if try == 2 || !strings.Contains(err.Error(), "could not bind") {
			return fail(err)
		}
	}
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c.admin = admin
	return c, nil
}

// start runs the server on a free port and waits for its "ready" line.
func (c *Cluster) start(ctx context.Context, bin string, as *account) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.port = port
	cmd := as.command(context.Background(), filepath.Join(bin, "postgres"), "-D", filepath.Join(c.dir, "data"),
		"-k", filepath.Join(c.dir, "sock"), "-h", "127.0.0.1", "-p", strconv.Itoa(port),
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: postgres: %w", err)
	}
	c.cmd, c.done, c.log = cmd, make(chan struct{}), &tail{}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			c.log.add(sc.Text())
			if strings.Contains(sc.Text(), "ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
		_ = cmd.Wait()
		close(c.done)
	}()
	select {
	case <-ready:
		return nil
	case <-c.done:
		return fmt.Errorf("pgtest: postgres exited before it was ready:\n%s", c.log)
	case <-ctx.Done():
		c.kill()
		return fmt.Errorf("pgtest: postgres not ready within %v:\n%s", startTimeout, c.log)
	}
}

// URL is the connection URL of database db, over TCP on loopback.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// NewDatabase creates an empty database for tb and returns its URL. It
// is left for Stop to remove with the cluster.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	name := "t" + strconv.Itoa(c.n)
	if _, err := c.admin.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	return c.URL(name)
}

// Stop stops the server and removes its directory.
func (c *Cluster) Stop() {
	if c.admin != nil {
		_ = c.admin.Close(context.Background())
	}
	if c.cmd != nil && c.cmd.Process != nil {
		// SIGINT is PostgreSQL's fast shutdown: it ends the sessions,
		// checkpoints and exits.
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			c.kill()
		}
	}
	_ = os.RemoveAll(c.dir)
}

func (c *Cluster) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// tempBase is where the cluster's directory goes: the temp directory,
// unless the server's account could not reach it (a $TMPDIR under
// root's home), then /tmp.
func tempBase(as *account) string {
	base := os.TempDir()
	if as == nil {
		return base
	}
	for d := base; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

// account is the user the server runs as when this process is root.
type account struct{ uid, gid int }

// runAs is the postgres user when running as root, nil otherwise (the
// server runs as this process's user).
func runAs() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, PostgreSQL must run as another user, and there is no postgres user (Debian's postgresql package makes it): %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, err
	}
	return &account{uid: uid, gid: gid}, nil
}

// command runs name as the account (setpriv, so the process is the
// server itself and the signals reach it), killed when this process dies.
func (a *account) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if a == nil {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	pre := []string{"--reuid=" + strconv.Itoa(a.uid), "--regid=" + strconv.Itoa(a.gid), "--clear-groups", "--pdeathsig=KILL", "--", name}
	cmd := exec.CommandContext(ctx, "setpriv", append(pre, args...)...)
	// The account cannot enter root's working directory.
	cmd.Dir = "/"
	return cmd
}

// binDir finds initdb and postgres: $AEPFORMS_PG_BIN, else the newest
// /usr/lib/postgresql/N/bin.
func binDir() (string, error) {
	if d := os.Getenv("AEPFORMS_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err != nil {
			return "", fmt.Errorf("%w (AEPFORMS_PG_BIN=%s: %v)", ErrMissing, d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	if len(dirs) == 0 {
		return "", ErrMissing
	}
	return filepath.Dir(dirs[len(dirs)-1]), nil
}

// version is N of /usr/lib/postgresql/N/bin/postgres.
func version(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the server log's last lines, for the messages of a failed
// start.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 40 {
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

var (
	shared   *Cluster
	startErr error
	once     sync.Once
)

// Need returns the test package's cluster, starting it on first use. No
// PostgreSQL on this machine: tb is skipped with a message, or fails
// under CI=true. Any other failure to start fails tb.
func Need(tb testing.TB) *Cluster {
	tb.Helper()
	once.Do(func() { shared, startErr = Start() })
	switch {
	case errors.Is(startErr, ErrMissing) && os.Getenv("CI") != "true":
		tb.Skipf("skipped: %v", startErr)
	case errors.Is(startErr, ErrMissing):
		tb.Fatalf("CI=true and PostgreSQL is missing: %v", startErr)
	case startErr != nil:
		tb.Fatal(startErr)
	}
	return shared
}

// Main runs a test package's tests (call it from TestMain) and stops
// its cluster after them, if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}
