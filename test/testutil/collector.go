package testutil

import "sync"

// Collector gathers the values other goroutines hand a test (what a
// source or a mux emits, say). The zero value is ready to use.
type Collector[T any] struct {
	mu  sync.Mutex
	all []T
}

// Add records v.
func (c *Collector[T]) Add(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, v)
}

// All is a copy of what was recorded, oldest first.
func (c *Collector[T]) All() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.all...)
}

// Len is how many values were recorded.
func (c *Collector[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.all)
}

// Take returns what was recorded and forgets it.
func (c *Collector[T]) Take() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := c.all
	c.all = nil
	return all
}
