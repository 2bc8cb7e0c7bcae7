package procruntime

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The user a container runs as: the security context's run_as_user (or
// run_as_username, looked up on the host: there is no image /etc/passwd),
// run_as_group (else the user's primary group on the host, else 0) and
// supplemental_groups. Execs in the container run as the same user.
// Switching user needs root; without root only the runtime's own user is
// accepted. Nothing set: the runtime's user, as before.

// credential is a resolved user (shim.json and the exec wrapper).
type credential struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// maxSupplementalGroups bounds supplemental_groups (NGROUPS_MAX is 65536;
// a pod needs a handful).
const maxSupplementalGroups = 64

// containerCredential resolves config's user, nil for the runtime's own.
func containerCredential(config *runtimeapi.ContainerConfig) (*credential, error) {
	sc := config.GetLinux().GetSecurityContext()
	if sc.GetRunAsUser() == nil && sc.GetRunAsUsername() == "" {
		if sc.GetRunAsGroup() != nil {
			return nil, status.Error(codes.InvalidArgument, "config.linux.security_context.run_as_group: needs run_as_user or run_as_username")
		}
		if len(sc.GetSupplementalGroups()) == 0 {
			return nil, nil
		}
	}
	if len(sc.GetSupplementalGroups()) > maxSupplementalGroups {
		return nil, status.Errorf(codes.InvalidArgument, "config.linux.security_context.supplemental_groups: %d groups, limit is %d", len(sc.GetSupplementalGroups()), maxSupplementalGroups)
	}
	cred := &credential{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	var u *user.User
	switch {
	case sc.GetRunAsUser() != nil:
		v := sc.GetRunAsUser().GetValue()
		if v < 0 || v > 1<<31 {
			return nil, status.Errorf(codes.InvalidArgument, "config.linux.security_context.run_as_user %d: out of range", v)
		}
		cred.UID, cred.GID = uint32(v), 0
		u, _ = user.LookupId(strconv.FormatInt(v, 10))
	case sc.GetRunAsUsername() != "":
		var err error
		if u, err = user.Lookup(sc.GetRunAsUsername()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "config.linux.security_context.run_as_username %q: %v", sc.GetRunAsUsername(), err)
		}
		id, _ := strconv.ParseUint(u.Uid, 10, 32)
		cred.UID, cred.GID = uint32(id), 0
	}
	if u != nil {
		if g, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
			cred.GID = uint32(g)
		}
	}
	if g := sc.GetRunAsGroup(); g != nil {
		if g.GetValue() < 0 || g.GetValue() > 1<<31 {
			return nil, status.Errorf(codes.InvalidArgument, "config.linux.security_context.run_as_group %d: out of range", g.GetValue())
		}
		cred.GID = uint32(g.GetValue())
	}
	for _, g := range sc.GetSupplementalGroups() {
		if g < 0 || g > 1<<31 {
			return nil, status.Errorf(codes.InvalidArgument, "config.linux.security_context.supplemental_groups: %d out of range", g)
		}
		cred.Groups = append(cred.Groups, uint32(g))
	}
	if os.Geteuid() != 0 && (cred.UID != uint32(os.Getuid()) || cred.GID != uint32(os.Getgid()) || len(cred.Groups) > 0) {
		return nil, status.Errorf(codes.FailedPrecondition, "config.linux.security_context: running as uid %d gid %d needs the runtime to run as root", cred.UID, cred.GID)
	}
	return cred, nil
}

func (c *credential) sys() *syscall.Credential {
	if c == nil {
		return nil
	}
	return &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
}

// encode is the credential as the exec wrapper takes it: "uid:gid:g,g"
// ("" for none).
func (c *credential) encode() string {
	if c == nil {
		return ""
	}
	gs := make([]string, len(c.Groups))
	for i, g := range c.Groups {
		gs[i] = strconv.FormatUint(uint64(g), 10)
	}
	return fmt.Sprintf("%d:%d:%s", c.UID, c.GID, strings.Join(gs, ","))
}

// becomeCredential switches this (wrapper) process to the encoded user.
func becomeCredential(s string) error {
	if s == "" {
		return nil
	}
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return fmt.Errorf("credential %q: want uid:gid:groups", s)
	}
	uid, err1 := strconv.Atoi(parts[0])
	gid, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("credential %q: not numeric", s)
	}
	groups := []int{}
	for _, g := range strings.Split(parts[2], ",") {
		if g == "" {
			continue
		}
		n, err := strconv.Atoi(g)
		if err != nil {
			return fmt.Errorf("credential %q: group %q not numeric", s, g)
		}
		groups = append(groups, n)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid %d: %w", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid %d: %w", uid, err)
	}
	return nil
}
