package llm

import "sync"

// Models hands out the model behind a route ("provider:model"): the
// home's providers (ModelCache), the budget ledger over them
// (budget.Ledger.Models), a replay's recorded replies or a test's
// scripted model. It is the one seam every model call goes through.
type Models interface {
	Model(route string) (Model, error)
}

// ModelsFunc is a function as Models.
type ModelsFunc func(route string) (Model, error)

// Model is f(route).
func (f ModelsFunc) Model(route string) (Model, error) { return f(route) }

// ModelCache caches one model per route for the process: a fake:script
// keeps its place in the script across turns.
type ModelCache struct {
	providers *Providers
	mu        sync.Mutex
	byRoute   map[string]Model
}

// NewModelCache returns an empty cache over providers.
func NewModelCache(providers *Providers) *ModelCache {
	return &ModelCache{providers: providers, byRoute: map[string]Model{}}
}

// Model returns route's model, made once.
func (m *ModelCache) Model(route string) (Model, error) {
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
