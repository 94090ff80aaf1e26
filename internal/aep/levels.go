package aep

import "fmt"

// Capture is an event's capture level, ordered none < metadata < redacted < full.
type Capture int

// Capture levels.
const (
	CaptureNone Capture = iota
	CaptureMetadata
	CaptureRedacted
	CaptureFull
)

var captureNames = [...]string{"none", "metadata", "redacted", "full"}

// String returns the level's wire name.
func (c Capture) String() string {
	if c < 0 || int(c) >= len(captureNames) {
		return fmt.Sprintf("capture(%d)", int(c))
	}
	return captureNames[c]
}

// ParseCapture parses a wire name; "" is the default, metadata.
func ParseCapture(s string) (Capture, error) {
	if s == "" {
		return CaptureMetadata, nil
	}
	for i, n := range captureNames {
		if n == s {
			return Capture(i), nil
		}
	}
	return CaptureMetadata, fmt.Errorf("aep: unknown capture level %q", s)
}

// Severity is an event's severity, ordered debug < info < notice < warning < error < critical.
type Severity int

// Severities.
const (
	SeverityDebug Severity = iota
	SeverityInfo
	SeverityNotice
	SeverityWarning
	SeverityError
	SeverityCritical
)

var severityNames = [...]string{"debug", "info", "notice", "warning", "error", "critical"}

// String returns the severity's wire name.
func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity parses a wire name; "" is the default, info.
func ParseSeverity(s string) (Severity, error) {
	if s == "" {
		return SeverityInfo, nil
	}
	for i, n := range severityNames {
		if n == s {
			return Severity(i), nil
		}
	}
	return SeverityInfo, fmt.Errorf("aep: unknown severity %q", s)
}
