package console

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/asset"
)

// assetRoutes are the Assets section: files runs read. Members see and
// download them; editors upload (a multipart form streamed to the object
// store) and retire them.
func (c *Console) assetRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/assets", Twin: "listAssets", Handle: c.assets},
		{Method: http.MethodPost, Path: "/assets", Twin: "uploadAsset", Upload: true, Handle: c.uploadAsset},
		{Method: http.MethodGet, Path: "/assets/:asset", Twin: "getAsset", Handle: c.assetPage},
		{Method: http.MethodGet, Path: "/assets/:asset/content", Twin: "getAssetContent", Handle: c.downloadAsset},
		{Method: http.MethodPost, Path: "/assets/:asset/retire", Twin: "retireAsset", Handle: c.retireAsset},
	}
}

// assetsPage is what the assets list shows.
type assetsPage struct {
	Assets []asset.Asset
	Next   string
}

func (c *Console) assetsView(r *wsRequest, v view) (view, error) {
	page, err := c.svc.Assets.List(r.ctx(), r.caller, nil, r.cursor())
	if err != nil {
		return v, err
	}
	v.Data, v.Title = &assetsPage{Assets: page.Items, Next: nextCursor(page.NextCursor)}, "Assets"
	return v, nil
}

// assets lists the workspace's assets, with the upload form (GET).
func (c *Console) assets(r *wsRequest) error {
	v, err := c.assetsView(r, view{})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "assets", "assets", v)
}

// fileField is the upload form's file input.
const fileField = "file"

// errNoFile refuses an upload whose part after the token is not the file.
var errNoFile = apperr.InvalidField(fileField, "choose a file to upload")

// uploadAsset streams the form's file part, the one after the CSRF token,
// into a new asset: it is never held whole in memory, and the asset
// service refuses more than limits.asset_bytes (413). The asset is named
// after the file and has the media type the browser gave it.
func (c *Console) uploadAsset(r *wsRequest) error {
	a, err := c.streamUpload(r)
	if err != nil {
		v := view{}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		v, lerr := c.assetsView(r, v)
		if lerr != nil {
			return lerr
		}
		return c.renderIn(r, status, "assets", "assets", v)
	}
	return r.redirect(r.path("assets", a.ID), "The asset "+a.Name+" is uploaded ("+strconv.FormatInt(a.Size, 10)+" bytes).")
}

func (c *Console) streamUpload(r *wsRequest) (asset.Asset, error) {
	part, err := r.parts.NextPart()
	if errors.Is(err, io.EOF) {
		return asset.Asset{}, errNoFile
	}
	if err != nil {
		if ae, ok := apperr.As(err); ok {
			return asset.Asset{}, ae // the body's own limits (package reqbody)
		}
		return asset.Asset{}, apperr.Wrap(apperr.KindInvalidArgument, "the form could not be read", err)
	}
	defer part.Close()
	if part.FormName() != fileField || part.FileName() == "" {
		return asset.Asset{}, errNoFile
	}
	return c.svc.Assets.Create(r.ctx(), r.caller, asset.CreateInput{
		Name: part.FileName(), ContentType: part.Header.Get("Content-Type"), Size: -1, Body: part,
	})
}

func (c *Console) assetView(r *wsRequest, v view) (view, error) {
	a, err := c.svc.Assets.Get(r.ctx(), r.caller, r.ec.Param("asset"))
	if err != nil {
		return v, err
	}
	v.Data, v.Title = a, "Asset "+a.Name
	return v, nil
}

// assetPage shows an asset with its download link (GET).
func (c *Console) assetPage(r *wsRequest) error {
	v, err := c.assetView(r, view{})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "asset", "assets", v)
}

// downloadAsset streams an asset's content as an attachment (GET), with the
// headers that keep a browser from running it: its own media type, nosniff,
// and a Content-Disposition that saves it under its name.
func (c *Console) downloadAsset(r *wsRequest) error {
	a, err := c.svc.Assets.Get(r.ctx(), r.caller, r.ec.Param("asset"))
	if err != nil {
		return err
	}
	body, err := c.svc.Assets.Open(r.ctx(), a, 0, -1)
	if err != nil {
		return err
	}
	defer body.Close()
	h := r.ec.Response().Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	h.Set("ETag", a.ETag())
	disposition := mime.FormatMediaType("attachment", map[string]string{"filename": a.Name})
	if disposition == "" {
		disposition = "attachment"
	}
	h.Set("Content-Disposition", disposition)
	// Its own sandbox, should a browser render it anyway.
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	r.ec.Response().WriteHeader(http.StatusOK)
	_, err = io.Copy(r.ec.Response(), body)
	return err
}

// retireAsset retires an asset (POST, with the page's ETag): new references
// to it are refused; what refers to it already keeps working.
func (c *Console) retireAsset(r *wsRequest) error {
	etag := r.form.Get("etag")
	if err := c.svc.Assets.Retire(r.ctx(), r.caller, r.ec.Param("asset"), &etag); err != nil {
		v := view{}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		v, lerr := c.assetView(r, v)
		if lerr != nil {
			return lerr
		}
		return c.renderIn(r, status, "asset", "assets", v)
	}
	return r.redirect(r.path("assets", r.ec.Param("asset")), "The asset is retired: nothing new can refer to it.")
}
