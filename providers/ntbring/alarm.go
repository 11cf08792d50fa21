package ntbring

import "github.com/goshmem/goshmem/internal/ntb"

// The broken-ring alarm travels in the six doorbell bits of dbAlarmMask,
// rung by a host that fails on each of its ports and rung on by every
// host that hears it. It names the host lost relative to the host that
// hears it: the value is (lost - hearer) mod n, never 0 (no alarm), so
// six bits name any host of a ring of up to 64.
//
// The hearer itself is never named: an alarm that would name it came
// the long way round from the host across the break from it, and names
// instead the host beyond the hearer in the alarm's direction (on a ring,
// the hearer's neighbour on the far side), which is the host it lost.

// alarmBits is the doorbell bits host from rings on its port on side s
// of topology t to say that host lost is lost.
func alarmBits(t topology, from int, s ntb.Side, lost int) uint64 {
	hearer := t.neighbour(from, s)
	if lost == hearer {
		lost = t.neighbour(hearer, s)
	}
	a := (lost - hearer + t.hosts) % t.hosts
	return uint64(a) << dbAlarmShift & dbAlarmMask
}

// alarmLost reads doorbell bits db that host from rang on self: whether
// they carry the alarm, and the host it names. A value that names no
// host of a ring of n (bits of another build, or garbage) names from, the
// host that rang: it is broken either way.
func alarmLost(db uint64, self, from, n int) (int, bool) {
	a := int(db & dbAlarmMask >> dbAlarmShift)
	switch {
	case a == 0:
		return 0, false
	case a >= n:
		return from, true
	}
	return (self + a) % n, true
}
