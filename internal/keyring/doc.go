// Package keyring holds the deployment's encryption key ring: a small file of
// named 256-bit keys, exactly one of them marked primary.
//
// Secrets (provider credentials, connection tokens, ...) are sealed with
// AES-256-GCM under the primary key, and every sealed value records the id of
// the key that sealed it. Older keys stay in the ring so that values sealed
// before a rotation still open. Rotation is therefore only "add a key and mark
// it primary": nothing has to be re-encrypted at that moment.
//
// # File format
//
// The ring is a JSON document, normally mode 0600 and owned by the service user:
//
//	{
//	  "version": 1,
//	  "keys": [
//	    {
//	      "id": "k_01m82fv7v064zcdnff3tyw30kn",
//	      "primary": true,
//	      "created_at": "2026-11-22T20:41:00Z",
//	      "secret": "<standard base64 of exactly 32 random bytes>"
//	    }
//	  ]
//	}
//
// The rules [Load] enforces:
//   - version must be 1;
//   - keys holds at least one key, and ids are unique;
//   - id is "k_" followed by a 26-character lowercase ULID (Crockford base32);
//   - exactly one key has "primary": true (a missing primary field means false);
//   - created_at is informational, but when present it must be RFC 3339;
//   - secret is standard (padded) base64 of exactly 32 bytes.
//
// Unknown fields, duplicate JSON keys and trailing data are refused, so a typo
// in a hand-edited file is an error at start-up rather than a silently ignored
// setting. [Load] does not check file permissions; protecting the file is the
// operator's job.
//
// # Rotating
//
// svc keyring add ([AddKey]) appends a non-primary key; after every process
// has restarted, svc keyring promote ([Promote]) makes it primary; after a
// second restart, svc keyring reseal (internal/rekey) re-seals stored values
// under it. Both edits replace the file atomically with mode 0600. [List]
// shows the keys without their secrets. docs/operations.md has the procedure.
//
// # Rotating by hand
//
//  1. Make a fresh key in a scratch file with svc keyring generate, pointed at
//     a new path (it calls [Generate]). The file holds one new key entry.
//  2. Copy that entry into the "keys" array of the live ring file and set its
//     "primary" to false, so the ring still has exactly one primary.
//  3. Restart every svc process. They can now open values sealed under the new
//     key but still seal under the old one.
//  4. Flip the flags: "primary": false on the old key, true on the new one.
//     Restart every process again. New values are sealed under the new key.
//  5. Shred the scratch file.
//
// With a single process, steps 2 to 4 may be one edit and one restart. The
// two phases matter when several processes share the ring: a process that
// does not know the new key yet would fail to open values sealed under it.
// Never delete an old key while values sealed under it may still exist: they
// would become unreadable (Open reports [ErrUnknownKey]).
//
// A key may be dropped once nothing sealed under it remains; [SealedKeyID]
// tells which key sealed a value, so a migration can re-seal stragglers.
//
// # Sealed value format (version 1)
//
//	offset  size  field
//	0       1     format version (0x01)
//	1       1     key id length n
//	2       n     key id (ASCII)
//	2+n     12    random 96-bit GCM nonce
//	14+n    ...   AES-256-GCM ciphertext followed by the 16-byte tag
//
// The GCM additional data is the header (version, length and key id) followed
// by the caller's aad, so neither the key id nor the context the caller binds
// the value to (for example a provider id) can be swapped without Open failing.
// Sealed values are binary; store them in bytea or encode them before putting
// them in text.
package keyring
