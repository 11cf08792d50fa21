package main

import (
	"strings"
	"testing"
)

func TestExtraProcs(t *testing.T) {
	for _, c := range []struct {
		v    string
		set  bool
		want int
	}{{"", false, extraProcsDefault}, {"", true, extraProcsDefault}, {"0", true, 0}, {"1", true, 1}, {"3", true, 3}, {"64", true, 64}} {
		n, err := extraProcs(c.v, c.set)
		if err != nil || n != c.want {
			t.Errorf("extraProcs(%q, %v) = %d, %v; want %d", c.v, c.set, n, err, c.want)
		}
	}
	for _, v := range []string{"-1", "65", "two", "1.5"} {
		_, err := extraProcs(v, true)
		if err == nil || !strings.Contains(err.Error(), extraProcsEnv) || !strings.Contains(err.Error(), "from 0 to 64") {
			t.Errorf("extraProcs(%q) = %v; want an error naming %s and what it takes", v, err, extraProcsEnv)
		}
	}
}
