package console

import (
	"net/http"
	"slices"
	"strings"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/webhook"
)

// webhookRoutes are the Webhooks section: the workspace's subscriptions,
// their signing secrets (shown once, in the answer to the form that made
// them), their deliveries with every attempt, and redelivery.
func (c *Console) webhookRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/webhooks", Twin: "listSubscriptions", Handle: c.webhooks},
		{Method: http.MethodPost, Path: "/webhooks", Twin: "createSubscription", Handle: c.createSubscription},
		{Method: http.MethodGet, Path: "/webhooks/:subscription", Twin: "getSubscription", Handle: c.subscriptionPage},
		{Method: http.MethodPost, Path: "/webhooks/:subscription", Twin: "updateSubscription", Handle: c.updateSubscription},
		{Method: http.MethodPost, Path: "/webhooks/:subscription/rotate-secret", Twin: "rotateSubscriptionSecret", Handle: c.rotateSubscriptionSecret},
		{Method: http.MethodPost, Path: "/webhooks/:subscription/delete", Twin: "deleteSubscription", Handle: c.deleteSubscription},
		{Method: http.MethodGet, Path: "/webhooks/:subscription/deliveries/:delivery", Twin: "getDelivery", Handle: c.deliveryPage},
		// The delivery page's one action, at the page's own address: paths
		// have at most five segments after /w.
		{Method: http.MethodPost, Path: "/webhooks/:subscription/deliveries/:delivery", Twin: "redeliverDelivery", Handle: c.redeliver},
	}
}

// webhooksPage is what the subscriptions list shows.
type webhooksPage struct {
	Subscriptions []subscription.Subscription
	Next          string
	// EventTypes are every event type a subscription can ask for.
	EventTypes []string
	// Chosen are the event types the form has ticked.
	Chosen []string
	// Created is the subscription just made, with its secret, shown once.
	Created *subscription.WithSecret
}

// Ticked reports whether the form has event type t ticked.
func (p *webhooksPage) Ticked(t string) bool { return slices.Contains(p.Chosen, t) }

// subscriptionPage is what one subscription's page shows.
type subscriptionPage struct {
	Sub        subscription.Subscription
	EventTypes []string
	Chosen     []string
	// Secret is the signing secret a rotation just made, shown once.
	Secret string
	// Deliveries are a page of the subscription's deliveries, of Status
	// when set.
	Deliveries []webhook.Delivery
	Next       string
	Status     string
	Statuses   []string
}

// Ticked reports whether the form has event type t ticked.
func (p *subscriptionPage) Ticked(t string) bool { return slices.Contains(p.Chosen, t) }

// webhooksView reads a page of subscriptions into v.
func (c *Console) webhooksView(r *wsRequest, v view) (view, error) {
	page, err := c.svc.Subscriptions.List(r.ctx(), r.caller, nil, r.cursor())
	if err != nil {
		return v, err
	}
	d, _ := v.Data.(*webhooksPage)
	if d == nil {
		d = &webhooksPage{Chosen: []string{}}
	}
	d.Subscriptions, d.EventTypes, d.Next = page.Items, subscription.EventTypes, nextCursor(page.NextCursor)
	v.Data = d
	v.Title = "Webhooks"
	return v, nil
}

// webhooks lists the subscriptions, with the form to make one (GET).
func (c *Console) webhooks(r *wsRequest) error {
	v, err := c.webhooksView(r, view{Form: map[string]string{"enabled": "on"}})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "webhooks", "webhooks", v)
}

// createSubscription makes a subscription and shows its signing secret once,
// in the answer to this POST: never in a URL or a later page.
func (c *Console) createSubscription(r *wsRequest) error {
	form := map[string]string{"url": strings.TrimSpace(r.form.Get("url")), "description": r.form.Get("description"), "enabled": r.form.Get("enabled")}
	chosen := r.form["event_types"]
	enabled := form["enabled"] != ""
	created, err := c.svc.Subscriptions.Create(r.ctx(), r.caller, subscription.CreateInput{
		URL: form["url"], EventTypes: chosen, Description: strings.TrimSpace(form["description"]), Enabled: &enabled,
	})
	status := http.StatusOK
	var v view
	if err != nil {
		v = view{Form: form, Data: &webhooksPage{Chosen: chosen}}
		var ok bool
		if status, ok = formError(&v, err); !ok {
			return err
		}
	} else {
		v = view{Form: map[string]string{"enabled": "on"}, Data: &webhooksPage{Chosen: []string{}, Created: &created}}
		v.Notice = "The subscription to " + created.Subscription.URL + " is made. Copy its signing secret now: it is shown only once."
	}
	v, lerr := c.webhooksView(r, v)
	if lerr != nil {
		return lerr
	}
	return c.renderIn(r, status, "webhooks", "webhooks", v)
}

// subscriptionView reads the subscription of the page and a page of its
// deliveries into v; the form is filled from the subscription unless v
// has one (a refused change keeps what was typed).
func (c *Console) subscriptionView(r *wsRequest, v view) (view, error) {
	sub, err := c.svc.Subscriptions.Get(r.ctx(), r.caller, r.ec.Param("subscription"))
	if err != nil {
		return v, err
	}
	d, _ := v.Data.(*subscriptionPage)
	if d == nil {
		d = &subscriptionPage{}
	}
	d.Sub, d.EventTypes, d.Statuses = sub, subscription.EventTypes, webhook.Statuses
	if v.Form == nil {
		v.Form = map[string]string{"url": sub.URL, "description": sub.Description}
		if sub.Enabled {
			v.Form["enabled"] = "on"
		}
		d.Chosen = sub.EventTypes
	}
	in := webhook.ListInput{SubscriptionID: sub.ID, Cursor: r.cursor()}
	if s := r.ec.QueryParam("status"); s != "" {
		d.Status = s
		in.Status = &s
	}
	page, err := c.svc.Deliveries.List(r.ctx(), r.caller, in)
	if err != nil {
		if _, ok := formError(&v, err); !ok {
			return v, err
		}
		// An unknown status filter: the page says so and lists nothing.
	} else {
		d.Deliveries, d.Next = page.Items, nextCursor(page.NextCursor)
	}
	v.Data = d
	v.Title = "Webhook to " + sub.URL
	return v, nil
}

