package team

import "slices"

// SetMaxTeams lowers r's bound on kept folds for a test.
func SetMaxTeams(r *Runtime, n int) {
	r.mu.Lock()
	r.maxTeams = n
	r.mu.Unlock()
}

// Kept are the teams whose folds r keeps, sorted.
func Kept(r *Runtime) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id := range r.teams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
