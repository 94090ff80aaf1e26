package app

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attack run: 512 push streams from one Bearer token took every
// connection slot (a connection serving a stream is never shed), so
// /healthz timed out at 12 s and another operator's sign-in at 60 s. One
// session now holds at most --max-streams-per-session (8) streams: of 500
// from one sign-in, on a UI capped at 500 connections, the rest are
// refused with 429 and their connections left idle, to be shed for new
// ones; /healthz and another operator's sign-in are answered within a
// second.
func TestServeAnswersThrough500StreamsOfOneSession(t *testing.T) {
	t.Parallel()
	const crowd = 500
	ui, _ := startServeForCrowd(t, map[string]string{}, "--max-conns", fmt.Sprint(crowd))
	quick := &http.Client{Timeout: time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn := func(name string) (*http.Response, error) {
		return quick.PostForm("http://"+ui+"/signin", url.Values{"name": {name}, "token": {"operator-secret-for-tests"}})
	}
	resp, err := signIn("alice")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var cookie string
	for _, c := range resp.Cookies() {
		if c.Name == "aepforms_session" {
			cookie = c.Name + "=" + c.Value
		}
	}
	require.NotEmpty(t, cookie)

	status := map[int]int{}
	for range crowd {
		conn, err := net.Dial("tcp", ui)
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = fmt.Fprintf(conn, "GET /push HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nCookie: %s\r\n\r\n", ui, cookie)
		require.NoError(t, err)
		r, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "every stream is answered")
		status[r.StatusCode]++
	}
	assert.Equal(t, map[int]int{http.StatusOK: 8, http.StatusTooManyRequests: crowd - 8}, status)

	h, err := quick.Get("http://" + ui + "/healthz")
	require.NoError(t, err, "/healthz within a second")
	h.Body.Close()
	assert.Equal(t, http.StatusOK, h.StatusCode)
	bob, err := signIn("bob")
	require.NoError(t, err, "another operator's sign-in within a second")
	bob.Body.Close()
	assert.Equal(t, http.StatusSeeOther, bob.StatusCode)
	assert.True(t, strings.HasPrefix(bob.Header.Get("Set-Cookie"), "aepforms_session="))
}
