package main

import (
	"debug/elf"
	"errors"
	"flag"
	"fmt"
)

// runStatic checks that an ELF binary is statically linked: no program
// interpreter and no shared library, so it runs on an empty base image.
func runStatic(args []string) error {
	flags := flag.NewFlagSet("static", flag.ContinueOnError)
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return errors.New("usage: deploycheck static FILE")
	}
	path := flags.Arg(0)
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var p problems
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			p.add("%s has a program interpreter (PT_INTERP): it is dynamically linked", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, lib := range libs {
		p.add("%s needs the shared library %s", path, lib)
	}
	if err := p.err(); err != nil {
		return err
	}
	fmt.Printf("%s: static %s binary\n", path, f.Machine)
	return nil
}
