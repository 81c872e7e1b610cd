package main

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The fixtures are real executables: a static Go program built for this
// machine, and the compiler-made ones Go's debug packages test with, from
// the Go installation's source tree.
func goroot(t *testing.T, rel string) []byte {
	t.Helper()
	//lint:ignore SA1019 go test builds and runs a test binary in place, so its build-time GOROOT is the toolchain at hand
	data, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", rel))
	if err != nil {
		t.Fatalf("fixture from the Go installation: %v", err)
	}
	if strings.HasSuffix(rel, ".base64") {
		data, err = base64.StdEncoding.DecodeString(string(bytes.TrimSpace(data)))
		if err != nil {
			t.Fatal(err)
		}
	}
	return data
}

var (
	helloOnce sync.Once
	helloData []byte
	helloErr  error
)

// hello is a small static Go program for this machine, built the way
// scripts/package.sh builds qwen-ls (CGO_ENABLED=0, -s -w). (This test's
// own binary will not do: with -race it is linked with cgo.)
func hello(t *testing.T) []byte {
	t.Helper()
	helloOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vsixcheck-hello-")
		if err != nil {
			helloErr = err
			return
		}
		defer os.RemoveAll(dir)
		src := "package main\n\nfunc main() { println(\"qwen-ls\") }\n"
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
			helloErr = err
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644); err != nil {
			helloErr = err
			return
		}
		//lint:ignore SA1019 go test builds and runs a test binary in place, so its build-time GOROOT is the toolchain at hand
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-ldflags=-s -w", "-o", "hello")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			helloErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		helloData, helloErr = os.ReadFile(filepath.Join(dir, "hello"))
	})
	if helloErr != nil {
		t.Fatal(helloErr)
	}
	return helloData
}

// native is this machine's VS Code target, and another target with the
// same system but the other architecture.
func native(t *testing.T) (target, otherArch string) {
	t.Helper()
	for name, g := range targets {
		if g[0] == runtime.GOOS && g[1] == runtime.GOARCH {
			target = name
		}
	}
	if target == "" {
		t.Fatalf("%s/%s is none of the targets", runtime.GOOS, runtime.GOARCH)
	}
	for name, g := range targets {
		if g[0] == runtime.GOOS && g[1] != runtime.GOARCH {
			otherArch = name
		}
	}
	return target, otherArch
}

type entry struct {
	name string
	data []byte
	mode os.FileMode
}

