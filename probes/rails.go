package probes

// RailPairs pairs local device i with peer device i, in the order the plan
// lists each node's compute interfaces, so a bad NIC or cable shows up on
// one rail instead of on the whole node. When the counts differ only the
// common prefix is paired: the extra devices have no counterpart to test
// against, and a plan check reports the mismatch separately.
func RailPairs(localDevices, peerDevices []string) [][2]string {
	n := min(len(localDevices), len(peerDevices))
	pairs := make([][2]string, 0, n)
	for i := range n {
		pairs = append(pairs, [2]string{localDevices[i], peerDevices[i]})
	}
	return pairs
}
