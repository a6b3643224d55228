package webui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// netLogRequests returns every params.url in a Chromium net-log, mapped to
// the request's initiator where the log names one (Chromium's own requests
// say "not an origin"). The file is {"constants": {...}, "events": [...]};
// when Chromium dies it stops anywhere, so the events are decoded one at a
// time and an early end is reported as truncated, with the events read so
// far, rather than as an error.
func netLogRequests(path string) (requests map[string]string, truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()

	requests = map[string]string{}
	err = decodeNetLog(json.NewDecoder(f), func(url, initiator string) {
		if requests[url] == "" || initiator != "" {
			requests[url] = initiator
		}
	})
	if isTruncation(err) {
		return requests, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return requests, false, nil
}

// decodeNetLog streams the net-log's events and calls visit for each one
// that has params.url.
func decodeNetLog(dec *json.Decoder, visit func(url, initiator string)) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		if key != "events" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
			continue
		}
		if err := expectDelim(dec, '['); err != nil {
			return err
		}
		for dec.More() {
			var ev struct {
				Params struct {
					URL       string `json:"url"`
					Initiator string `json:"initiator"`
				} `json:"params"`
			}
			if err := dec.Decode(&ev); err != nil {
				return err
			}
			if ev.Params.URL != "" {
				visit(ev.Params.URL, ev.Params.Initiator)
			}
		}
		if _, err := dec.Token(); err != nil { // the closing ']'
			return err
		}
	}
	_, err := dec.Token() // the closing '}'
	return err
}

// isTruncation reports whether a decode error means the input just ended.
func isTruncation(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("got %v, want %v", tok, want)
	}
	return nil
}

func TestNetLogRequestsHandlesTruncation(t *testing.T) {
	t.Parallel()
	const full = `{"constants":{"logEventTypes":{"A":1}},"events":[
{"type":1,"params":{"url":"http://127.0.0.1:1/a","initiator":"not an origin"}},
{"type":1,"params":{"url":"https://fonts.example/x.woff2","initiator":"http://127.0.0.1:1"}},
{"type":1,"params":{"url":"http://127.0.0.1:1/a"}},
{"type":1,"params":{"url":"http://127.0.0.1:1/b"}},
],"polledData":{}}`
	// The cases cut it at the places a killed Chromium leaves it.
	cases := map[string]struct {
		content       string
		wantURLs      int
		wantTruncated bool
	}{
		"complete":             {strings.Replace(full, "},\n]", "}\n]", 1), 3, false},
		"cut before the end":   {strings.TrimSuffix(strings.Replace(full, "},\n]", "}\n]", 1), "}"), 3, true},
		"cut after an event":   {full[:strings.Index(full, `{"type":1,"params":{"url":"http://127.0.0.1:1/b"`)], 2, true},
		"cut inside an event":  {full[:strings.Index(full, `/b"`)], 2, true},
		"cut inside constants": {full[:20], 0, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "netlog.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			got, truncated, err := netLogRequests(path)
			require.NoError(t, err)
			require.Equal(t, tc.wantTruncated, truncated)
			require.Len(t, got, tc.wantURLs)
			if tc.wantURLs > 0 {
				require.Equal(t, "not an origin", got["http://127.0.0.1:1/a"], "keeps the known initiator")
			}
		})
	}
}
