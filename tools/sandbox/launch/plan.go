package launch

// Plan is everything the first stage does, worked out by the server: the
// supervisor only opens, mounts and calls what it lists.
type Plan struct {
	// Mounts: make the mount namespace private, then the binds, then
	// (Proc) a fresh /proc for the command's PID namespace.
	Mounts bool
	Binds  []Bind
	Proc   bool
	// ClearAmbient drops the capabilities given to make the mounts (in a
	// user namespace). DropBounding empties the bounding set, so that a
	// command run as root holds no capability. Undumpable keeps the
	// command out of the supervisor's memory.
	ClearAmbient, DropBounding, Undumpable bool
	// Landlock is the ruleset the thread that starts the command is
	// confined by (nil: none). Optional: a failure leaves the command
	// unconfined instead of failing (a command the person approved).
	Landlock *Ruleset
	Optional bool
	// Filter is the system call filter (empty: none); Listener makes it
	// notify the guard of the calls it marks. Devices are the devices the
	// command may write, whose opens this stage answers itself.
	Filter   []Instruction
	Listener bool
	Devices  []string
	// Path and Args are the program and its argument vector; Unset and
	// Set change the environment it gets (Set holds NAME=VALUE), which is
	// Env when set (a warm supervisor's own environment is not the
	// command's), else the supervisor's. Dir is the folder it starts in
	// ("": the supervisor's).
	Path  string
	Args  []string
	Env   []string
	Dir   string
	Unset []string
	Set   []string
	// StatusFD is where the command's status is reported (0: nowhere;
	// the supervisor then exits as the command does). CloseOnExec are
	// descriptors the command must not inherit.
	StatusFD    int
	CloseOnExec []int
	// ProbeOnly: apply everything, start nothing, exit 0.
	ProbeOnly bool
}

// Bind is a bind mount of a path onto itself, read-only or not.
type Bind struct {
	Path     string
	ReadOnly bool
}

// Ruleset is a Landlock ruleset: the rights it handles, and the rights
// each rule grants below a path (narrowed to the file rights where the
// path is not a folder; a path that does not exist is left out).
type Ruleset struct {
	HandledFS, HandledNet, Scoped uint64
	Rules                         []Rule
}

// Rule grants Access below Path.
type Rule struct {
	Path   string
	Access uint64
}

// Instruction is one classic BPF instruction (struct sock_filter).
type Instruction struct {
	Op     uint16
	Jt, Jf uint8
	K      uint32
}

// The plan's text: one record per line, a key, a space and the value in
// hexadecimal, so that any path (a newline in a name included) passes
// through an environment variable unchanged.

const hexDigits = "0123456789abcdef"

func hexEncode(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		b = append(b, hexDigits[s[i]>>4], hexDigits[s[i]&15])
	}
	return b
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func hexDecode(s string) (string, bool) {
	if len(s)%2 != 0 {
		return "", false
	}
	b := make([]byte, len(s)/2)
	for i := range b {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return "", false
		}
		b[i] = hi<<4 | lo
	}
	return string(b), true
}

func utoa(b []byte, v uint64) []byte {
	if v == 0 {
		return append(b, '0')
	}
	var tmp [20]byte
	i := len(tmp)
	for v > 0 {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, tmp[i:]...)
}

func atou(s string) (uint64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n := v*10 + uint64(c-'0')
		if n < v {
			return 0, false
		}
		v = n
	}
	return v, true
}

