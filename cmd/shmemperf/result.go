package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// result is one figure: a line of -json output. Exactly one of the three
// metric fields is set.
type result struct {
	Test          string   `json:"test"`
	Provider      string   `json:"provider"`
	NPEs          int      `json:"npes"`
	Size          int      `json:"size"`
	LatencyUS     *float64 `json:"latency_us,omitempty"`
	BandwidthMBps *float64 `json:"bandwidth_MBps,omitempty"`
	RateMops      *float64 `json:"rate_Mops,omitempty"`
}

func newResult(t test, provider string, npes, size int, v float64) result {
	r := result{Test: t.name, Provider: provider, NPEs: npes, Size: size}
	switch t.metric {
	case latency:
		r.LatencyUS = &v
	case bandwidth:
		r.BandwidthMBps = &v
	case rate:
		r.RateMops = &v
	}
	return r
}

// value is the result's figure and its metric.
func (r result) value() (float64, metric) {
	switch {
	case r.LatencyUS != nil:
		return *r.LatencyUS, latency
	case r.BandwidthMBps != nil:
		return *r.BandwidthMBps, bandwidth
	}
	return *r.RateMops, rate
}

// check reports what makes a decoded result unusable.
func (r result) check() error {
	n := 0
	for _, p := range []*float64{r.LatencyUS, r.BandwidthMBps, r.RateMops} {
		if p != nil {
			n++
			if math.IsNaN(*p) || math.IsInf(*p, 0) || *p < 0 {
				return fmt.Errorf("figure %v is not a finite non-negative number", *p)
			}
		}
	}
	switch {
	case n != 1:
		return fmt.Errorf("%d of latency_us, bandwidth_MBps and rate_Mops are set; exactly one must be", n)
	case r.Test == "" || r.Provider == "":
		return errors.New("test and provider must be non-empty")
	case r.NPEs < 1:
		return fmt.Errorf("npes %d is below 1", r.NPEs)
	case r.Size < 0:
		return fmt.Errorf("size %d is negative", r.Size)
	}
	return nil
}

// readResults decodes JSON lines as -json writes them; blank lines are
// skipped. name labels errors.
func readResults(name string, in io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var r result
		err := dec.Decode(&r)
		if err == nil && dec.More() {
			err = errors.New("more than one JSON value on the line")
		}
		if err == nil {
			err = r.check()
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w; want one object per line with the keys test, provider, npes, size and one of latency_us, bandwidth_MBps, rate_Mops", name, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// writeJSON writes r as one line.
func writeJSON(out io.Writer, r result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}

// tableHeader and tableRow print the default, human-readable output.
func tableHeader(out io.Writer, provider string, npes int) {
	fmt.Fprintf(out, "# shmemperf: %s, %d PEs\n", provider, npes)
	fmt.Fprintf(out, "%-18s %8s %14s  %s\n", "test", "size", "figure", "unit")
}

// tableUnavailable prints the row of a test package shmem has no routine
// for.
func tableUnavailable(out io.Writer, t test) {
	fmt.Fprintf(out, "%-18s %8s %14s  %s\n", t.name, "-", "-", "unavailable")
}

func tableRow(out io.Writer, r result) {
	v, m := r.value()
	size := formatSize(r.Size)
	if r.Size == 0 {
		size = "-"
	}
	fmt.Fprintf(out, "%-18s %8s %14.3f  %s\n", r.Test, size, v, m.unit())
}
