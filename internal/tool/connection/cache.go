package connection

import (
	"sync"
	"time"
)

// maxCacheEntries bounds the cache; past it the entry closest to expiry
// makes room.
const maxCacheEntries = 1024

// cache keeps discovered catalogs for ttl, per process.
type cache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	c       catalog
	expires time.Time
}

func newCache(ttl time.Duration, now func() time.Time) *cache {
	return &cache{ttl: ttl, now: now, entries: map[string]cacheEntry{}}
}

// get returns the catalog stored under key unless it expired.
func (c *cache) get(key string) (catalog, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return catalog{}, false
	}
	if !c.now().Before(e.expires) {
		delete(c.entries, key)
		return catalog{}, false
	}
	return e.c, true
}

// put stores cat under key for ttl.
func (c *cache) put(key string, cat catalog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= maxCacheEntries {
		var oldest string
		var at time.Time
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
				continue
			}
			if oldest == "" || e.expires.Before(at) {
				oldest, at = k, e.expires
			}
		}
		if len(c.entries) >= maxCacheEntries {
			delete(c.entries, oldest)
		}
	}
	c.entries[key] = cacheEntry{c: cat, expires: now.Add(c.ttl)}
}
