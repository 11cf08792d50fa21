package ntbring

import "github.com/goshmem/goshmem/internal/ntb"

// writePeerSpads writes words into the neighbour's scratchpads from index
// first on, the first word last: a reader that sees it (a hello's magic, a
// metadata group's busy word) sees the others.
func writePeerSpads(port ntb.Port, first int, words []uint32) error {
	for i := len(words) - 1; i >= 0; i-- {
		if err := port.PeerSpadWrite(first+i, words[i]); err != nil {
			return err
		}
	}
	return nil
}

// readSpads reads this port's scratchpads from index first on into words.
func readSpads(port ntb.Port, first int, words []uint32) error {
	for i := range words {
		v, err := port.SpadRead(first + i)
		if err != nil {
			return err
		}
		words[i] = v
	}
	return nil
}
