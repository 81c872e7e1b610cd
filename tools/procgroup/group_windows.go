package procgroup

import (
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows a group is a Job Object: Adopt puts the started process in a
// new job, and the processes it starts from then on join the job too.
// The job is made with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, so when qwen-ls
// exits, however it ends, Windows kills what is left in its jobs.
//
// A process is assigned to its job just after it starts: what it starts
// in the first instant, before the assignment, escapes the job. The
// shells qwen-ls starts take far longer than that to start anything.

var jobs struct {
	sync.Mutex
	byPid map[int]windows.Handle
}

// Prepare gives cmd a console process group of its own (so that a
// Ctrl-C in qwen-ls's console does not reach it) and hides its window.
func Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP
	cmd.SysProcAttr.HideWindow = true
}

// Adopt puts process pid, started after Prepare, in a new job that then
// names its group.
func Adopt(pid int) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return err
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return err
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		_ = windows.CloseHandle(job)
		return err
	}
	jobs.Lock()
	defer jobs.Unlock()
	if jobs.byPid == nil {
		jobs.byPid = map[int]windows.Handle{}
	}
	if old, ok := jobs.byPid[pid]; ok {
		// A job of an earlier process with this pid was never released.
		_ = windows.CloseHandle(old)
	}
	jobs.byPid[pid] = job
	return nil
}

// jobOf is the job of group id, 0 when it has none.
func jobOf(id int) windows.Handle {
	jobs.Lock()
	defer jobs.Unlock()
	return jobs.byPid[id]
}

// Release closes the job of a group that has ended; a process still in it
// is killed.
func Release(id int) {
	jobs.Lock()
	job, ok := jobs.byPid[id]
	delete(jobs.byPid, id)
	jobs.Unlock()
	if ok {
		_ = windows.CloseHandle(job)
	}
}

// Terminate stops every process of the group id at once (Windows has no
// SIGTERM to send first) and releases its job. A process that has no job
// is terminated alone.
func Terminate(id int) {
	if id <= 0 {
		return
	}
	if job := jobOf(id); job != 0 {
		_ = windows.TerminateJobObject(job, 1)
		waitGone(id, KillGrace)
		Release(id)
		return
	}
	if p, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(id)); err == nil {
		_ = windows.TerminateProcess(p, 1)
		_ = windows.CloseHandle(p)
	}
}

func terminateAll(ids []int) {
	for _, id := range ids {
		Terminate(id)
	}
}

// Alive reports whether the group has a running process.
func Alive(id int) bool {
	if members, ok := Members(id); ok {
		return len(members) > 0
	}
	return processRunning(id)
}

// processRunning reports whether process pid is running.
func processRunning(pid int) bool {
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(p)
	var code uint32
	return windows.GetExitCodeProcess(p, &code) == nil && code == stillActive
}

// stillActive is the exit code of a process that has not exited
// (STILL_ACTIVE).
const stillActive = 259

// basicProcessIDList is JOBOBJECT_BASIC_PROCESS_ID_LIST with room for
// the first 1024 processes.
type basicProcessIDList struct {
	Assigned, Listed uint32
	IDs              [1024]uintptr
}

// Members lists the running processes of the group id's job. ok is false
// when the group has no job.
func Members(id int) (pids []int, ok bool) {
	job := jobOf(id)
	if job == 0 {
		return nil, false
	}
	var list basicProcessIDList
	if err := windows.QueryInformationJobObject(job, windows.JobObjectBasicProcessIdList,
		uintptr(unsafe.Pointer(&list)), uint32(unsafe.Sizeof(list)), nil); err != nil && err != windows.ERROR_MORE_DATA {
		return nil, false
	}
	for _, p := range list.IDs[:min(int(list.Listed), len(list.IDs))] {
		pids = append(pids, int(p))
	}
	return pids, true
}

// WaitExit returns when process pid has exited; the process handle stays
// the owner's to wait on.
func WaitExit(pid int) {
	p, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return
	}
	defer windows.CloseHandle(p)
	_, _ = windows.WaitForSingleObject(p, windows.INFINITE)
}

// SignalName names a signal; Windows processes are not killed by signals,
// so this serves only the text of statuses shared with Unix.
func SignalName(sig syscall.Signal) string { return sig.String() }
