// Command vsixcheck checks the platform-specific .vsix files that
// scripts/package.sh builds: each holds exactly one qwen-ls, at
// extension/bin/TARGET/qwen-ls (qwen-ls.exe for win32), and that binary's
// own header says the operating system and architecture of the target the
// .vsix is built for (its file name and the TargetPlatform of its
// manifest). The header is read with debug/elf, debug/macho and debug/pe,
// never guessed from a name.
//
//	go run ./editors/vscode/scripts/vsixcheck [-all] FILE.vsix...
//
// -all also requires a .vsix for each of the six targets. It prints one
// line per file and "vsix: N passed, N failed" last, and exits 1 on any
// failure.
package main

import (
	"archive/zip"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// targets maps each VS Code target to the GOOS and GOARCH of its binary.
var targets = map[string][2]string{
	"linux-x64":    {"linux", "amd64"},
	"linux-arm64":  {"linux", "arm64"},
	"darwin-x64":   {"darwin", "amd64"},
	"darwin-arm64": {"darwin", "arm64"},
	"win32-x64":    {"windows", "amd64"},
	"win32-arm64":  {"windows", "arm64"},
}

// Binary is what a header says about an executable.
type Binary struct {
	Format string // ELF, Mach-O or PE
	GOOS   string // linux, darwin or windows
	GOARCH string // amd64 or arm64
	// Interp is the ELF program interpreter (the dynamic loader); empty for
	// a static binary.
	Interp string
}

// Identify reads an executable's header: its format, operating system and
// architecture. Formats, systems and machines other than the six targets'
// are errors.
func Identify(r io.ReaderAt) (Binary, error) {
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil {
		return Binary{}, fmt.Errorf("reading the header: %w", err)
	}
	switch {
	case bytes.Equal(magic[:], []byte(elf.ELFMAG)):
		f, err := elf.NewFile(r)
		if err != nil {
			return Binary{}, fmt.Errorf("ELF: %w", err)
		}
		b := Binary{Format: "ELF"}
		// Go and gcc write ELFOSABI_NONE (System V) for Linux; other
		// systems (FreeBSD, ...) name themselves.
		if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
			return b, fmt.Errorf("ELF for %v, not Linux", f.OSABI)
		}
		if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
			return b, fmt.Errorf("ELF %v, not an executable", f.Type)
		}
		b.GOOS = "linux"
		switch f.Machine {
		case elf.EM_X86_64:
			b.GOARCH = "amd64"
		case elf.EM_AARCH64:
			b.GOARCH = "arm64"
		default:
			return b, fmt.Errorf("ELF for machine %v", f.Machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				data, _ := io.ReadAll(p.Open())
				b.Interp = strings.TrimRight(string(data), "\x00")
				if b.Interp == "" {
					b.Interp = "(unreadable)"
				}
			}
		}
		return b, nil
	case isMachO(magic):
		f, err := macho.NewFile(r)
		if err != nil {
			return Binary{}, fmt.Errorf("Mach-O: %w", err)
		}
		b := Binary{Format: "Mach-O", GOOS: "darwin"}
		if f.Type != macho.TypeExec {
			return b, fmt.Errorf("Mach-O %v, not an executable", f.Type)
		}
		switch f.Cpu {
		case macho.CpuAmd64:
			b.GOARCH = "amd64"
		case macho.CpuArm64:
			b.GOARCH = "arm64"
		default:
			return b, fmt.Errorf("Mach-O for CPU %v", f.Cpu)
		}
		return b, nil
	case magic[0] == 'M' && magic[1] == 'Z':
		f, err := pe.NewFile(r)
		if err != nil {
			return Binary{}, fmt.Errorf("PE: %w", err)
		}
		b := Binary{Format: "PE", GOOS: "windows"}
		if f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE == 0 || f.Characteristics&pe.IMAGE_FILE_DLL != 0 {
			return b, errors.New("PE image is not an executable program")
		}
		switch f.Machine {
		case pe.IMAGE_FILE_MACHINE_AMD64:
			b.GOARCH = "amd64"
		case pe.IMAGE_FILE_MACHINE_ARM64:
			b.GOARCH = "arm64"
		default:
			return b, fmt.Errorf("PE for machine %#x", f.Machine)
		}
		return b, nil
	}
	return Binary{}, fmt.Errorf("not an executable this checker knows (header % x)", magic)
}

func isMachO(m [4]byte) bool {
	for _, want := range []uint32{macho.Magic32, macho.Magic64} {
		le := [4]byte{byte(want), byte(want >> 8), byte(want >> 16), byte(want >> 24)}
		be := [4]byte{le[3], le[2], le[1], le[0]}
		if m == le || m == be {
			return true
		}
	}
	return false
}

var nameRE = regexp.MustCompile(`^qwen-ls-([a-z0-9]+-[a-z0-9]+)-[0-9][^/]*\.vsix$`)

// Result is the check of one .vsix.
type Result struct {
	Target string
	Entry  string // the binary's path inside the .vsix
	Binary Binary
	Size   int64
}

