package ntb

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSideText(t *testing.T) {
	for _, s := range []Side{Left, Right, Up, Down} {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var back Side
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, s, back)
	}
	require.Equal(t, `"left"`, func() string { b, _ := json.Marshal(Left); return string(b) }())
	require.Equal(t, `"down"`, func() string { b, _ := json.Marshal(Down); return string(b) }())
	var s Side
	require.ErrorContains(t, s.UnmarshalText([]byte("north")), `allowed "left", "right", "up" or "down"`)
	require.Equal(t, "side(7)", Side(7).String())
}
