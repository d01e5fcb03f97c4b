"""Which local process is at the other end of a loopback TCP connection.

The resource manager gives each client its own space, as the kernel gives
each open ``/dev/tpmrm0`` file. But ``tcti-swtpm`` opens a new TCP connection
for every command (and closes it after the response), so one client's
commands arrive on many connections; what stays the same is the process.
For a local peer, the kernel's ``sock_diag`` netlink interface names the
peer socket's inode in ~20 us, and the process holding that inode is found
among ``/proc/PID/fd`` - first among the processes seen before, then the
newest ones (a tool just started), so a full scan is rare.
"""

from __future__ import annotations

import os
import socket
import struct
from collections import OrderedDict

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
INET_DIAG_NOCOOKIE = 0xFFFFFFFF
LOOPBACK = ("127.", "::1", "::ffff:127.")


def peer_inode(conn: socket.socket) -> int | None:
    """Inode of the socket at the other end of ``conn`` (a local TCP peer), via sock_diag."""
    try:
        peer, local = conn.getpeername(), conn.getsockname()
        family = conn.family

        def addr(host: str) -> bytes:
            raw = socket.inet_pton(family, host)
            return raw + b"\0" * (16 - len(raw))

        sockid = (struct.pack(">HH", peer[1], local[1]) + addr(peer[0]) + addr(local[0])
                  + struct.pack("=III", 0, INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE))
        request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        header = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, 1, 1, 0)  # NLM_F_REQUEST
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(1.0)
            nl.sendto(header + request, (0, 0))
            data = nl.recv(65536)
        if len(data) < 16 + 72 or struct.unpack_from("=H", data, 4)[0] != SOCK_DIAG_BY_FAMILY:
            return None
        (inode,) = struct.unpack_from("=I", data, 16 + 68)  # inet_diag_msg.idiag_inode
        return inode or None
    except (OSError, ValueError, struct.error):
        return None


def _holds(pid: int, target: str) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
        except OSError:
            continue
    return False


class PeerFinder:
    """Remembers recent client processes so most look-ups touch one ``/proc/PID/fd``."""

    def __init__(self, remember: int = 64) -> None:
        self._recent: OrderedDict[int, None] = OrderedDict()
        self._remember = remember

    def pid_of(self, conn: socket.socket) -> int | None:
        """The local process holding the peer end of ``conn``, or None (remote or unknown)."""
        try:
            host = conn.getpeername()[0]
        except OSError:
            return None
        if conn.family not in (socket.AF_INET, socket.AF_INET6) or not str(host).startswith(LOOPBACK):
            return None
        inode = peer_inode(conn)
        if inode is None:
            return None
        target = f"socket:[{inode}]"
        tried = set()
        for pid in [os.getpid(), *reversed(self._recent)]:
            tried.add(pid)
            if _holds(pid, target):
                return self._note(pid)
        try:
            pids = sorted((int(p) for p in os.listdir("/proc") if p.isdigit()), reverse=True)
        except OSError:
            return None
        for pid in pids:
            if pid not in tried and _holds(pid, target):
                return self._note(pid)
        return None

    def _note(self, pid: int) -> int:
        self._recent.pop(pid, None)
        self._recent[pid] = None
        while len(self._recent) > self._remember:
            self._recent.popitem(last=False)
        return pid


def start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat): tells a reused PID apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()[19].decode()


def alive(pid: int, started: str | None = None) -> bool:
    """Is process ``pid`` running (and, given ``started``, still the same process, not a reused PID)?
    A zombie counts as gone: it has closed its sockets."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # not ours to judge
    fields = stat.rsplit(b")", 1)[1].split()
    if fields[0] in (b"Z", b"X"):
        return False
    return started is None or fields[19].decode() == started
