package llm

import "sync"

// Models caches one model per route for the process: a fake:script keeps
// its place in the script across turns.
type Models struct {
	providers *Providers
	mu        sync.Mutex
	byRoute   map[string]Model
}

// NewModels returns an empty cache over providers.
func NewModels(providers *Providers) *Models {
	return &Models{providers: providers, byRoute: map[string]Model{}}
}

// Model returns route's model, made once.
func (m *Models) Model(route string) (Model, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mdl, ok := m.byRoute[route]; ok {
		return mdl, nil
	}
	r, err := ParseRoute(route)
	if err != nil {
		return nil, err
	}
	mdl, err := m.providers.Model(r)
	if err != nil {
		return nil, err
	}
	m.byRoute[route] = mdl
	return mdl, nil
}
