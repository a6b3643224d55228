package webhook

import (
	"sync"
	"time"
)

// maxCached bounds the subscriptions a cache holds; when full, it starts
// over (a cold cache costs one read per subscription).
const maxCached = 10000

// subscriptionCache keeps delivery targets for a short time. A nil cache
// holds nothing.
type subscriptionCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	target target
	until  time.Time
}

// newSubscriptionCache returns a cache of ttl, or nil (no cache) for ttl <= 0.
func newSubscriptionCache(ttl time.Duration) *subscriptionCache {
	if ttl <= 0 {
		return nil
	}
	return &subscriptionCache{ttl: ttl, entries: map[string]cached{}}
}

func cacheKey(workspaceID, subID string) string { return workspaceID + "/" + subID }

func (c *subscriptionCache) get(workspaceID, subID string) (target, bool) {
	if c == nil {
		return target{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[cacheKey(workspaceID, subID)]
	if !ok || time.Now().After(e.until) {
		return target{}, false
	}
	return e.target, true
}

func (c *subscriptionCache) put(workspaceID, subID string, t target) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCached {
		clear(c.entries)
	}
	c.entries[cacheKey(workspaceID, subID)] = cached{target: t, until: time.Now().Add(c.ttl)}
}

func (c *subscriptionCache) forget(workspaceID, subID string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, cacheKey(workspaceID, subID))
}
