package core

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDescribePEs(t *testing.T) {
	vals := make([]int, 20)
	require.Empty(t, DescribePEs(vals, func(v int) string { return fmt.Sprint(v) }), "nothing differs")
	vals[3] = 1
	require.Equal(t, "0 on PEs 0, 1, 2, 4, 5, 6, 7, 8 and 11 more; 1 on PE 3",
		DescribePEs(vals, func(v int) string { return fmt.Sprint(v) }))
}

func regionMsg(size int64, idx uint32) []byte {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(nil, uint64(size)), idx)
}

func TestRegionsAgree(t *testing.T) {
	require.NoError(t, regionsAgree([][]byte{regionMsg(64, 1), regionMsg(64, 1)}, 64))
	for name, c := range map[string]struct {
		all  [][]byte
		want string
	}{
		"malformed": {[][]byte{regionMsg(8, 0), {1, 2}}, "PE 1 sent a malformed region size exchange of 2 bytes"},
		"order":     {[][]byte{regionMsg(8, 0), regionMsg(8, 1)}, "how many regions they created before (0 on PE 0; 1 on PE 1)"},
		"sizes":     {[][]byte{regionMsg(8, 0), regionMsg(16, 0), regionMsg(8, 0)}, "different sizes (8 on PEs 0, 2; 16 on PE 1)"},
		"too big":   {[][]byte{regionMsg(65, 0)}, "region of 65 bytes: allowed 0 to 64"},
		"negative":  {[][]byte{regionMsg(-1, 0)}, "region of -1 bytes"},
	} {
		err := regionsAgree(c.all, 64)
		require.ErrorIs(t, err, ErrInvalid, name)
		require.ErrorContains(t, err, c.want, name)
	}
}
