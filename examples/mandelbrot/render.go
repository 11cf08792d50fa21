package main

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"image"
	"image/png"
	"math"
	"os"
	"strings"
)

// scene is the image to compute: its size in pixels and the iterations
// after which a point counts as in the set. It spans the real axis from
// -2.2 to 0.8 and the imaginary axis from -1.2 to 1.2.
type scene struct {
	width, height, iters int
}

// rows computes rows y0 to y1 (excluded) into dst, one byte a pixel:
// black in the set, lighter the longer a point outside it takes to escape.
func (s scene) rows(dst []uint8, y0, y1 int) {
	for y := y0; y < y1; y++ {
		im := -1.2 + 2.4*(float64(y)+0.5)/float64(s.height)
		line := dst[(y-y0)*s.width : (y-y0+1)*s.width]
		for x := range line {
			re := -2.2 + 3.0*(float64(x)+0.5)/float64(s.width)
			line[x] = s.shade(s.escape(re, im))
		}
	}
}

// shade is the grey of a point that escapes after n iterations: black for
// the set itself (n = s.iters), brighter towards its edge.
func (s scene) shade(n int) uint8 {
	if n == s.iters {
		return 0
	}
	return uint8(255 * math.Sqrt(float64(n)/float64(s.iters)))
}

// escape returns how many iterations of z = z² + c, from z = 0, keep |z|
// within 2, up to s.iters.
func (s scene) escape(re, im float64) int {
	var zr, zi float64
	for i := range s.iters {
		if zr*zr+zi*zi > 4 {
			return i
		}
		zr, zi = zr*zr-zi*zi+re, 2*zr*zi+im
	}
	return s.iters
}

// checksum is the 64-bit FNV-1a hash of the image.
func checksum(img []uint8) uint64 {
	h := fnv.New64a()
	h.Write(img)
	return h.Sum64()
}

// write saves the image as a binary PGM or, for a name ending in .png, a PNG.
func (s scene) write(name string, img []uint8) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if strings.HasSuffix(name, ".png") {
		err = png.Encode(bw, &image.Gray{Pix: img, Stride: s.width, Rect: image.Rect(0, 0, s.width, s.height)})
	} else {
		_, err = fmt.Fprintf(bw, "P5\n%d %d\n255\n", s.width, s.height)
		if err == nil {
			_, err = bw.Write(img)
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
