package skillpkg_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/skillpkg"
)

// member is one entry to write into a test archive.
type member struct {
	name   string
	body   string
	dir    bool
	link   string // symlink target
	hard   string // hard link target (tar only)
	fifo   bool   // tar only
	binary bool   // tar: a character device
}

func file(name, body string) member { return member{name: name, body: body} }
func dir(name string) member        { return member{name: name, dir: true} }
func link(name, target string) member {
	return member{name: name, link: target}
}

func makeTar(t *testing.T, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		switch {
		case m.dir:
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		case m.link != "":
			h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, m.link
		case m.hard != "":
			h.Typeflag, h.Size, h.Linkname = tar.TypeLink, 0, m.hard
		case m.fifo:
			h.Typeflag, h.Size = tar.TypeFifo, 0
		case m.binary:
			h.Typeflag, h.Size = tar.TypeChar, 0
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(m.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func gz(t *testing.T, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func makeZip(t *testing.T, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate}
		body := m.body
		switch {
		case m.dir:
			h.SetMode(fs.ModeDir | 0o755)
		case m.link != "":
			h.SetMode(fs.ModeSymlink | 0o777)
			body = m.link
		default:
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		if !m.dir {
			_, err = w.Write([]byte(body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func check(raw []byte, lim skillpkg.Limits) (skillpkg.Summary, error) {
	return skillpkg.Check(bytes.NewReader(raw), int64(len(raw)), lim)
}

// refusedFor asserts that the archive is refused with a reason mentioning want.
func refusedFor(t *testing.T, raw []byte, lim skillpkg.Limits, want string) {
	t.Helper()
	_, err := check(raw, lim)
	require.Error(t, err)
	var pe *skillpkg.Error
	require.ErrorAs(t, err, &pe)
	require.Contains(t, err.Error(), want)
}

var lim = skillpkg.Limits{MaxEntries: 10, MaxBytes: 1000}

func TestCheckAcceptsEveryFormat(t *testing.T) {
	t.Parallel()
	ms := []member{dir("skill/"), file("skill/SKILL.md", "# Skill\n"), file("./skill/scripts/run.sh", "echo hi\n"),
		link("skill/latest.md", "SKILL.md"), link("skill/scripts/up.md", "../SKILL.md")}
	cases := map[skillpkg.Format][]byte{
		skillpkg.FormatTar:   makeTar(t, ms...),
		skillpkg.FormatTarGz: gz(t, makeTar(t, ms...)),
		skillpkg.FormatZip:   makeZip(t, ms...),
	}
	for format, raw := range cases {
		sum, err := check(raw, lim)
		require.NoError(t, err, format)
		require.Equal(t, format, sum.Format)
		require.Equal(t, 5, sum.Entries, format)
		if format == skillpkg.FormatZip {
			require.Equal(t, int64(len("# Skill\n")+len("echo hi\n")+len("SKILL.md")+len("../SKILL.md")), sum.Bytes, "zip link targets are content")
		} else {
			require.Equal(t, int64(len("# Skill\n")+len("echo hi\n")), sum.Bytes)
		}
	}
	// Empty archives are fine; a root entry "./" does not count as a file.
	for _, raw := range [][]byte{makeTar(t), makeZip(t), makeTar(t, dir("./"))} {
		_, err := check(raw, lim)
		require.NoError(t, err)
	}
}

func TestCheckRefusesEscapingPaths(t *testing.T) {
	t.Parallel()
	names := map[string]string{
		"../etc/passwd":                 "'..' component",
		"skill/../../etc/passwd":        "'..' component",
		"a/..":                          "'..' component",
		"/etc/passwd":                   "absolute path",
		"C:/windows/system32":           "drive letter",
		"skill\\..\\evil":               "backslash",
		"nul\x00byte":                   "NUL",
		"new\nline":                     "control character",
		"bad\xffutf8":                   "UTF-8",
		".":                             "archive root",
		strings.Repeat("a/", 600) + "f": "longer than",
	}
	for name, want := range names {
		refusedFor(t, makeZip(t, file(name, "x")), lim, want)
		if !strings.ContainsRune(name, 0) { // Go's tar writer refuses to write NUL
			refusedFor(t, makeTar(t, file(name, "x")), lim, want)
			refusedFor(t, gz(t, makeTar(t, file(name, "x"))), lim, want)
		}
	}
	// The entry is named in the error.
	_, err := check(makeTar(t, file("ok.md", "x"), file("../etc/passwd", "root")), lim)
	var pe *skillpkg.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "../etc/passwd", pe.Path)
}

func TestCheckRefusesEscapingLinks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ms   []member
		want string
	}{
		{[]member{link("evil", "../etc/passwd")}, "outside the archive"},
		{[]member{link("a/b/evil", "../../../x")}, "outside the archive"},
		{[]member{link("evil", "/etc/passwd")}, "absolute path"},
		{[]member{link("evil", "C:/x")}, "absolute path"},
		{[]member{link("evil", "..\\x")}, "backslash"},
		{[]member{link("self", "self")}, "itself"},
		// "d" is the root, so "d/../.." would really be outside even though
		// it looks one level deep: links through links are refused.
		{[]member{link("d", "."), link("x", "d/../..")}, "through another symbolic link"},
		// An entry under a link is written wherever the link points.
		{[]member{link("d", "."), link("d/e", "../x")}, "under the symbolic link"},
		{[]member{link("d", "sub"), dir("sub/"), file("d/f", "x")}, "under the symbolic link"},
	}
	for _, tc := range cases {
		refusedFor(t, makeTar(t, tc.ms...), lim, tc.want)
		refusedFor(t, makeZip(t, tc.ms...), lim, tc.want)
	}
}

func TestCheckRefusesSpecialEntries(t *testing.T) {
	t.Parallel()
	refusedFor(t, makeTar(t, file("a", "x"), member{name: "b", hard: "a"}), lim, "hard link")
	refusedFor(t, makeTar(t, member{name: "p", fifo: true}), lim, "not a regular file")
	refusedFor(t, makeTar(t, member{name: "tty", binary: true}), lim, "not a regular file")
	refusedFor(t, makeTar(t, file("a", "x"), file("./a", "y")), lim, "more than once")
	refusedFor(t, makeZip(t, file("a", "x"), file("a", "y")), lim, "more than once")
	// A directory listed twice is harmless.
	_, err := check(makeTar(t, dir("d/"), dir("d")), lim)
	require.NoError(t, err)
}

func TestCheckLimits(t *testing.T) {
	t.Parallel()
	ten := make([]member, 10)
	for i := range ten {
		ten[i] = file("f"+strconv.Itoa(i), "x")
	}
	_, err := check(makeTar(t, ten...), lim)
	require.NoError(t, err, "exactly MaxEntries")
	eleven := append(ten, file("f10", "x"))
	refusedFor(t, makeTar(t, eleven...), lim, "more than 10 entries")
	refusedFor(t, makeZip(t, eleven...), lim, "more than 10 entries")

	exact := file("big", strings.Repeat("x", 1000))
	_, err = check(makeZip(t, exact), lim)
	require.NoError(t, err, "exactly MaxBytes")
	over := []member{file("a", strings.Repeat("x", 600)), file("b", strings.Repeat("x", 401))}
	refusedFor(t, makeTar(t, over...), lim, "exceeds 1000 bytes")
	refusedFor(t, makeZip(t, over...), lim, "exceeds 1000 bytes")
	refusedFor(t, gz(t, makeTar(t, over...)), lim, "1000 bytes")

	// A gzip bomb: a small stream that inflates far beyond the bound.
	bomb := gz(t, makeTar(t, file("zeros", strings.Repeat("\x00", 10<<20))))
	require.Less(t, len(bomb), 64<<10)
	refusedFor(t, bomb, skillpkg.Limits{MaxEntries: 10, MaxBytes: 1 << 20}, "bytes uncompressed")
}

func TestCheckRefusesWhatIsNotAnArchive(t *testing.T) {
	t.Parallel()
	refusedFor(t, []byte("#!/bin/sh\necho not an archive\n"), lim, "not a zip, tar or gzipped tar")
	refusedFor(t, nil, lim, "not a zip, tar or gzipped tar")
	refusedFor(t, gz(t, []byte("plain text, not tar")), lim, "not a valid tar")
	z := makeZip(t, file("a", strings.Repeat("payload ", 50)))
	refusedFor(t, z[:len(z)-30], lim, "not a valid zip")
	// A corrupted deflate stream is caught while reading the content.
	bad := bytes.Clone(z)
	i := bytes.Index(bad, []byte("a")) + 1
	for j := i + 5; j < i+15 && j < len(bad); j++ {
		bad[j] ^= 0xff
	}
	_, err := check(bad, lim)
	require.Error(t, err)
	// An encrypted entry (flag bit 0) is refused before anything is read.
	enc := makeZip(t, file("secret", "x"))
	enc[6] |= 0x1 // local header flags
	cd := bytes.LastIndex(enc, []byte("PK\x01\x02"))
	enc[cd+8] |= 0x1 // central directory flags
	refusedFor(t, enc, lim, "encrypted")
}
