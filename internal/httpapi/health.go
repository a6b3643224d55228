package httpapi

import (
	"context"

	"github.com/svcdev/svc/gen/api"
)

// GetHealth answers the liveness probe: 200 while the process serves HTTP.
func (s *Server) GetHealth(_ context.Context, _ api.GetHealthRequestObject) (api.GetHealthResponseObject, error) {
	return api.GetHealth200JSONResponse{Status: api.HealthStatusOk, Role: api.Role(s.Health.Role)}, nil
}

// GetReadiness answers the readiness probe (spec sections 4.4 and 7).
func (s *Server) GetReadiness(ctx context.Context, _ api.GetReadinessRequestObject) (api.GetReadinessResponseObject, error) {
	r := s.Health.Ready(ctx)
	if !r.Ready {
		return api.GetReadiness503JSONResponse{Status: api.NotReadyStatusUnavailable, Dependency: api.NotReadyDependency(r.Dependency)}, nil
	}
	out := api.GetReadiness200JSONResponse{Status: api.ReadinessStatusReady, Role: api.Role(s.Health.Role)}
	if len(r.Degraded) > 0 {
		degraded := make([]api.ReadinessDegraded, len(r.Degraded))
		for i, d := range r.Degraded {
			degraded[i] = api.ReadinessDegraded(d)
		}
		out.Degraded = &degraded
	}
	return out, nil
}
