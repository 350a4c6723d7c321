package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTelemetryKeys(t *testing.T) {
	def, err := Load(LoadOptions{RepoRoot: repo(t, "")})
	require.NoError(t, err)
	assert.Equal(t, Telemetry{OTLPEndpoint: "", Timeout: 5 * time.Second}, def.Telemetry)

	cfg, err := Load(LoadOptions{RepoRoot: repo(t, "telemetry:\n  otlp_endpoint: http://collector:4318\n"),
		Environ: []string{"RUNR_TELEMETRY_TIMEOUT=1s"}})
	require.NoError(t, err)
	assert.Equal(t, Telemetry{OTLPEndpoint: "http://collector:4318", Timeout: time.Second}, cfg.Telemetry)
	// Where telemetry goes is not part of what a resume compares.
	assert.Equal(t, def.Hash(), cfg.Hash())

	msg := loadErr(t, LoadOptions{RepoRoot: repo(t, "telemetry:\n  timeout: soon\n")})
	assert.Contains(t, msg, "telemetry.timeout")
}
