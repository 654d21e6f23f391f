#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# Where a hung guest's CPUs are: asks QEMU's human monitor (a unix
# socket) for every vCPU's registers a few times, a second apart, and
# prints each CPU's program counter, with the kernel symbol it falls in
# when a System.map is given.  run-vm.sh calls it just before it ends a
# guest that overran its time, whose kernel may be past reporting
# anything itself (two CPUs spinning with interrupts off: no watchdog,
# no alarm, no console).
#
#   vm-where.py MONITOR_SOCKET [SYSTEM_MAP]
import bisect
import re
import socket
import sys
import time


def load_map(path):
    addrs, names = [], []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[1] in "tTwW":
                    addrs.append(int(parts[0], 16))
                    names.append(parts[2])
    except OSError:
        return [], []
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def symbol(addrs, names, pc):
    i = bisect.bisect_right(addrs, pc) - 1
    if i < 0:
        return "?"
    return "%s+0x%x" % (names[i], pc - addrs[i])


def ask(sock, command):
    sock.sendall(command.encode() + b"\n")
    out = b""
    deadline = time.monotonic() + 10
    while not out.rstrip().endswith(b"(qemu)") and time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            break
        out += chunk
    # The monitor echoes what it is sent with terminal escapes, and ends
    # its lines with CR LF.
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out.decode(errors="replace"))
    return text.replace("\r", "")


def main():
    if len(sys.argv) < 2:
        print("usage: vm-where.py MONITOR_SOCKET [SYSTEM_MAP]", file=sys.stderr)
        return 2
    addrs, names = load_map(sys.argv[2]) if len(sys.argv) > 2 else ([], [])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect(sys.argv[1])
        ask(sock, "")  # the banner and the first prompt
        for sample in range(3):
            text = ask(sock, "info registers -a")
            cpus = re.split(r"\nCPU#(\d+)\n", "\n" + text)
            pcs = []
            for i in range(1, len(cpus) - 1, 2):
                m = re.search(r"\b(?:PC|RIP|EIP)=([0-9a-fA-F]+)", cpus[i + 1])
                if m:
                    pc = int(m.group(1), 16)
                    where = symbol(addrs, names, pc) if addrs else "no System.map"
                    pcs.append("cpu%s %016x %s" % (cpus[i], pc, where))
            print("vm-where: sample %d: %s" % (sample + 1, "; ".join(pcs) or "no registers"))
            time.sleep(1)
    except OSError as e:
        print("vm-where: monitor: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
