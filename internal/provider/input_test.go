package provider

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/provider/catalog"
)

func TestEndpointFieldsFindEveryURLMember(t *testing.T) {
	t.Parallel()
	reg, err := catalog.New(catalog.Options{LocalEnabled: true})
	require.NoError(t, err)
	want := map[string][]string{
		"openai": {"base_url"}, "azure_openai": {"endpoint"}, "aws_bedrock": {"endpoint"},
		"jina": {"reader_url", "search_url"}, "kubernetes": {"api_server"}, "pinecone": {"index_host"},
		"openrouter": {"base_url", "site_url"}, "docker": nil, "local": nil,
	}
	for id, fields := range want {
		typ, ok := reg.Lookup(id)
		require.True(t, ok, id)
		require.Equal(t, fields, endpointFields(typ), id)
	}
}

func TestValidateExtraHeaders(t *testing.T) {
	t.Parallel()
	ok := map[string]string{"X-Team": "a b\tc", "OpenAI-Beta": "assistants=v2", "HTTP-Referer": "https://example.com", "X-Empty": ""}
	require.NoError(t, validateExtraHeaders(ok))

	cases := map[string]struct {
		h     map[string]string
		field string
	}{
		"CR":             {map[string]string{"X-A": "a\rb"}, "extra_headers.X-A"},
		"LF":             {map[string]string{"X-A": "a\nb"}, "extra_headers.X-A"},
		"NUL":            {map[string]string{"X-A": "a\x00b"}, "extra_headers.X-A"},
		"DEL":            {map[string]string{"X-A": "a\x7fb"}, "extra_headers.X-A"},
		"invalid UTF-8":  {map[string]string{"X-A": "a\xffb"}, "extra_headers.X-A"},
		"too long":       {map[string]string{"X-A": strings.Repeat("v", 8193)}, "extra_headers.X-A"},
		"space in name":  {map[string]string{"X A": "v"}, "extra_headers"},
		"colon in name":  {map[string]string{"X-A:": "v"}, "extra_headers"},
		"empty name":     {map[string]string{"": "v"}, "extra_headers"},
		"authorization":  {map[string]string{"authorization": "v"}, "extra_headers.authorization"},
		"host":           {map[string]string{"Host": "v"}, "extra_headers.Host"},
		"vendor key":     {map[string]string{"X-Api-Key": "v"}, "extra_headers.X-Api-Key"},
		"aws signing":    {map[string]string{"X-Amz-Date": "v"}, "extra_headers.X-Amz-Date"},
		"case duplicate": {map[string]string{"X-A": "1", "x-a": "2"}, "extra_headers.x-a"},
	}
	for name, tc := range cases {
		err := validateExtraHeaders(tc.h)
		e, isApp := apperr.As(err)
		require.True(t, isApp, name)
		require.Equal(t, apperr.KindInvalidArgument, e.Kind, name)
		require.Len(t, e.Details, 1, name)
		require.Equal(t, tc.field, e.Details[0].Field, name)
		for _, v := range tc.h {
			if v != "" && v != "v" {
				require.NotContains(t, e.Error(), v, "%s: values are never echoed", name)
			}
		}
	}
	many := map[string]string{}
	for i := range 33 {
		many["X-"+strings.Repeat("a", i+1)] = "v"
	}
	require.Error(t, validateExtraHeaders(many))
}
