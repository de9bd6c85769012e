package budget

// ConvsHeld is how many conversations' spend l keeps in memory.
func ConvsHeld(l *Ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.convs.len()
}
