// Package httpapi is the HTTP edge of svc: the Echo server, its middleware, the
// one mapping from errors to the documented error body, and the implementation of
// the generated strict-server interface (one file per OpenAPI tag).
package httpapi

import (
	"log/slog"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/health"
)

// Server implements the operations of the contract. Each embedded handler
// struct holds the services its operations call; handlers parse, call one
// service method and map the result.
type Server struct {
	Health *health.Checker
	*IdentityHandlers
	*InvitationHandlers
	*ProviderTypeHandlers
	*ProviderHandlers
	*ModelHandlers
	*AgentHandlers
	*SkillHandlers
	*ConnectionHandlers
	*EnvironmentHandlers
	*MemoryHandlers
	*SubscriptionHandlers
	*DeliveryHandlers
	*AssetHandlers
	*RunHandlers
}

var _ api.StrictServerInterface = (*Server)(nil)

// newServer gives each handler struct its services.
func newServer(h *health.Checker, log *slog.Logger, s Services) (*Server, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	providerTypes, err := newProviderTypeHandlers(s.Types)
	if err != nil {
		return nil, err
	}
	return &Server{
		Health:               h,
		IdentityHandlers:     &IdentityHandlers{svc: s.Identity},
		InvitationHandlers:   &InvitationHandlers{svc: s.Invitations, clients: s.Clients},
		ProviderTypeHandlers: providerTypes,
		ProviderHandlers:     &ProviderHandlers{svc: s.Providers},
		ModelHandlers:        &ModelHandlers{svc: s.Models},
		AgentHandlers:        &AgentHandlers{svc: s.Agents},
		SkillHandlers:        &SkillHandlers{svc: s.Skills},
		ConnectionHandlers:   &ConnectionHandlers{svc: s.Connections},
		EnvironmentHandlers:  &EnvironmentHandlers{templates: s.Templates, environments: s.Environments},
		MemoryHandlers:       &MemoryHandlers{svc: s.Memories},
		SubscriptionHandlers: &SubscriptionHandlers{svc: s.Subscriptions},
		DeliveryHandlers:     &DeliveryHandlers{svc: s.Deliveries},
		AssetHandlers:        &AssetHandlers{svc: s.Assets},
		RunHandlers:          &RunHandlers{svc: s.Runs, hub: s.Events, log: log},
	}, nil
}
