package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// Every registered variable of a typed kind has a default its kind's
// parser reads, so a kind the listing shows is the one the variable is
// read as. Defaults that describe where the value comes from instead of
// giving one ("(from oshrun ...)") are not values.
func TestDefaultsParseAsTheirKind(t *testing.T) {
	typed := 0
	for _, p := range core.Settings() {
		def := p.Default
		if def == "" || strings.HasPrefix(def, "(") {
			continue
		}
		var err error
		switch p.Kind {
		case core.KindBool:
			_, err = core.ParseBool(p.Env, def)
		case core.KindInt:
			_, err = core.ParseIntVar(p.Env, def, math.MinInt, math.MaxInt)
		case core.KindSize:
			_, err = core.ParseSizeVar(p.Env, def, 0, math.MaxInt64)
		case core.KindDuration:
			_, err = core.ParseDurationVar(p.Env, def, 0, time.Duration(math.MaxInt64))
		case core.KindChoice:
			_, err = p.Choice(func(string) (string, bool) { return "", false })
		default:
			continue
		}
		typed++
		require.NoError(t, err, "%s (%s) defaults to %q", p.Env, p.Kind, def)
	}
	require.NotZero(t, typed)
	for _, env := range []string{"GOSHMEM_TCP_TIMEOUT", "GOSHMEM_TCP_BUFFER", "GOSHMEM_NTBRING_SLOT_SIZE", "GOSHMEM_NTB_DEAD_AFTER",
		"GOSHMEM_TCP_SOCKET", "GOSHMEM_NTBRING_PROTOCOL", "GOSHMEM_NTBRING_BARRIER", "GOSHMEM_NTBRING_DEVICE", "GOSHMEM_NTB_MODEL",
		"GOSHMEM_NTB_SIM_MODEL"} {
		p, ok := find(env)
		require.True(t, ok, env)
		require.NotEqual(t, core.KindText, p.Kind, "%s has a typed kind", env)
	}
}

func find(env string) (core.Param, bool) {
	for _, p := range core.Settings() {
		if p.Env == env {
			return p, true
		}
	}
	return core.Param{}, false
}
