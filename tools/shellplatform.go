package tools

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/transform"
)

// The shell a command line runs in, chosen as Qwen Code chooses it
// (docs/protocol.md, "Shell commands"): bash on Linux and macOS; on
// Windows Git Bash when qwen-ls was started from one (MSYSTEM says MINGW
// or MSYS, or TERM says msys or cygwin), else the shell %ComSpec% names:
// PowerShell when it is powershell.exe or pwsh.exe, cmd.exe otherwise.
const (
	shellBash       = "bash"
	shellCmd        = "cmd"
	shellPowerShell = "powershell"
)

// shellSpec is a chosen shell: its kind, the program, and the arguments
// that come before the command line.
type shellSpec struct {
	kind string
	path string
	args []string
}

// pickShell chooses the shell for the system goos, reading the
// environment through getenv. It takes the system as a value so that
// every system's choice is tested on every machine.
func pickShell(goos string, getenv func(string) string) shellSpec {
	if goos != "windows" {
		return shellSpec{kind: shellBash, path: "bash", args: []string{"-c"}}
	}
	msystem, term := getenv("MSYSTEM"), getenv("TERM")
	if strings.HasPrefix(msystem, "MINGW") || strings.HasPrefix(msystem, "MSYS") ||
		strings.Contains(term, "msys") || strings.Contains(term, "cygwin") {
		return shellSpec{kind: shellBash, path: "bash", args: []string{"-c"}}
	}
	comspec := strings.Trim(strings.TrimSpace(getenv("ComSpec")), `"`)
	if comspec == "" {
		comspec = "cmd.exe"
	}
	switch base := strings.ToLower(comspec[strings.LastIndexAny(comspec, `/\`)+1:]); base {
	case "powershell.exe", "pwsh.exe", "powershell", "pwsh":
		return shellSpec{kind: shellPowerShell, path: comspec, args: []string{"-NoProfile", "-Command"}}
	}
	// /d: no AutoRun commands from the registry; /s /c: run the rest of
	// the line, its outer quotes removed, exactly as written.
	return shellSpec{kind: shellCmd, path: comspec, args: []string{"/d", "/s", "/c"}}
}

// posixAnalysis reports whether commands for the system goos go through
// the POSIX read-only analysis. On Windows none does, whatever the shell:
// every command asks unless a rule naming the whole command, or a bare
// rule, allows it.
func posixAnalysis(goos string) bool { return goos != "windows" }

// argv is the program and arguments that run command in this shell.
func (sp shellSpec) argv(command string) []string {
	return append(append([]string{sp.path}, sp.args...), command)
}

// cmdLine is the Windows command line for command. cmd.exe does not read
// its arguments the way other programs do: with /s /c it takes everything
// after /c, drops the first and the last quote, and runs the rest as
// typed. So the line is built here, not escaped argument by argument.
// Other shells get "" (the usual escaping serves them).
func (sp shellSpec) cmdLine(command string) string {
	if sp.kind != shellCmd {
		return ""
	}
	return `"` + sp.path + `" ` + strings.Join(sp.args, " ") + ` "` + command + `"`
}

// command makes the exec.Cmd that runs command in this shell.
func (sp shellSpec) command(command string) (*exec.Cmd, error) {
	path := sp.path
	if !filepath.IsAbs(path) {
		p, err := exec.LookPath(path)
		if err != nil {
			return nil, err
		}
		path = p
	}
	if path == "" {
		return nil, errors.New("no shell")
	}
	sp.path = path
	argv := sp.argv(command)
	cmd := exec.Command(argv[0], argv[1:]...)
	setCmdLine(cmd, sp.cmdLine(command))
	return cmd, nil
}

// codePageEncoding is the decoder of a Windows code page, nil for UTF-8
// (65001) and for the code pages it does not know.
func codePageEncoding(cp uint32) encoding.Encoding {
	switch cp {
	case 437:
		return charmap.CodePage437
	case 850:
		return charmap.CodePage850
	case 852:
		return charmap.CodePage852
	case 855:
		return charmap.CodePage855
	case 858:
		return charmap.CodePage858
	case 860:
		return charmap.CodePage860
	case 862:
		return charmap.CodePage862
	case 863:
		return charmap.CodePage863
	case 865:
		return charmap.CodePage865
	case 866:
		return charmap.CodePage866
	case 874:
		return charmap.Windows874
	case 932:
		return japanese.ShiftJIS
	case 936:
		return simplifiedchinese.GBK
	case 949:
		return korean.EUCKR
	case 950:
		return traditionalchinese.Big5
	case 1250:
		return charmap.Windows1250
	case 1251:
		return charmap.Windows1251
	case 1252:
		return charmap.Windows1252
	case 1253:
		return charmap.Windows1253
	case 1254:
		return charmap.Windows1254
	case 1255:
		return charmap.Windows1255
	case 1256:
		return charmap.Windows1256
	case 1257:
		return charmap.Windows1257
	case 1258:
		return charmap.Windows1258
	}
	return nil
}

// outputDecoder turns a stream of command output into UTF-8 the way Qwen
// Code does on Windows: output that is valid UTF-8 stays as it is; once
// the stream shows bytes that are not, it is read in the console's code
// page from there on. A nil *outputDecoder passes bytes through (Linux,
// macOS, and a UTF-8 console).
type outputDecoder struct {
	enc     encoding.Encoding
	dec     transform.Transformer
	pending []byte
}

func newOutputDecoder(cp uint32) *outputDecoder {
	enc := codePageEncoding(cp)
	if enc == nil {
		return nil
	}
	return &outputDecoder{enc: enc}
}

// decode converts the next chunk; a character cut at the chunk's end
// waits for the next one (or for flush).
func (d *outputDecoder) decode(p []byte) []byte {
	if d == nil {
		return p
	}
	data := append(d.pending, p...)
	d.pending = nil
	if d.dec == nil {
		// Still UTF-8 so far: keep it, holding back a cut sequence.
		cut := len(data)
		for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
			if utf8.RuneStart(data[i]) {
				if !utf8.FullRune(data[i:]) {
					cut = i
				}
				break
			}
		}
		if utf8.Valid(data[:cut]) {
			d.pending = append(d.pending, data[cut:]...)
			return data[:cut]
		}
		d.dec = d.enc.NewDecoder()
	}
	out := make([]byte, 0, 2*len(data)+8)
	for len(data) > 0 {
		buf := make([]byte, 4*len(data)+16)
		nDst, nSrc, err := d.dec.Transform(buf, data, false)
		out = append(out, buf[:nDst]...)
		data = data[nSrc:]
		if err == transform.ErrShortSrc {
			d.pending = append(d.pending, data...)
			break
		}
		if err != nil && err != transform.ErrShortDst {
			out = append(out, data...)
			break
		}
	}
	return out
}

// flush returns what a cut character left at the stream's end.
func (d *outputDecoder) flush() []byte {
	if d == nil || len(d.pending) == 0 {
		return nil
	}
	rest := d.pending
	d.pending = nil
	if d.dec == nil {
		return rest
	}
	buf := make([]byte, 4*len(rest)+16)
	nDst, _, _ := d.dec.Transform(buf, rest, true)
	return buf[:nDst]
}
