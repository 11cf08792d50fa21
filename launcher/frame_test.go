package launcher

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func TestFramesRoundTrip(t *testing.T) {
	var b bytes.Buffer
	fw := &frameWriter{w: &b}
	big := bytes.Repeat([]byte("x"), maxFrame+10)
	require.NoError(t, fw.write(frameStarted, 3, []byte("1234")))
	require.NoError(t, fw.write(frameStdout, 3, big))
	require.NoError(t, fw.write(frameExit, 3, exitPayload(-1, true, "was killed")))
	require.NoError(t, fw.write(frameDone, 0, nil))

	br := bufio.NewReader(&b)
	var buf []byte
	var got []frame
	var out []byte
	for {
		f, nb, err := readFrame(br, buf)
		buf = nb
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if f.kind == frameStdout {
			out = append(out, f.payload...)
		}
		f.payload = append([]byte(nil), f.payload...)
		got = append(got, f)
	}
	require.Len(t, got, 5, "output longer than a frame is cut in two")
	require.Equal(t, big, out)
	require.Equal(t, frameStarted, got[0].kind)
	require.Equal(t, "1234", string(got[0].payload))
	code, sig, what, err := parseExit(got[3].payload)
	require.NoError(t, err)
	require.Equal(t, -1, code)
	require.True(t, sig)
	require.Equal(t, "was killed", what)
	require.Equal(t, frameDone, got[4].kind)
}

func TestBadFramesAreRefused(t *testing.T) {
	for name, in := range map[string][]byte{
		"kind 0":       {0, 0, 0, 0, 0, 0, 0, 0, 0},
		"kind 9":       {9, 0, 0, 0, 0, 0, 0, 0, 0},
		"global short": {6, 0, 0, 0, 0, 0, 0, 0, 1, 0},
		"too long":     {2, 0, 0, 0, 0, 0, 1, 0, 1},
		"cut header":   {2, 0, 0},
		"cut payload":  {2, 0, 0, 0, 0, 0, 0, 0, 5, 'a'},
		"long stopped": {7, 0, 0, 0, 1, 0, 0, 0, 2, 1, 0},
	} {
		_, _, err := readFrame(bufio.NewReader(bytes.NewReader(in)), nil)
		require.ErrorIs(t, err, core.ErrInvalid, name)
	}
	_, _, _, err := parseExit([]byte{0, 0, 0, 1, 2})
	require.ErrorIs(t, err, core.ErrInvalid)
}

// FuzzReadFrame: whatever an agent (or a stranger answering ssh's place)
// sends, the reader returns frames within bounds or an error, never
// panics, never holds more than one frame.
func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	fw := &frameWriter{w: &b}
	_ = fw.write(frameStarted, 1, []byte("42"))
	_ = fw.write(frameExit, 1, exitPayload(3, false, "exited with status 3"))
	_ = fw.write(frameStopped, 1, stoppedPayload(true))
	f.Add(b.Bytes())
	f.Add([]byte{4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		var buf []byte
		for {
			fr, nb, err := readFrame(br, buf)
			buf = nb
			if err != nil {
				return
			}
			if len(fr.payload) > maxFrame || fr.kind < frameStarted || fr.kind > frameStopped {
				t.Fatalf("frame out of bounds: kind %d, %d bytes", fr.kind, len(fr.payload))
			}
			if fr.kind == frameExit {
				_, _, _, _ = parseExit(fr.payload)
			}
		}
	})
}
