// Package sweep runs the maintenance sweeps of control replicas: periodic passes
// such as purge_outbox or expire_leases, each of which must run on one replica
// at a time however many replicas run.
//
// Coordination is a claim row per sweep (table sweep_claim). Before a pass, a
// replica upserts the claim with itself as owner and an expiry one interval
// ahead, which succeeds only when the claim is free, expired, or already its own.
// The pass then runs under a deadline equal to the claim's lease, so it ends
// before another replica can take the claim. The claim is not released after the
// pass: it simply expires, so the sweep runs once per interval across the whole
// deployment, not once per replica. A replica that dies loses the claim when it
// expires and another takes over at its next tick. Expiry arithmetic uses the
// database's clock only, so skewed replica clocks cannot cause early takeovers.
//
// A failed pass is logged, recorded on the claim row (last_error) and counted in
// svc_sweep_passes_total{result="error"}; the next interval retries it. The
// runner's tasks never stop on their own, so a failing pass does not make the
// process unready, while a stopped runner task does.
//
// Work that every replica does at once, coordinated by its own rows rather
// than a claim, is not a sweep: the outbox's delivery and observation passes
// run in outbox.Engine.Run (docs/decisions/0049-outbox-loop-and-listener.md).
package sweep
