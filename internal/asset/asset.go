// Package asset manages assets: files a workspace uploads, whose bytes live in
// the object store under ws/<workspace_id>/assets/<asset_id> and whose
// metadata (name, media type, size, SHA-256) lives in the asset table.
//
// An upload streams the request body to the object store, never holding it in
// memory, and the asset row is written only once the whole content is stored
// (docs/decisions/0017-object-store-and-assets.md):
//
//  1. an asset_upload row records the key before the first byte is sent;
//  2. the body goes to the store, counted against limits.asset_bytes and
//     hashed on the way; the store makes the object visible only when complete;
//  3. one transaction deletes the asset_upload row and inserts the asset row
//     with its audit event.
//
// When step 2 or 3 fails, the object is deleted and then the upload row. When
// the process dies in between, the upload row remains and the
// purge_asset_uploads sweep deletes its object and then the row. So no client
// ever sees a half-written asset, and no object is ever left unaccounted for.
//
// DELETE retires an asset: its content stays readable for history,
// and RequireUsable refuses new references to it.
package asset

import (
	"fmt"
	"mime"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/resource"
)

// DefaultContentType is the media type of an upload sent without one.
const DefaultContentType = "application/octet-stream"

// Limits of the metadata (names are 1 to 200 characters).
const (
	maxName        = 200
	maxContentType = 255
)

// Asset is the view of an asset.
type Asset struct {
	ID          string
	WorkspaceID string
	Name        string
	ContentType string
	Size        int64
	// SHA256 is the lowercase hex SHA-256 of the content.
	SHA256      string
	RetiredAt   *time.Time
	Version     int32
	CreatedByID string
	UpdatedByID string
	CreatedAt   time.Time
	UpdatedAt   time.Time

	// objectKey is where the content is; only this package reads it, so
	// other packages cannot point a read at another key.
	objectKey string
}

// ETag is the asset's entity tag, `"<id>:<version>"`; it is also the ETag of
// its content.
func (a Asset) ETag() string { return resource.ETag(a.ID, a.Version) }

// Retired reports whether the asset was retired.
func (a Asset) Retired() bool { return a.RetiredAt != nil }

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Asset]

// validateName checks an asset's name: 1 to 200 characters of UTF-8 in any
// script, without control characters. A name is metadata only: it never
// names a stored file, so "../x" is as harmless as any other name.
func validateName(name string) error {
	n := utf8.RuneCountInString(name)
	switch {
	case !utf8.ValidString(name):
		return apperr.InvalidField("name", "must be UTF-8 text")
	case n == 0 || strings.TrimSpace(name) == "":
		return apperr.InvalidField("name", "must not be empty")
	case n > maxName:
		return apperr.InvalidField("name", fmt.Sprintf("must be at most %d characters", maxName))
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return apperr.InvalidField("name", "must not contain control characters")
	}
	return nil
}

// normalizeContentType checks a Content-Type and returns it in canonical
// form (lowercase type, parameters sorted); empty is DefaultContentType.
func normalizeContentType(ct string) (string, error) {
	if strings.TrimSpace(ct) == "" {
		return DefaultContentType, nil
	}
	bad := &apperr.Error{Kind: apperr.KindUnsupportedMediaType, Msg: "Content-Type must be a media type such as image/png",
		Details: []apperr.Detail{{Field: "Content-Type", Reason: "not a valid media type"}}}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !strings.Contains(mt, "/") || strings.HasPrefix(mt, "/") || strings.HasSuffix(mt, "/") {
		return "", bad
	}
	out := mime.FormatMediaType(mt, params)
	if out == "" || len(out) > maxContentType {
		bad.Details[0].Reason = fmt.Sprintf("must be a valid media type of at most %d characters", maxContentType)
		return "", bad
	}
	return out, nil
}

// assetOf maps a row to the view.
func assetOf(r db.Asset) Asset {
	a := Asset{
		ID: r.ID, WorkspaceID: r.WorkspaceID, Name: r.Name, ContentType: r.ContentType, Size: r.Size, SHA256: r.Sha256,
		Version: r.Version, CreatedByID: r.CreatedByID, UpdatedByID: r.UpdatedByID,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), objectKey: r.ObjectKey,
	}
	if r.RetiredAt != nil {
		t := r.RetiredAt.UTC()
		a.RetiredAt = &t
	}
	return a
}
