package ntb

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSideText(t *testing.T) {
	for _, s := range []Side{Left, Right} {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var back Side
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, s, back)
	}
	require.Equal(t, `"left"`, func() string { b, _ := json.Marshal(Left); return string(b) }())
	var s Side
	require.ErrorContains(t, s.UnmarshalText([]byte("up")), `allowed "left" or "right"`)
}
