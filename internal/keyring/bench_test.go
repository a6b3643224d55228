package keyring

import (
	"path/filepath"
	"testing"
)

// A provider credential is a small JSON object; sealing and opening one must stay
// well under 20 µs, since every probe and run opens credentials.
var benchCredential = []byte(`{"api_key":"sk-proj-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}`)

func benchRing(b *testing.B) *Ring {
	b.Helper()
	path := filepath.Join(b.TempDir(), "keyring.json")
	if err := Generate(path); err != nil {
		b.Fatal(err)
	}
	r, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkSeal(b *testing.B) {
	r := benchRing(b)
	aad := []byte("prv_01jd5v6w1q3yb8j8y3tn9z2k7h")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Seal(benchCredential, aad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	r := benchRing(b)
	aad := []byte("prv_01jd5v6w1q3yb8j8y3tn9z2k7h")
	sealed, err := r.Seal(benchCredential, aad)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Open(sealed, aad); err != nil {
			b.Fatal(err)
		}
	}
}
