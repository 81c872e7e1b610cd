package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/procgroup"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

// sandboxBench measures what the sandbox costs a command (issue 18,
// acceptance 5): the start-up of `bash -c true` started the way the shell
// tool starts it, directly and under the real qwen-ls supervisor in the
// read-only and protect policies; and the wall time of `git status` on a
// git repository of the Go distribution's sources, both ways.
//
// The supervisor is the release build, static and stripped, as the editors
// ship it (editors/vscode/scripts/package.sh): a default build links the
// C library dynamically, and its loader adds to every command's start.
func sandboxBench(b *bench) error {
	release := filepath.Join(b.tmp, "qwen-ls-release")
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", release, "./cmd/qwen-ls")
	build.Dir, build.Env = b.root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build (release): %v\n%s", err, out)
	}
	sup := sandbox.Probe()
	b.logf("%s", sup)
	dir := filepath.Join(b.tmp, "sandbox-work")
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), nil, 0o644); err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	layout := sandbox.Layout{Home: home, Roots: []string{dir}, TempDir: filepath.Join(b.tmp, "sandbox-tmp")}
	if err := os.MkdirAll(layout.TempDir, 0o700); err != nil {
		return err
	}
	protect := sandbox.Policy{Mode: sandbox.Protect, Class: sandbox.Class{Roots: []string{dir}},
		Writable: layout.Writable(), TempDir: layout.TempDir, Readable: layout.Readable()}
	readOnly := sandbox.Policy{Mode: sandbox.ReadOnly, Class: protect.Class, Readable: protect.Readable}
	plain, err := timeRuns(b, release, dir, nil, "true")
	if err != nil {
		return err
	}
	// Cold: the supervisor starts with the command. Warm: the server
	// started it ahead, as it does between an agent's commands; the runs
	// are spaced so that the next one is ready, as the model's turns
	// space commands.
	var ro, pr, roWarm, prWarm []float64
	for _, m := range []struct {
		pol  *sandbox.Policy
		out  *[]float64
		cold bool
	}{{&readOnly, &ro, true}, {&protect, &pr, true}, {&readOnly, &roWarm, false}, {&protect, &prWarm, false}} {
		if m.cold {
			os.Setenv(sandbox.EnvNoWarm, "1")
		} else {
			os.Unsetenv(sandbox.EnvNoWarm)
		}
		if *m.out, err = timeRuns(b, release, dir, m.pol, "true"); err != nil {
			return err
		}
	}
	os.Unsetenv(sandbox.EnvNoWarm)
	b.logf("bash -c true: %v ms direct; cold %v ms read-only, %v ms protect; warm %v ms read-only, %v ms protect",
		roundAll(plain), roundAll(ro), roundAll(pr), roundAll(roWarm), roundAll(prWarm))
	b.add(row{section: "sandbox", what: "`true` start, direct (the shell tool before the sandbox)", ours: median(plain), unit: "ms"})
	b.add(row{section: "sandbox", what: "start-up overhead: read-only, supervisor started ahead (" + sup.String() + ")", ours: median(roWarm) - median(plain), unit: "ms", target: "< 5 ms", limit: 5, limited: true})
	b.add(row{section: "sandbox", what: "start-up overhead: protect (binds, guard), supervisor started ahead", ours: median(prWarm) - median(plain), unit: "ms", target: "< 5 ms", limit: 5, limited: true})
	b.add(row{section: "sandbox", what: "start-up overhead: read-only, supervisor started with the command", ours: median(ro) - median(plain), unit: "ms"})
	b.add(row{section: "sandbox", what: "start-up overhead: protect, supervisor started with the command", ours: median(pr) - median(plain), unit: "ms"})

	repo := filepath.Join(b.tmp, "goroot-src")
	if err := goSourceRepo(b, repo); err != nil {
		return err
	}
	gitPlain, err := timeRuns(b, release, repo, nil, "git status")
	if err != nil {
		return err
	}
	gitRO, err := timeRuns(b, release, repo, &sandbox.Policy{Mode: sandbox.ReadOnly, Readable: protect.Readable}, "git status")
	if err != nil {
		return err
	}
	b.logf("git status on the Go sources: %v ms direct, %v ms read-only sandbox", roundAll(gitPlain), roundAll(gitRO))
	b.add(row{section: "sandbox", what: "`git status` on the Go sources, direct", ours: median(gitPlain), unit: "ms"})
	b.add(row{section: "sandbox", what: "`git status` on the Go sources, read-only sandbox", ours: median(gitRO), unit: "ms"})
	return nil
}

// timeRuns runs `bash -c script` in dir b.runs times (after one warm-up)
// in its own process group, under the supervisor bin with pol when pol is
// not nil, and returns the wall times from start (the wrap included) to
// the command's exit.
func timeRuns(b *bench, bin, dir string, pol *sandbox.Policy, script string) ([]float64, error) {
	var out []float64
	// The output goes to a file, as the shell tool's goes to pipes.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	for r := 0; r < b.runs+1; r++ {
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = null, null
		procgroup.Prepare(cmd)
		if pol != nil && os.Getenv(sandbox.EnvNoWarm) != "1" {
			// The time an agent's turn gives the server to start the
			// next supervisor ahead.
			time.Sleep(30 * time.Millisecond)
		}
		start := time.Now()
		if pol == nil {
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("%s: %w", script, err)
			}
		} else {
			p := *pol
			p.Linger = true
			s, err := sandbox.WrapWith(bin, cmd, p)
			if err != nil {
				return nil, err
			}
			if err := s.Start(); err != nil {
				return nil, err
			}
			if st := s.WaitMain(); st.Code != 0 {
				return nil, fmt.Errorf("%s in the sandbox: %+v", script, st)
			}
			d := time.Since(start)
			<-s.Exited()
			if r > 0 {
				out = append(out, millis(d))
			}
			continue
		}
		if r > 0 {
			out = append(out, millis(time.Since(start)))
		}
	}
	return out, nil
}

// goSourceRepo makes repo a git repository holding a copy of
// $(go env GOROOT)/src, committed once.
func goSourceRepo(b *bench, repo string) error {
	src := filepath.Join(goRoot(), "src")
	b.logf("copying %s into a git repository", src)
	if err := exec.Command("cp", "-r", src, repo).Run(); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "go sources"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v\n%s", args, err, out)
		}
	}
	return nil
}