// Check opens one .vsix and checks its binary against its target.
func Check(file string) (Result, error) {
	var res Result
	m := nameRE.FindStringSubmatch(filepath.Base(file))
	if m == nil {
		return res, fmt.Errorf("the file name is not qwen-ls-TARGET-VERSION.vsix")
	}
	res.Target = m[1]
	want, ok := targets[res.Target]
	if !ok {
		return res, fmt.Errorf("%s is not one of the targets", res.Target)
	}
	z, err := zip.OpenReader(file)
	if err != nil {
		return res, err
	}
	defer z.Close()

	var manifest *zip.File
	var bins []*zip.File
	for _, f := range z.File {
		switch {
		case f.Name == "extension.vsixmanifest":
			manifest = f
		case strings.HasPrefix(f.Name, "extension/bin/") && !f.FileInfo().IsDir():
			bins = append(bins, f)
		}
	}
	if manifest == nil {
		return res, errors.New("no extension.vsixmanifest")
	}
	mt, err := manifestTarget(manifest)
	if err != nil {
		return res, err
	}
	if mt != res.Target {
		return res, fmt.Errorf("the manifest's TargetPlatform is %q, the file name says %s", mt, res.Target)
	}
	if len(bins) != 1 {
		var names []string
		for _, b := range bins {
			names = append(names, b.Name)
		}
		return res, fmt.Errorf("want exactly one file under extension/bin/, found %d %v", len(bins), names)
	}
	bin := bins[0]
	res.Entry = bin.Name
	exe := "qwen-ls"
	if want[0] == "windows" {
		exe = "qwen-ls.exe"
	}
	if wantName := path.Join("extension/bin", res.Target, exe); bin.Name != wantName {
		return res, fmt.Errorf("the binary is at %s, the extension looks for %s", bin.Name, wantName)
	}
	if want[0] != "windows" && bin.Mode()&0o111 == 0 {
		return res, fmt.Errorf("%s has no execute permission (mode %v)", bin.Name, bin.Mode())
	}
	rc, err := bin.Open()
	if err != nil {
		return res, err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return res, fmt.Errorf("reading %s: %w", bin.Name, err)
	}
	res.Size = int64(len(data))
	b, err := Identify(bytes.NewReader(data))
	res.Binary = b
	if err != nil {
		return res, fmt.Errorf("%s: %w", bin.Name, err)
	}
	if b.GOOS != want[0] || b.GOARCH != want[1] {
		return res, fmt.Errorf("%s: its %s header says %s/%s, the target %s needs %s/%s", bin.Name, b.Format, b.GOOS, b.GOARCH, res.Target, want[0], want[1])
	}
	if b.Interp != "" {
		return res, fmt.Errorf("%s is linked dynamically (interpreter %s); the .vsix needs a static binary", bin.Name, b.Interp)
	}
	// A Go binary also records what it was built for; it must agree.
	if info, err := buildinfo.Read(bytes.NewReader(data)); err == nil {
		var goos, goarch string
		for _, s := range info.Settings {
			switch s.Key {
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		if goos != want[0] || goarch != want[1] {
			return res, fmt.Errorf("%s says it was built for %s/%s, the target %s needs %s/%s", bin.Name, goos, goarch, res.Target, want[0], want[1])
		}
	}
	return res, nil
}

func manifestTarget(f *zip.File) (string, error) {
	rc, err := f.Open()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var doc struct {
		Identity struct {
			TargetPlatform string `xml:"TargetPlatform,attr"`
		} `xml:"Metadata>Identity"`
	}
	if err := xml.NewDecoder(rc).Decode(&doc); err != nil {
		return "", fmt.Errorf("extension.vsixmanifest: %w", err)
	}
	if doc.Identity.TargetPlatform == "" {
		return "", errors.New("extension.vsixmanifest names no TargetPlatform (packaged without --target)")
	}
	return doc.Identity.TargetPlatform, nil
}

// run checks files and writes the report; it returns the number of failures.
func run(w io.Writer, files []string, all bool) int {
	passed, failed := 0, 0
	seen := map[string]bool{}
	for _, f := range files {
		r, err := Check(f)
		if r.Target != "" {
			seen[r.Target] = true
		}
		if err != nil {
			failed++
			fmt.Fprintf(w, "FAIL %s: %v\n", filepath.Base(f), err)
			continue
		}
		passed++
		fmt.Fprintf(w, "ok   %s: %s is %s %s/%s, %.1f MB\n", filepath.Base(f), r.Entry, r.Binary.Format, r.Binary.GOOS, r.Binary.GOARCH, float64(r.Size)/1e6)
	}
	if all {
		var missing []string
		for t := range targets {
			if !seen[t] {
				missing = append(missing, t)
			}
		}
		sort.Strings(missing)
		for _, t := range missing {
			failed++
			fmt.Fprintf(w, "FAIL no .vsix for %s\n", t)
		}
	}
	fmt.Fprintf(w, "vsix: %d passed, %d failed\n", passed, failed)
	return failed
}

func main() {
	all := flag.Bool("all", false, "require one .vsix for each of the six targets")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: vsixcheck [-all] FILE.vsix...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if run(os.Stdout, flag.Args(), *all) > 0 {
		os.Exit(1)
	}
}
