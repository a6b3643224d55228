package console

// RouteInfo is a workspace route as the permission table test sees it.
type RouteInfo struct {
	Method, Path, Twin, Permission string
}

// Routes returns every workspace route with its resolved permission.
func Routes() ([]RouteInfo, error) {
	rs, err := resolvePermissions((&Console{}).routes())
	if err != nil {
		return nil, err
	}
	out := make([]RouteInfo, len(rs))
	for i, r := range rs {
		out[i] = RouteInfo{Method: r.Method, Path: r.Path, Twin: r.Twin, Permission: r.Permission}
	}
	return out, nil
}