// Encode is the plan as the environment variable's value.
func (p Plan) Encode() string {
	var b []byte
	str := func(k, v string) {
		b = append(b, k...)
		b = append(b, ' ')
		b = hexEncode(b, v)
		b = append(b, '\n')
	}
	num := func(k string, v uint64) {
		b = append(b, k...)
		b = append(b, ' ')
		b = utoa(b, v)
		b = append(b, '\n')
	}
	flag := func(k string, v bool) {
		if v {
			num(k, 1)
		}
	}
	flag("mounts", p.Mounts)
	for _, bd := range p.Binds {
		if bd.ReadOnly {
			str("ro", bd.Path)
		} else {
			str("rw", bd.Path)
		}
	}
	flag("proc", p.Proc)
	flag("ambient", p.ClearAmbient)
	flag("bounding", p.DropBounding)
	flag("undumpable", p.Undumpable)
	if r := p.Landlock; r != nil {
		num("fs", r.HandledFS)
		num("net", r.HandledNet)
		num("scoped", r.Scoped)
		for _, rule := range r.Rules {
			num("access", rule.Access)
			str("rule", rule.Path)
		}
	}
	flag("optional", p.Optional)
	for _, in := range p.Filter {
		num("bpf", uint64(in.Op)|uint64(in.Jt)<<16|uint64(in.Jf)<<24|uint64(in.K)<<32)
	}
	flag("listener", p.Listener)
	for _, d := range p.Devices {
		str("device", d)
	}
	str("path", p.Path)
	for _, a := range p.Args {
		str("arg", a)
	}
	if p.Env != nil {
		num("env", 1)
		for _, e := range p.Env {
			str("envvar", e)
		}
	}
	if p.Dir != "" {
		str("dir", p.Dir)
	}
	for _, u := range p.Unset {
		str("unset", u)
	}
	for _, s := range p.Set {
		str("set", s)
	}
	num("status", uint64(p.StatusFD))
	for _, fd := range p.CloseOnExec {
		num("cloexec", uint64(fd))
	}
	flag("probe", p.ProbeOnly)
	return string(b)
}

// Decode reads a plan Encode wrote; ok is false for anything else.
func Decode(s string) (p Plan, ok bool) {
	var access uint64
	for len(s) > 0 {
		line := s
		if i := indexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		sp := indexByte(line, ' ')
		if sp < 0 {
			return p, false
		}
		k, v := line[:sp], line[sp+1:]
		var n uint64
		var text string
		var good bool
		switch k {
		case "ro", "rw", "rule", "path", "arg", "unset", "set", "device", "envvar", "dir":
			text, good = hexDecode(v)
		default:
			n, good = atou(v)
		}
		if !good {
			return p, false
		}
		switch k {
		case "mounts":
			p.Mounts = n == 1
		case "ro", "rw":
			p.Binds = append(p.Binds, Bind{Path: text, ReadOnly: k == "ro"})
		case "proc":
			p.Proc = n == 1
		case "ambient":
			p.ClearAmbient = n == 1
		case "bounding":
			p.DropBounding = n == 1
		case "undumpable":
			p.Undumpable = n == 1
		case "fs", "net", "scoped":
			if p.Landlock == nil {
				p.Landlock = &Ruleset{}
			}
			switch k {
			case "fs":
				p.Landlock.HandledFS = n
			case "net":
				p.Landlock.HandledNet = n
			default:
				p.Landlock.Scoped = n
			}
		case "access":
			access = n
		case "rule":
			if p.Landlock == nil {
				return p, false
			}
			p.Landlock.Rules = append(p.Landlock.Rules, Rule{Path: text, Access: access})
		case "optional":
			p.Optional = n == 1
		case "bpf":
			p.Filter = append(p.Filter, Instruction{Op: uint16(n), Jt: uint8(n >> 16), Jf: uint8(n >> 24), K: uint32(n >> 32)})
		case "listener":
			p.Listener = n == 1
		case "device":
			p.Devices = append(p.Devices, text)
		case "path":
			p.Path = text
		case "arg":
			p.Args = append(p.Args, text)
		case "env":
			p.Env = []string{}
		case "envvar":
			if p.Env == nil {
				return p, false
			}
			p.Env = append(p.Env, text)
		case "dir":
			p.Dir = text
		case "unset":
			p.Unset = append(p.Unset, text)
		case "set":
			p.Set = append(p.Set, text)
		case "status":
			p.StatusFD = int(n)
		case "cloexec":
			p.CloseOnExec = append(p.CloseOnExec, int(n))
		case "probe":
			p.ProbeOnly = n == 1
		default:
			return p, false
		}
	}
	return p, p.Path != "" || p.ProbeOnly
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
