//go:build linux

package launch

import (
	"os"
	"syscall"
)

// A warm supervisor is started by the server ahead of need, in the
// namespaces of a confined command, and waits with the Go runtime and
// every package of the binary initialised. Its command arrives as one
// message on the socket at descriptor WarmFD: the plan, the policy for the
// second stage, and the descriptors the command gets (standard input,
// output, error, and the status pipe). So a command the agent runs
// unasked does not wait for a process to start and initialise.

// EnvWarm, set to 1, makes the supervisor wait for its command on WarmFD.
const EnvWarm = "QWEN_LS_SANDBOX_WARM"

// WarmFD is the descriptor of the warm supervisor's socket.
const WarmFD = 3

// warmFDs are the descriptors a request carries, in order.
const warmFDs = 4

// ready is closed once a warm supervisor has started its command (or the
// request failed, and the supervisor is exiting).
var ready = make(chan struct{})

// Ready returns a channel closed when Started has its answer: at once for
// a supervisor that was not warm.
func Ready() <-chan struct{} { return ready }

// EncodeRequest is the message that hands a warm supervisor its command:
// the plan and the policy, each with its length before it.
func EncodeRequest(plan, policy string) []byte {
	var b []byte
	for _, s := range []string{plan, policy} {
		n := len(s)
		b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		b = append(b, s...)
	}
	return b
}

func decodeRequest(b []byte) (plan, policy string, ok bool) {
	var parts []string
	for range 2 {
		if len(b) < 4 {
			return "", "", false
		}
		n := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		b = b[4:]
		if n < 0 || n > len(b) {
			return "", "", false
		}
		parts = append(parts, string(b[:n]))
		b = b[n:]
	}
	return parts[0], parts[1], len(b) == 0
}

// policy is the second stage's policy, which a warm supervisor receives
// with its command.
var policy string

// Policy returns the policy that came with a warm supervisor's command
// ("" for one that was not warm: the policy is in its environment).
func Policy() string { return policy }

// waitWarm receives the request, puts the descriptors in place, and
// starts the command as a cold supervisor would.
func waitWarm() {
	defer close(ready)
	buf := make([]byte, 1<<20)
	oob := make([]byte, syscall.CmsgSpace(warmFDs*4))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = syscall.Recvmsg(WarmFD, buf, oob, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil || n == 0 {
		// The server went away before it had a command for us.
		os.Exit(0)
	}
	var fds []int
	if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if got, err := syscall.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	syscall.Close(WarmFD)
	text, pol, ok := decodeRequest(buf[:n])
	if !ok || len(fds) != warmFDs {
		fail("the server's request is not readable")
	}
	p, ok := Decode(text)
	if !ok {
		fail("the plan is not readable")
	}
	// Standard input, output and error become the command's; the status
	// pipe stays where it arrived.
	for i := range 3 {
		if err := syscall.Dup3(fds[i], i, 0); err != nil {
			fail("descriptor " + itoa(i) + ": " + err.Error())
		}
		syscall.Close(fds[i])
	}
	p.StatusFD = fds[3]
	if p.Dir != "" {
		if err := syscall.Chdir(p.Dir); err != nil {
			fail("cannot enter " + p.Dir + ": " + err.Error())
		}
	}
	policy = pol
	st, e := start(p)
	if e != "" {
		fail(e)
	}
	started = st
	go st.reap()
}
