package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// envCase is one model setup that Qwen Code and qwen-ls are both run on:
// the same files under one home (the workspace is home/code/proj), the
// same environment and the same --model.
type envCase struct {
	name string
	// files maps a path under the case's folder (home/.qwen/.env,
	// home/code/proj/.env, ...) to its content; $URL stands for the
	// scripted model's base URL.
	files map[string]string
	// settings are added to ~/.qwen/settings.json's top level.
	settings map[string]any
	// env is added to both processes' environment.
	env map[string]string
	// model is passed as --model.
	model string
	// want is what Qwen Code 0.24.4 was seen to send: the path (which
	// names the base URL's source), the model and the key.
	want envSent
}

// envSent is what a client sent with the conversation's first request.
type envSent struct {
	Path, Model, Key string
}

// TestComparePeersDotEnv runs Qwen Code's CLI (`qwen -p`) and `qwen-ls
// exec` on the same model setups (modelProviders, the project's and the
// user's .env files, the environment, --model) against one scripted model
// on loopback, and fails when they send a different key, model or base
// URL. It runs only when QWEN_CLI names a Qwen Code 0.24 qwen executable,
// whose reading of .env files qwen-ls follows (.ci/bench-peers installs
// 0.24.4 and runs it). Each case also states what 0.24.4 sent, so a later
// Qwen Code that reads the files otherwise is named as the one that moved.
func TestComparePeersDotEnv(t *testing.T) {
	qwen := os.Getenv("QWEN_CLI")
	if qwen == "" {
		t.Skip("set QWEN_CLI to a Qwen Code 0.24 qwen executable to compare the .env files it reads with qwen-ls's (.ci/bench-peers installs 0.24.4 and does)")
	}
	out, err := exec.Command(qwen, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", qwen, err)
	}
	version := strings.TrimSpace(string(out))
	if !strings.HasPrefix(version, "0.24.") {
		t.Skipf("QWEN_CLI is Qwen Code %s; qwen-ls reads .env files as 0.24 does, so it is compared with 0.24 only (.ci/bench-peers installs 0.24.4 for it)", version)
	}
	t.Logf("Qwen Code %s", version)
	m := modeltest.Start(t)
	m.SetSide(func(modeltest.Request) (modeltest.Response, bool) {
		return modeltest.Response{Text: "done"}, true
	})

	const (
		projQwen = "home/code/proj/.qwen/.env"
		projEnv  = "home/code/proj/.env"
		codeEnv  = "home/code/.env"
		homeQwen = "home/.qwen/.env"
		homeEnv  = "home/.env"
	)
	vars := func(source string, names ...string) string {
		var b strings.Builder
		for _, n := range names {
			switch n {
			case "OPENAI_API_KEY":
				fmt.Fprintf(&b, "OPENAI_API_KEY=sk-%s\n", source)
			case "OPENAI_BASE_URL":
				fmt.Fprintf(&b, "OPENAI_BASE_URL=$URL/%s\n", source)
			case "OPENAI_MODEL":
				fmt.Fprintf(&b, "OPENAI_MODEL=model-%s\n", source)
			default:
				b.WriteString(n + "\n")
			}
		}
		return b.String()
	}
	all := []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"}
	providers := map[string]any{
		"model": map[string]any{"name": "alpha"},
		"modelProviders": map[string]any{"openai": []any{
			map[string]any{"id": "alpha", "envKey": "ALPHA_KEY", "baseUrl": "$URL/alpha"},
			map[string]any{"id": "beta", "envKey": "BETA_KEY", "baseUrl": "$URL/beta"},
		}},
	}
	cases := []envCase{
		{name: "the project's .qwen/.env hides its .env, not the user's files",
			files: map[string]string{
				projQwen: vars("proj-qwen", "OPENAI_MODEL"),
				projEnv:  vars("proj-env", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
				homeQwen: vars("home-qwen", all...),
				homeEnv:  vars("home-env", all...),
			},
			want: envSent{"/v1/home-qwen/chat/completions", "model-proj-qwen", "sk-home-qwen"}},
		{name: "a folder above the project, then the user's files",
			files: map[string]string{
				codeEnv:  vars("code", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
				homeQwen: vars("home-qwen", all...),
			},
			want: envSent{"/v1/code/chat/completions", "model-home-qwen", "sk-code"}},
		{name: "the project's .env stops the walk up",
			files: map[string]string{
				projEnv: vars("proj-env", "OPENAI_MODEL"),
				codeEnv: vars("code", all...),
				homeEnv: vars("home-env", all...),
			},
			want: envSent{"/v1/home-env/chat/completions", "model-proj-env", "sk-home-env"}},
		{name: "~/.qwen/.env before ~/.env",
			files: map[string]string{
				homeQwen: vars("home-qwen", "OPENAI_API_KEY"),
				homeEnv:  vars("home-env", all...),
			},
			want: envSent{"/v1/home-env/chat/completions", "model-home-env", "sk-home-qwen"}},
		{name: "an empty value is no value",
			files: map[string]string{
				projQwen: "OPENAI_API_KEY=\n" + vars("proj-qwen", "OPENAI_MODEL", "OPENAI_BASE_URL"),
				homeQwen: vars("home-qwen", all...),
			},
			want: envSent{"/v1/proj-qwen/chat/completions", "model-proj-qwen", "sk-home-qwen"}},
		{name: "the environment first",
			files: map[string]string{
				projQwen: vars("proj-qwen", all...),
				homeQwen: vars("home-qwen", all...),
			},
			env:  map[string]string{"OPENAI_API_KEY": "sk-environment"},
			want: envSent{"/v1/proj-qwen/chat/completions", "model-proj-qwen", "sk-environment"}},
		{name: "the settings' env last",
			files: map[string]string{
				homeEnv: vars("home-env", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
			},
			settings: map[string]any{"env": map[string]any{"OPENAI_API_KEY": "sk-settings-env", "OPENAI_MODEL": "model-settings-env"}},
			want:     envSent{"/v1/home-env/chat/completions", "model-settings-env", "sk-home-env"}},
		{name: "modelProviders: the entry's envKey from the nearest file",
			files: map[string]string{
				projEnv:  "ALPHA_KEY=sk-alpha-proj\n",
				homeQwen: "ALPHA_KEY=sk-alpha-home\nBETA_KEY=sk-beta-home\n",
			},
			settings: providers,
			want:     envSent{"/v1/alpha/chat/completions", "alpha", "sk-alpha-proj"}},
		{name: "modelProviders: --model picks another entry and its envKey",
			files: map[string]string{
				projEnv:  "ALPHA_KEY=sk-alpha-proj\n",
				homeQwen: "ALPHA_KEY=sk-alpha-home\nBETA_KEY=sk-beta-home\n",
			},
			settings: providers,
			model:    "beta",
			want:     envSent{"/v1/beta/chat/completions", "beta", "sk-beta-home"}},
		{name: "an untrusted folder's files are not read",
			files: map[string]string{
				projQwen: vars("proj-qwen", all...),
				projEnv:  vars("proj-env", all...),
				homeQwen: vars("home-qwen", all...),
			},
			settings: map[string]any{"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}, "folderTrust": map[string]any{"enabled": true}}},
			want:     envSent{"/v1/home-qwen/chat/completions", "model-home-qwen", "sk-home-qwen"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			theirs := runEnvPeer(t, m, c, fmt.Sprintf("envcheck-%d-qwen", i), func(ws, prompt string) []string {
				argv := []string{qwen, "-p", prompt}
				if c.model != "" {
					argv = append(argv, "--model", c.model)
				}
				return argv
			})
			ours := runEnvPeer(t, m, c, fmt.Sprintf("envcheck-%d-qwen-ls", i), func(ws, prompt string) []string {
				argv := []string{binPath, "exec", "--cwd", ws, "-p", prompt}
				if c.model != "" {
					argv = append(argv, "--model", c.model)
				}
				return argv
			})
			if ours != theirs {
				t.Errorf("Qwen Code %s sent %+v; qwen-ls sent %+v", version, theirs, ours)
			}
			if theirs != c.want {
				t.Errorf("Qwen Code %s sent %+v where 0.24.4 sent %+v: its reading of the files changed", version, theirs, c.want)
			}
		})
	}
}

// runEnvPeer lays out c's files in a new folder, runs argv there with the
// workspace as its working directory, and returns what the conversation's
// first request carried.
func runEnvPeer(t *testing.T, m *modeltest.Server, c envCase, prompt string, command func(ws, prompt string) []string) envSent {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(dir, "home")
	ws := filepath.Join(home, "code", "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// No usage statistics, telemetry or update check (Qwen Code would
	// reach for a network this machine does not have); the OpenAI auth
	// type; folder trust off, as Qwen Code has it by default (qwen-ls's
	// default is on).
	settings := map[string]any{
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "disableAutoUpdate": true, "disableUpdateNag": true},
		"security":  map[string]any{"auth": map[string]any{"selectedType": "openai"}, "folderTrust": map[string]any{"enabled": false}},
	}
	maps.Copy(settings, c.settings)
	data, _ := json.Marshal(settings)
	files := map[string]string{"home/.qwen/settings.json": string(data)}
	maps.Copy(files, c.files)
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "$URL", m.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
	defer cancel()
	argv := command(ws, prompt)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = ws
	cmd.Env = append(envPeerBase(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"QWEN_CODE_SYSTEM_SETTINGS_PATH="+filepath.Join(dir, "none.json"),
		"NO_COLOR=1",
	)
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	for _, r := range m.Requests() {
		for _, msg := range r.Messages {
			if msg.Role == "user" && strings.Contains(msg.Text(), prompt) {
				return envSent{Path: r.Path, Model: r.Model, Key: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
			}
		}
	}
	t.Fatalf("%s sent no request with the prompt (%v)\nstdout:\n%s\nstderr:\n%s", filepath.Base(argv[0]), runErr, peerTail(stdout.String(), 2000), peerTail(stderr.String(), 4000))
	return envSent{}
}

// envPeerBase is this process's environment without anything that
// configures a model or where the clients keep their state.
func envPeerBase() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "OPENAI_"), strings.HasPrefix(name, "QWEN_"), strings.HasPrefix(name, "DASHSCOPE_"),
			strings.HasPrefix(name, "ANTHROPIC_"), strings.HasPrefix(name, "GEMINI_"), strings.HasPrefix(name, "GOOGLE_"),
			strings.HasPrefix(name, "XDG_"), name == "HOME", name == "ALPHA_KEY", name == "BETA_KEY":
			continue
		}
		out = append(out, kv)
	}
	return out
}
