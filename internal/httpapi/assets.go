package httpapi

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/asset"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/reqctx"
	"github.com/svcdev/svc/internal/timestamp"
)

// AssetHandlers implements /api/v1/assets and below.
type AssetHandlers struct {
	svc *asset.Service
}

// ListAssets lists the assets of the key's workspace, newest first.
func (h *AssetHandlers) ListAssets(ctx context.Context, req api.ListAssetsRequestObject) (api.ListAssetsResponseObject, error) {
	p, err := h.svc.List(ctx, auth.CallerFrom(ctx), req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListAssets200JSONResponse{Items: mapAll(p.Items, toAPIAsset), NextCursor: nullableString(p.NextCursor)}, nil
}

// UploadAsset streams the request body into a new asset. The edge leaves
// this body alone (x-svc-binary: request), so it arrives unread.
func (h *AssetHandlers) UploadAsset(ctx context.Context, req api.UploadAssetRequestObject) (api.UploadAssetResponseObject, error) {
	body := req.Body
	if body == nil {
		body = http.NoBody
	}
	a, err := h.svc.Create(ctx, auth.CallerFrom(ctx), asset.CreateInput{
		Name: req.Params.Name, ContentType: req.ContentType, Size: bodySize(ctx), Body: body,
	})
	if err != nil {
		return nil, err
	}
	etag, loc := a.ETag(), "/api/v1/assets/"+a.ID
	return api.UploadAsset201JSONResponse{Body: toAPIAsset(a), Headers: api.UploadAsset201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetAsset reads an asset's metadata.
func (h *AssetHandlers) GetAsset(ctx context.Context, req api.GetAssetRequestObject) (api.GetAssetResponseObject, error) {
	a, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.AssetId)
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.GetAsset200JSONResponse{Body: toAPIAsset(a), Headers: api.GetAsset200ResponseHeaders{ETag: &etag}}, nil
}

// RetireAsset retires an asset (DELETE).
func (h *AssetHandlers) RetireAsset(ctx context.Context, req api.RetireAssetRequestObject) (api.RetireAssetResponseObject, error) {
	if err := h.svc.Retire(ctx, auth.CallerFrom(ctx), req.AssetId, &req.Params.IfMatch); err != nil {
		return nil, err
	}
	return api.RetireAsset204Response{}, nil
}

// GetAssetContent answers the content, whole or one byte range, streamed from
// the object store.
func (h *AssetHandlers) GetAssetContent(ctx context.Context, req api.GetAssetContentRequestObject) (api.GetAssetContentResponseObject, error) {
	a, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.AssetId)
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	p := req.Params
	if p.IfNoneMatch != nil && etagMatches(*p.IfNoneMatch, etag, true) {
		return api.GetAssetContent304Response{Headers: api.GetAssetContent304ResponseHeaders{ETag: &etag}}, nil
	}
	out := &contentResponse{status: http.StatusOK, asset: a, window: byteRange{Length: a.Size}}
	if p.Range != nil && (p.IfRange == nil || etagMatches(*p.IfRange, etag, false)) {
		switch r, outcome := parseRange(*p.Range, a.Size); outcome {
		case rangeUnsatisfiable:
			return rangeNotSatisfiable{size: a.Size, requestID: reqctx.RequestID(ctx)}, nil
		case rangePartial:
			out.status, out.window = http.StatusPartialContent, r
		}
	}
	if out.body, err = h.svc.Open(ctx, a, out.window.Start, out.window.Length); err != nil {
		return nil, err
	}
	return out, nil
}

// contentResponse streams an asset's content (200) or one range of it (206)
// with its headers. It is written by hand rather than generated so that it
// also carries the headers that keep a browser from running uploaded content
// (nosniff, attachment) and from caching it in shared caches.
type contentResponse struct {
	status int
	asset  asset.Asset
	window byteRange
	body   io.ReadCloser
}

func (r *contentResponse) VisitGetAssetContentResponse(w http.ResponseWriter) error {
	defer r.body.Close()
	h := w.Header()
	h.Set("Content-Type", r.asset.ContentType)
	h.Set("Content-Length", strconv.FormatInt(r.window.Length, 10))
	h.Set("ETag", r.asset.ETag())
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Disposition", attachment(r.asset.Name))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-cache")
	if r.status == http.StatusPartialContent {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", r.window.Start, r.window.Start+r.window.Length-1, r.asset.Size))
	}
	w.WriteHeader(r.status)
	_, err := io.Copy(w, r.body)
	return err
}

// attachment is the Content-Disposition of a download named name: RFC 6266,
// with RFC 2231 encoding for names that are not plain ASCII.
func attachment(name string) string {
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}

// rangeNotSatisfiable is the 416 answer: the documented error body, and the
// Content-Range that tells the client the content's size.
type rangeNotSatisfiable struct {
	size      int64
	requestID string
}

func (r rangeNotSatisfiable) VisitGetAssetContentResponse(w http.ResponseWriter) error {
	ae := apperr.New(apperr.KindRangeNotSatisfiable, "the range starts past the end of the content ("+strconv.FormatInt(r.size, 10)+" bytes)")
	w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(r.size, 10))
	return writeErrorBody(w, ae, r.requestID)
}

func toAPIAsset(a asset.Asset) api.Asset {
	return api.Asset{
		Id: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Sha256: a.SHA256,
		RetiredAt: nullableTime(a.RetiredAt), Version: int(a.Version),
		CreatedById: a.CreatedByID, UpdatedById: a.UpdatedByID, CreatedAt: timestamp.Of(a.CreatedAt), UpdatedAt: timestamp.Of(a.UpdatedAt),
	}
}