// subscriptionPage shows a subscription, its settings and its deliveries (GET).
func (c *Console) subscriptionPage(r *wsRequest) error {
	v, err := c.subscriptionView(r, view{})
	if err != nil {
		return err
	}
	// A refused filter is said on the page (GET pages answer 200).
	return c.renderIn(r, http.StatusOK, "webhook", "webhooks", v)
}

// updateSubscription changes a subscription's endpoint, event types,
// description and whether it is enabled (POST, with the ETag the page showed).
func (c *Console) updateSubscription(r *wsRequest) error {
	form := map[string]string{"url": strings.TrimSpace(r.form.Get("url")), "description": r.form.Get("description"), "enabled": r.form.Get("enabled")}
	chosen := r.form["event_types"]
	if chosen == nil {
		chosen = []string{} // none ticked: the service refuses an empty set
	}
	etag := r.form.Get("etag")
	enabled := form["enabled"] != ""
	desc := strings.TrimSpace(form["description"])
	url := form["url"]
	sub, err := c.svc.Subscriptions.Update(r.ctx(), r.caller, subscription.UpdateInput{
		ID: r.ec.Param("subscription"), IfMatch: &etag, URL: &url, EventTypes: chosen, Enabled: &enabled, Description: &desc,
	})
	if err != nil {
		v := view{Form: form, Data: &subscriptionPage{Chosen: chosen}}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		v, lerr := c.subscriptionView(r, v)
		if lerr != nil {
			return lerr
		}
		return c.renderIn(r, status, "webhook", "webhooks", v)
	}
	return r.redirect(r.path("webhooks", sub.ID), "The subscription is saved.")
}

// rotateSubscriptionSecret replaces the signing secret and shows the new
// one once, in the answer to this POST.
func (c *Console) rotateSubscriptionSecret(r *wsRequest) error {
	etag := r.form.Get("etag")
	rotated, err := c.svc.Subscriptions.RotateSecret(r.ctx(), r.caller, r.ec.Param("subscription"), &etag)
	v := view{}
	status := http.StatusOK
	if err != nil {
		var ok bool
		if status, ok = formError(&v, err); !ok {
			return err
		}
	} else {
		v.Data = &subscriptionPage{Secret: rotated.Secret}
		v.Notice = "The signing secret is replaced: deliveries are signed with the new one from now on. Copy it now: it is shown only once."
	}
	v, lerr := c.subscriptionView(r, v)
	if lerr != nil {
		return lerr
	}
	return c.renderIn(r, status, "webhook", "webhooks", v)
}

// deleteSubscription deletes a subscription (POST, with the page's ETag).
func (c *Console) deleteSubscription(r *wsRequest) error {
	etag := r.form.Get("etag")
	subID := r.ec.Param("subscription")
	if err := c.svc.Subscriptions.Delete(r.ctx(), r.caller, subID, &etag); err != nil {
		v := view{}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		v, lerr := c.subscriptionView(r, v)
		if lerr != nil {
			return lerr
		}
		return c.renderIn(r, status, "webhook", "webhooks", v)
	}
	return r.redirect(r.path("webhooks"), "The subscription is deleted: no more deliveries are made to it.")
}

// deliveryPage is what a delivery's page shows.
type deliveryPage struct {
	Sub      subscription.Subscription
	Delivery webhook.Delivery
	// MaxShown is how many attempts the page lists at most (the latest).
	MaxShown int
}

// deliveryView reads the page's subscription and delivery; a delivery of
// another subscription is not found here.
func (c *Console) deliveryView(r *wsRequest, v view) (view, error) {
	sub, err := c.svc.Subscriptions.Get(r.ctx(), r.caller, r.ec.Param("subscription"))
	if err != nil {
		return v, err
	}
	d, err := c.svc.Deliveries.Get(r.ctx(), r.caller, r.ec.Param("delivery"))
	if err != nil {
		return v, err
	}
	if d.SubscriptionID != sub.ID {
		return v, apperr.NotFound("delivery")
	}
	v.Title = "Delivery " + d.ID
	v.Data = &deliveryPage{Sub: sub, Delivery: d, MaxShown: webhook.MaxAttemptsShown}
	return v, nil
}

// deliveryPage shows a delivery with every recorded attempt (GET).
func (c *Console) deliveryPage(r *wsRequest) error {
	v, err := c.deliveryView(r, view{})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "webhook_delivery", "webhooks", v)
}

// redeliver sends a settled delivery again (POST).
func (c *Console) redeliver(r *wsRequest) error {
	// The delivery must be this subscription's: read it first.
	if _, err := c.deliveryView(r, view{}); err != nil {
		return err
	}
	if _, err := c.svc.Deliveries.Redeliver(r.ctx(), r.caller, r.ec.Param("delivery")); err != nil {
		v := view{}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		v, lerr := c.deliveryView(r, v)
		if lerr != nil {
			return lerr
		}
		return c.renderIn(r, status, "webhook_delivery", "webhooks", v)
	}
	return r.redirect(r.path("webhooks", r.ec.Param("subscription"), "deliveries", r.ec.Param("delivery")),
		"The delivery is queued again: it is attempted now, with a new round of attempts.")
}
