package console_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
	"github.com/stretchr/testify/require"
)

// A real browser drives the console in these tests: headless Chromium
// (scripts/install-chromium.sh, which make test runs), through the DevTools
// protocol (go-rod). SVCDEV_SKIP_BROWSER_TESTS=1 skips them explicitly;
// a missing browser otherwise fails, so a gap is never silent.
//
// CONSOLE_SCREENSHOTS=dir saves a screenshot of each main page there (the
// README's Console section shows the ones in docs/console/).

// chrome is one browser tab on the test's process, with every script error
// it saw.
type chrome struct {
	t    *testing.T
	b    *testBundle
	page *rod.Page

	mu       sync.Mutex
	problems []string
}

// newChrome starts a headless Chromium for the test.
func (b *testBundle) newChrome(t *testing.T) *chrome {
	t.Helper()
	if os.Getenv("SVCDEV_SKIP_BROWSER_TESTS") == "1" {
		t.Skip("SVCDEV_SKIP_BROWSER_TESTS=1: skipping the headless-Chromium test")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found on PATH (%v): run scripts/install-chromium.sh, "+
			"or set SVCDEV_SKIP_BROWSER_TESTS=1 to skip browser tests", err)
	}
	l := launcher.New().Bin(path).Headless(true).NoSandbox(true). // runs as root in CI containers
									Leakless(false).UserDataDir(t.TempDir()).
									Set("disable-gpu").Set("disable-dev-shm-usage").Set("disable-quic").
									Set("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1")
	u, err := l.Launch()
	require.NoError(t, err, "start chromium")
	t.Cleanup(l.Kill)
	browser := rod.New().ControlURL(u)
	require.NoError(t, browser.Connect())
	t.Cleanup(func() { _ = browser.Close() })
	page, err := browser.Page(proto.TargetCreateTarget{})
	require.NoError(t, err)
	require.NoError(t, page.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: 1280, Height: 900, DeviceScaleFactor: 1}))
	c := &chrome{t: t, b: b, page: page.Timeout(60 * time.Second)}
	go page.EachEvent(func(e *proto.RuntimeExceptionThrown) {
		c.problem("script exception: " + e.ExceptionDetails.Text + " " + describe(e.ExceptionDetails.Exception))
	}, func(e *proto.RuntimeConsoleAPICalled) {
		if e.Type == proto.RuntimeConsoleAPICalledTypeError {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, describe(a))
			}
			c.problem("console error: " + strings.Join(parts, " "))
		}
	}, func(e *proto.LogEntryAdded) {
		if e.Entry.Level == proto.LogLogEntryLevelError {
			c.problem("log: " + e.Entry.Text + " " + e.Entry.URL)
		}
	})()
	require.NoError(t, proto.RuntimeEnable{}.Call(page))
	require.NoError(t, proto.LogEnable{}.Call(page))
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range c.problems {
			t.Errorf("browser: %s", p)
		}
	})
	return c
}

func describe(o *proto.RuntimeRemoteObject) string {
	if o == nil {
		return ""
	}
	if o.Description != "" {
		return o.Description
	}
	return o.Value.String()
}

func (c *chrome) problem(p string) {
	c.mu.Lock()
	c.problems = append(c.problems, p)
	c.mu.Unlock()
}

// settled waits until the page follows no live run: a finished run's page
// shows itself again once (console.js), and leaving before that aborts it.
func (c *chrome) settled() {
	c.t.Helper()
	require.Eventually(c.t, func() bool {
		has, _, err := c.page.Has("[data-live-stream]")
		return err == nil && !has
	}, 60*time.Second, 50*time.Millisecond, "the page still follows a live run")
}

// open goes to a path of the console and waits for its content.
func (c *chrome) open(path string) {
	c.t.Helper()
	require.NoError(c.t, c.page.Navigate(c.b.h.URL+path))
	require.NoError(c.t, c.page.WaitLoad())
	c.el("#content")
}

// el waits for the first element matching the CSS selector sel.
func (c *chrome) el(sel string) *rod.Element {
	c.t.Helper()
	e, err := c.page.Element(sel)
	require.NoError(c.t, err, "element %s", sel)
	return e
}

// elText waits for the element sel whose text matches the regular
// expression re.
func (c *chrome) elText(sel, re string) *rod.Element {
	c.t.Helper()
	e, err := c.page.ElementR(sel, re)
	require.NoError(c.t, err, "element %s with text %s", sel, re)
	return e
}

// text is the text of the first element matching sel.
func (c *chrome) text(sel string) string {
	c.t.Helper()
	s, err := c.el(sel).Text()
	require.NoError(c.t, err)
	return s
}

// fill types text into the input sel.
func (c *chrome) fill(sel, text string) {
	c.t.Helper()
	require.NoError(c.t, c.el(sel).Input(text))
}

// click clicks the element sel.
func (c *chrome) click(sel string) {
	c.t.Helper()
	require.NoError(c.t, c.el(sel).Click(proto.InputMouseButtonLeft, 1))
}

// clickText clicks the element sel whose text matches re.
func (c *chrome) clickText(sel, re string) {
	c.t.Helper()
	require.NoError(c.t, c.elText(sel, re).Click(proto.InputMouseButtonLeft, 1))
}

// signIn signs the browser in through the form.
func (c *chrome) signIn(email, password string) {
	c.t.Helper()
	c.open("/sign-in")
	c.fill(`input[name=email]`, email)
	c.fill(`input[name=password]`, password)
	c.click(`form.stack button[type=submit]`)
	c.elText("h1", "Signed in as")
}

// screenshot saves the page as name.png in CONSOLE_SCREENSHOTS, if set.
func (c *chrome) screenshot(name string) {
	c.t.Helper()
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := c.page.Screenshot(true, &proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng})
	require.NoError(c.t, err)
	require.NoError(c.t, os.MkdirAll(dir, 0o755))
	require.NoError(c.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// reload loads the page again and waits for its content.
func (c *chrome) reload() {
	c.t.Helper()
	require.NoError(c.t, c.page.Reload())
	require.NoError(c.t, c.page.WaitLoad())
	c.el("#content")
}

// follow opens the address of the link sel, as a click would, and waits
// for the page.
func (c *chrome) follow(sel string) {
	c.t.Helper()
	href, err := c.el(sel).Attribute("href")
	require.NoError(c.t, err)
	require.NotNil(c.t, href, "%s has no href", sel)
	c.open(*href)
}
