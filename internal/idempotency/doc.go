// Package idempotency makes retried creates safe: the Idempotency-Key header
// (docs/decisions/0010-idempotency.md).
//
// A request that carries the header, on an operation whose contract declares
// it, is recorded under a scope: the caller's workspace and principal, the
// method, the route template and the SHA-256 of the key. Its fingerprint is
// the SHA-256 of the method, the path (with its ids), the query and the body.
//
// The first request inserts an in_progress record before its handler runs
// (a unique index on the scope makes that the lock), captures the response as
// it is written, and then either stores it (status below 500, except 409 and
// 429, whose cause is passing) or deletes the record, so that a retry runs
// again. The stored headers (Content-Type, Location, ETag) and body are sealed
// with the key ring under the record's id, because a created API key's token
// is in the body.
//
// A later request with the same key:
//   - and a different fingerprint answers 409 conflict;
//   - while the first one runs answers 409 conflict, never running twice;
//   - after it finished replays the stored status, headers and body with
//     Idempotent-Replayed: true (an error body's request_id becomes the
//     replay's own, so that it matches X-Request-Id).
//
// Completed records expire 24 hours after creation; an in_progress record
// holds its key for a lease of a few minutes only, so that a request lost with
// its process does not lock its key for a day. Expired records are taken over
// by the next request with their key and deleted by Purge. All times come
// from the database's clock.
//
// Streamed operations (uploads, Config.Streamed) are never buffered: their
// fingerprint adds the Content-Type and the SHA-256 of the body, hashed as the
// handler reads it, to the method, path and query. The record is claimed
// with a provisional fingerprint and completed with the real one only if the
// handler read the body to its end (otherwise the key is released); a later
// request with the key reads its own body through the hash only when there is
// a completed response to compare it with, and is 409 at once while the
// first is in progress.
//
// Without the header, or on other operations, requests pass through untouched.
package idempotency
