package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// runContext copies the files of ROOT that a container build would send as its
// context, as ROOT/.dockerignore selects them with the engine's own pattern
// matcher, into OUT. Building there shows that the context holds everything the
// Dockerfile's build needs.
func runContext(args []string) error {
	flags := flag.NewFlagSet("context", flag.ContinueOnError)
	root := flags.String("root", ".", "the build context's directory")
	out := flags.String("out", "", "copy the context into this empty `DIR`")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *out == "" || flags.NArg() != 0 {
		return errors.New("usage: deploycheck context -root DIR -out DIR")
	}
	f, err := os.Open(filepath.Join(*root, ".dockerignore"))
	if err != nil {
		return err
	}
	patterns, err := ignorefile.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf(".dockerignore: %w", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return fmt.Errorf(".dockerignore: %w", err)
	}
	files, bytes := 0, int64(0)
	err = filepath.WalkDir(*root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(*root, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		excluded, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Descend into an excluded directory only when an exception
			// pattern may take something inside it back.
			if excluded && !mayReinclude(pm, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if excluded || !d.Type().IsRegular() {
			return nil
		}
		n, err := copyFile(path, filepath.Join(*out, filepath.FromSlash(rel)))
		files++
		bytes += n
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("build context: %d files, %.1f MiB\n", files, float64(bytes)/(1<<20))
	return nil
}

// mayReinclude reports whether an exception pattern (!PATTERN) could match
// something below dir.
func mayReinclude(pm *patternmatcher.PatternMatcher, dir string) bool {
	if !pm.Exclusions() {
		return false
	}
	for _, p := range pm.Patterns() {
		if !p.Exclusion() {
			continue
		}
		s := p.String()
		if strings.HasPrefix(s, dir+"/") || strings.HasPrefix(s, "**") || strings.HasPrefix(dir, strings.TrimSuffix(s, "/")+"/") {
			return true
		}
	}
	return false
}

func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
