package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A browser that leaves while its page is rendered (a closed tab, a
// screenshot tool) is logged at debug, not as an error on our side; any
// other failure is an error.
func TestInternalErrorOfALeftBrowserIsNotAnError(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := &site{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	left := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	p.internalError(httptest.NewRecorder(), left, fmt.Errorf("render: %w", context.Canceled))
	assert.Contains(t, buf.String(), "level=DEBUG")
	assert.NotContains(t, buf.String(), "level=ERROR", "a browser that left")

	buf.Reset()
	w := httptest.NewRecorder()
	p.internalError(w, httptest.NewRequest(http.MethodGet, "/", nil), errors.New("disk on fire"))
	assert.Contains(t, buf.String(), "level=ERROR")
	assert.Equal(t, http.StatusInternalServerError, w.Code)
}
