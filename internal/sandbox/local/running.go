package local

import "sync"

// running records, process-wide, the process groups of the commands running in
// each environment folder, so Destroy can end them before removing the folder.
// A group is unregistered after its leader exits and before it is reaped,
// under the same lock Destroy kills under, so Destroy never signals an id that
// may have been recycled.
var running = struct {
	mu     sync.Mutex
	groups map[string]map[int]struct{}
}{groups: map[string]map[int]struct{}{}}

func registerGroup(dir string, pid int) {
	running.mu.Lock()
	defer running.mu.Unlock()
	if running.groups[dir] == nil {
		running.groups[dir] = map[int]struct{}{}
	}
	running.groups[dir][pid] = struct{}{}
}

func unregisterGroup(dir string, pid int) {
	running.mu.Lock()
	defer running.mu.Unlock()
	delete(running.groups[dir], pid)
	if len(running.groups[dir]) == 0 {
		delete(running.groups, dir)
	}
}

// killGroupsIn kills the process groups of every command running in dir in
// this process.
func killGroupsIn(dir string) {
	running.mu.Lock()
	defer running.mu.Unlock()
	for pid := range running.groups[dir] {
		killGroup(pid)
	}
}