// vsix writes a .vsix named for nameTarget whose manifest says
// manifestTarget, holding the entries.
func vsix(t *testing.T, nameTarget, manifestTarget string, entries ...entry) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), fmt.Sprintf("qwen-ls-%s-0.1.0.vsix", nameTarget))
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	w, _ := z.Create("extension.vsixmanifest")
	attr := ""
	if manifestTarget != "" {
		attr = fmt.Sprintf(` TargetPlatform=%q`, manifestTarget)
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?>
<PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011">
  <Metadata><Identity Language="en-US" Id="qwen-ls" Version="0.1.0" Publisher="qwen-ls"%s/></Metadata>
</PackageManifest>`, attr)
	w, _ = z.Create("extension/package.json")
	w.Write([]byte("{}"))
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Store} // stored: quick under -race
		h.SetMode(e.mode)
		w, err := z.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return file
}

func exeName(target string) string {
	if strings.HasPrefix(target, "win32-") {
		return "qwen-ls.exe"
	}
	return "qwen-ls"
}

func binEntry(target string, data []byte) entry {
	return entry{name: "extension/bin/" + target + "/" + exeName(target), data: data, mode: 0o755}
}

func TestIdentifyReadsTheHeader(t *testing.T) {
	cases := []struct {
		name, fixture              string
		data                       []byte
		format, goos, goarch, fail string
		dynamic                    bool
	}{
		{name: "a static Go program", data: hello(t), format: "ELF", goos: runtime.GOOS, goarch: runtime.GOARCH},
		{name: "gcc linux amd64", fixture: "debug/elf/testdata/gcc-amd64-linux-exec", format: "ELF", goos: "linux", goarch: "amd64", dynamic: true},
		{name: "gcc mingw amd64", fixture: "debug/pe/testdata/gcc-amd64-mingw-exec", format: "PE", goos: "windows", goarch: "amd64"},
		{name: "gcc darwin amd64", fixture: "debug/macho/testdata/gcc-amd64-darwin-exec.base64", format: "Mach-O", goos: "darwin", goarch: "amd64"},
		{name: "gcc freebsd 386", fixture: "debug/elf/testdata/gcc-386-freebsd-exec", fail: "not Linux"},
		{name: "gcc mingw 386", fixture: "debug/pe/testdata/gcc-386-mingw-exec", fail: "PE for machine 0x14c"},
		{name: "gcc darwin 386", fixture: "debug/macho/testdata/gcc-386-darwin-exec.base64", fail: "Mach-O for CPU"},
		{name: "an object file", fixture: "debug/macho/testdata/clang-amd64-darwin.obj.base64", fail: "not an executable"},
		{name: "a script", data: []byte("#!/bin/sh\necho qwen-ls\n"), fail: "not an executable this checker knows"},
	}
	if runtime.GOOS != "linux" {
		cases = cases[1:] // the first case expects this machine's program to be ELF
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.data
			if c.fixture != "" {
				data = goroot(t, c.fixture)
			}
			b, err := Identify(bytes.NewReader(data))
			if c.fail != "" {
				if err == nil || !strings.Contains(err.Error(), c.fail) {
					t.Fatalf("want an error with %q, got %+v, %v", c.fail, b, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Format != c.format || b.GOOS != c.goos || b.GOARCH != c.goarch || (b.Interp != "") != c.dynamic {
				t.Fatalf("got %+v, want %s %s/%s dynamic=%v", b, c.format, c.goos, c.goarch, c.dynamic)
			}
		})
	}
}

func TestCheckMatchesTheBinaryToTheTarget(t *testing.T) {
	me, otherArch := native(t)
	bin := hello(t)
	pe := goroot(t, "debug/pe/testdata/gcc-amd64-mingw-exec")
	mo := goroot(t, "debug/macho/testdata/gcc-amd64-darwin-exec.base64")
	dyn := goroot(t, "debug/elf/testdata/gcc-amd64-linux-exec")

	good := []string{
		vsix(t, me, me, binEntry(me, bin)),
		vsix(t, "win32-x64", "win32-x64", binEntry("win32-x64", pe)),
		vsix(t, "darwin-x64", "darwin-x64", binEntry("darwin-x64", mo)),
	}
	for _, f := range good {
		if r, err := Check(f); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		} else {
			t.Logf("ok %s: %+v", filepath.Base(f), r)
		}
	}

	bad := []struct {
		name, file, want string
	}{
		{"this machine's binary packed for Windows", vsix(t, "win32-x64", "win32-x64", binEntry("win32-x64", bin)),
			"the target win32-x64 needs windows/amd64"},
		{"this machine's binary packed for the other architecture", vsix(t, otherArch, otherArch, binEntry(otherArch, bin)),
			"the target " + otherArch + " needs"},
		{"a Windows amd64 binary packed for Windows arm64", vsix(t, "win32-arm64", "win32-arm64", binEntry("win32-arm64", pe)),
			"PE header says windows/amd64, the target win32-arm64 needs windows/arm64"},
		{"a macOS amd64 binary packed for Apple silicon", vsix(t, "darwin-arm64", "darwin-arm64", binEntry("darwin-arm64", mo)),
			"Mach-O header says darwin/amd64"},
		{"a dynamically linked binary", vsix(t, "linux-x64", "linux-x64", binEntry("linux-x64", dyn)),
			"linked dynamically"},
		{"a manifest for another target", vsix(t, me, otherArch, binEntry(me, bin)),
			"the manifest's TargetPlatform"},
		{"a .vsix packaged without --target", vsix(t, me, "", binEntry(me, bin)),
			"names no TargetPlatform"},
		{"two binaries", vsix(t, me, me, binEntry(me, bin), binEntry(otherArch, bin)),
			"want exactly one file under extension/bin/, found 2"},
		{"no binary", vsix(t, me, me),
			"found 0"},
		{"the binary where the extension does not look", vsix(t, me, me, entry{"extension/bin/qwen-ls", bin, 0o755}),
			"the extension looks for extension/bin/" + me},
		{"no execute permission", vsix(t, me, me, entry{"extension/bin/" + me + "/" + exeName(me), bin, 0o644}),
			"no execute permission"},
	}
	for _, c := range bad {
		_, err := Check(c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error with %q, got %v", c.name, c.want, err)
		}
	}
}

func TestRunCountsAndRequiresEveryTargetWithAll(t *testing.T) {
	me, _ := native(t)
	good := vsix(t, me, me, binEntry(me, hello(t)))
	bad := vsix(t, "win32-arm64", "win32-arm64", binEntry("win32-arm64", hello(t)))
	var out bytes.Buffer
	if n := run(&out, []string{good, bad}, false); n != 1 {
		t.Fatalf("failures %d, want 1:\n%s", n, out.String())
	}
	if !strings.HasSuffix(out.String(), "vsix: 1 passed, 1 failed\n") {
		t.Fatalf("the closing line:\n%s", out.String())
	}
	out.Reset()
	if n := run(&out, []string{good}, true); n != 5 {
		t.Fatalf("with -all and one target: failures %d, want 5:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "FAIL no .vsix for win32-arm64") {
		t.Fatalf("with -all, the missing targets are named:\n%s", out.String())
	}
	t.Log("\n" + out.String())
}
