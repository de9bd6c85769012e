package budget

// ConvsHeld is how many conversations' spend l keeps in memory.
func ConvsHeld(l *Ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.convs.len()
}

// DaysHeld is how many days' sums l keeps in memory.
func DaysHeld(l *Ledger) (global, agent int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.globalDay), len(l.agentDay)
}
