package app

import "flag"

// logConfig is the log's format and level; newLogger reads them.
type logConfig struct {
	logFormat string
	logLevel  string
}

func (c *logConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.StringVar(&c.logFormat, "log-format", e.str("AEPFORMS_LOG_FORMAT", "text"), "log format: text or json (env AEPFORMS_LOG_FORMAT)")
	fs.StringVar(&c.logLevel, "log-level", e.str("AEPFORMS_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env AEPFORMS_LOG_LEVEL)")
}

func (c *logConfig) check(*flag.FlagSet, envDefaults) error { return nil }
