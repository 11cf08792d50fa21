package main

import (
	"strings"
	"testing"

	"github.com/goshmem/goshmem/capi/cenv"
)

func TestExtraProcs(t *testing.T) {
	env := func(v string, set bool) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == cenv.ExtraProcs.Env {
				return v, set
			}
			return "", false
		}
	}
	for _, c := range []struct {
		v    string
		set  bool
		want int
	}{{"", false, 0}, {"", true, 0}, {"0", true, 0}, {"1", true, 1}, {"3", true, 3}, {"64", true, 64}} {
		n, err := extraProcs(env(c.v, c.set))
		if err != nil || n != c.want {
			t.Errorf("extraProcs(%q, %v) = %d, %v; want %d", c.v, c.set, n, err, c.want)
		}
	}
	for _, v := range []string{"-1", "65", "two", "1.5"} {
		_, err := extraProcs(env(v, true))
		if err == nil || !strings.Contains(err.Error(), cenv.ExtraProcs.Env) || !strings.Contains(err.Error(), "from 0 to 64") {
			t.Errorf("extraProcs(%q) = %v; want an error naming %s and what it takes", v, err, cenv.ExtraProcs.Env)
		}
	}
}
