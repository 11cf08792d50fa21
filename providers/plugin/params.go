package plugin

import (
	"time"

	"github.com/goshmem/goshmem/core"
)

// Defaults of the host's own parameters, which every plugin provider has
// besides the wrapped provider's.
const (
	defaultTimeout = 30 * time.Second
	defaultStaging = 4 << 20
	minStaging     = 4 << 10
	maxStaging     = 1 << 30
)

func paramTimeout(name string) core.Param {
	return core.NewParam(name, "TIMEOUT", defaultTimeout.String(),
		"longest wait for the plugin's answer to one operation; a plugin that takes longer is reported hung (its start is bounded by "+EnvStartTimeout+")")
}

func paramStaging(name string) core.Param {
	return core.NewParam(name, "STAGING", core.FormatSize(defaultStaging),
		"size of each endpoint's staging area, shared with the plugin process, through which puts and gets pass")
}

func pluginParams(name string) []core.Param {
	return []core.Param{paramTimeout(name), paramStaging(name)}
}

// settings are the host's parameters as a job sets them.
type settings struct {
	start   time.Duration // GOSHMEM_PLUGIN_START_TIMEOUT
	timeout time.Duration
	staging int
}

func readSettings(cfg *core.Config, name string) (settings, error) {
	var s settings
	var err error
	if s.start, err = startTimeout(cfg.Lookup); err != nil {
		return s, err
	}
	if s.timeout, err = cfg.Duration(paramTimeout(name)); err != nil {
		return s, err
	}
	p := paramStaging(name)
	n, err := core.ParseSizeVar(p.Env, cfg.Value(p), minStaging, maxStaging)
	s.staging = int(n)
	return s, err
}
