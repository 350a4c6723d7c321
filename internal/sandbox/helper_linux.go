package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Main is the helper: args are what follows HelperArg. It sets up the
// policy's read-only binds, restricts itself with Landlock and becomes
// the program with exec (same pid, same process group), so Main returns
// only when that failed: with ExitSetupFailed, after a line starting with
// ErrorPrefix on stderr. A probe prints "ok" and returns 0.
func Main(args []string, stdout, stderr io.Writer) int {
	runtime.LockOSThread()
	p, argv, err := parseArgs(args)
	if err == nil {
		err = apply(p, argv, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s%v\n", ErrorPrefix, err)
		return ExitSetupFailed
	}
	return 0
}

func apply(p Policy, argv []string, stdout io.Writer) error {
	if len(p.ReadOnly) > 0 {
		if err := bindReadOnly(p.ReadOnly, p.CallerMountNS); err != nil {
			return err
		}
	}
	// No capability of the namespace outlives the setup: the program gets
	// what its uid gets, like any program it runs.
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	clearInheritable()
	if p.Probe {
		for _, path := range p.ReadOnly {
			var fs unix.Statfs_t
			if err := unix.Statfs(path, &fs); err != nil {
				return fmt.Errorf("statfs %s: %w", path, err)
			}
			if fs.Flags&unix.ST_RDONLY == 0 {
				return fmt.Errorf("%s is still writable after the read-only bind", path)
			}
		}
		_, err := fmt.Fprintln(stdout, "ok")
		return err
	}
	if err := dropTerminal(); err != nil {
		return err
	}
	if p.ABI > 0 || len(p.ReadOnly) > 0 {
		// A policy that confines nothing (a probe's, a test's) changes
		// nothing else either.
		if err := dropCapabilities(); err != nil {
			return err
		}
	}
	if err := closeInherited(); err != nil {
		return err
	}
	if p.ABI > 0 {
		if err := restrict(p.ABI, p.Writable); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	return fmt.Errorf("exec %s: %w", argv[0], err)
}

// bindReadOnly makes the mounts of the new namespace private (nothing
// propagates back to the caller's), then binds each path onto itself and
// remounts the bind read-only, keeping the flags the parent mount has: in
// a user namespace they are locked, and a remount that drops one fails.
func bindReadOnly(paths []string, caller string) error {
	// Started by hand or by a worker without Spec.Namespaces, the binds
	// would land in the caller's own mount namespace.
	if !ownNamespaces(caller) {
		return errors.New("the helper is not in a user and mount namespace of its own; it binds nothing in the caller's")
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private in the mount namespace: %w", err)
	}
	for _, path := range paths {
		if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", path, err)
		}
		var fs unix.Statfs_t
		if err := unix.Statfs(path, &fs); err != nil {
			return fmt.Errorf("statfs %s: %w", path, err)
		}
		flags := uintptr(unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY) | lockedFlags(fs.Flags)
		if err := unix.Mount("", path, "", flags, ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", path, err)
		}
	}
	return nil
}

// lockedFlags are the mount flags of statfs's f_flags that a remount must
// repeat.
func lockedFlags(st int64) uintptr {
	var f uintptr
	for _, m := range []struct {
		st int64
		ms uintptr
	}{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st&m.st != 0 {
			f |= m.ms
		}
	}
	if st&(unix.ST_NOATIME|unix.ST_RELATIME) == 0 {
		f |= unix.MS_STRICTATIME
	}
	return f
}

// The write-side rights: Landlock handles only these, so reading and
// executing stay unrestricted.
const (
	fileWrite = ll.AccessFSWriteFile | ll.AccessFSTruncate
	dirWrite  = fileWrite | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer
)

// writeRights is the write-side rights ABI abi knows: refer from 2,
// truncate from 3. Left out, a right is not handled (allowed everywhere,
// as before those kernels).
func writeRights(abi int) landlock.AccessFSSet {
	r := landlock.AccessFSSet(dirWrite)
	if abi < 2 {
		r &^= ll.AccessFSRefer
	}
	if abi < 3 {
		r &^= ll.AccessFSTruncate
	}
	return r
}

// restrict lets the process and everything it starts write only beneath
// writable, and (ABI 6) signal only processes of its own sandbox and
// connect to no abstract unix socket that a process outside listens on (a
// session bus, a multiplexer's server, which would act for it, unconfined).
func restrict(abi int, writable []string) error {
	handled := writeRights(abi)
	args := []any{handled}
	if abi >= 6 {
		args = append(args, landlock.ScopedSet(ll.ScopeSignal|ll.ScopeAbstractUnixSocket))
	}
	cfg, err := landlock.NewConfig(args...)
	if err != nil {
		return err
	}
	var rules []landlock.Rule
	for _, path := range writable {
		// The plan resolved the links on the way (Build): one met now was
		// made since, by the agent of an earlier call, say, and granting
		// where it points would let the agent out. The rule is made from
		// the file opened, not from its name again.
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if errors.Is(err, unix.ENOENT) {
			continue
		} else if errors.Is(err, unix.ELOOP) {
			return fmt.Errorf("%s: a symbolic link is on its way, made since the sandbox was planned; it is not granted", path)
		} else if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		// Device files are made by no agent, and one made by a root
		// agent outside a namespace would reach a disk or memory past
		// every rule.
		rights := handled &^ (ll.AccessFSMakeChar | ll.AccessFSMakeBlock)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			rights &= fileWrite
		}
		rules = append(rules, landlock.PathAccess(rights, "/proc/self/fd/"+strconv.Itoa(fd)))
	}
	return cfg.BestEffort().Restrict(rules...)
}

