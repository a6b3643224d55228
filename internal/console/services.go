package console

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/asset"
	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/environment/template"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/model"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/stream"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/webhook"
)

// Services are the domain services the console's workspace pages call:
// internal/app builds each once and hands the same instances to the API
// (docs/decisions/0045-composition-root.md). Every field is required.
type Services struct {
	// Types is the registry of installed provider types (their forms).
	Types *catalog.Registry

	Identity      *identity.Service
	Providers     *provider.Service
	Models        *model.Service
	Memories      *memory.Service
	Templates     *template.Service
	Environments  *environment.Service
	Connections   *connection.Service
	Assets        *asset.Service
	Agents        *agent.Service
	Skills        *skill.Service
	Subscriptions *subscription.Service
	Deliveries    *webhook.Service
	Runs          *run.Service
	// Events streams the threads' events to live pages.
	Events *stream.Hub
}

// check refuses services with a field left unset, naming every one.
func (s Services) check() error {
	v := reflect.ValueOf(s)
	var missing []string
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			missing = append(missing, v.Type().Field(i).Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("console: services not set: %s", strings.Join(missing, ", "))
	}
	return nil
}