// ownNamespaces reports whether the process has a mount namespace of its
// own, not the caller's (runr's, which Wrap recorded). Inside a container
// runr may have a user namespace and mount rights already, so the uid map
// does not tell; nor can the helper, in its user namespace, read its
// parent's.
func ownNamespaces(caller string) bool {
	self := mountNamespace()
	return self != "" && caller != "" && self != caller
}

// clearInheritable empties the inheritable capability set, which the
// namespace setup filled to raise its ambient capability.
func clearInheritable() {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	_ = unix.Capset(&hdr, &data[0])
}

// dropTerminal detaches the process from its controlling terminal, runr's
// (the user's shell's): a process whose controlling terminal it is may push
// input into it with TIOCSTI, which the shell runs, unconfined, once runr is
// done. The helper leads its process group but not its session, so this
// signals nobody; the program is left with no controlling terminal, and
// cannot take one that a session still holds.
func dropTerminal() error {
	if sid, err := unix.Getsid(0); err == nil && sid == unix.Getpid() {
		return errors.New("the helper leads its own session; it is started by runr in runr's")
	}
	fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENXIO) {
		return nil // none
	} else if err != nil {
		return fmt.Errorf("open the controlling terminal to detach from it: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.TIOCNOTTY, 0); err != nil {
		return fmt.Errorf("detach from the controlling terminal: %w", err)
	}
	return nil
}

// dropCapabilities leaves the program no capability, now or after an exec
// of a root program: the bounding set is emptied, then the permitted,
// effective and inheritable sets. In its namespace a root agent would keep
// CAP_SYS_ADMIN there, and mount_setattr(2), which Landlock does not
// mediate, would clear the read-only flag of the .git bind; outside a
// namespace root's capabilities load kernel modules, push input into any
// terminal, and more. A process without CAP_SETPCAP (an ordinary user
// outside a namespace) holds no capability to drop, and no_new_privs, which
// Landlock sets, keeps it from gaining one through a program's file
// capabilities or set-user-ID bit.
func dropCapabilities() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop the capabilities: %w", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read the capabilities: %w", err)
	}
	if data[0].Effective|data[0].Permitted|data[1].Effective|data[1].Permitted != 0 {
		return errors.New("a capability is left after dropping them all")
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil && r == 1 && unix.Getuid() == 0 {
			// A root program run next would get it back.
			return fmt.Errorf("capability %d stays in the bounding set of a root agent", c)
		}
	}
	return nil
}

// closeInherited marks every descriptor but stdin, stdout and stderr
// close-on-exec, so that none reaches the program: runr's own are already,
// but one runr inherited without the flag (a descriptor the caller's shell
// left open, say fd 9 on a file outside the sandbox) would stay open across
// every exec, writable whatever Landlock says.
func closeInherited() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list the open descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The directory's own descriptor is gone by now (EBADF).
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("close descriptor %d for the program: %w", fd, err)
		}
	}
	return nil
}
